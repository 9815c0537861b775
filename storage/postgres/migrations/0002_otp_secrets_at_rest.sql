-- walletgate storage schema, version 2: one-time code secrets at rest.
--
-- From this release walletauth no longer gives the store a one-time code or
-- a target private key. For each OTP issuance it stores
--   * in code: lowercase hex of an HMAC-SHA256 of the code under a host key
--     (walletauth Config.CodeMACKey), bound to the issuance and credential ids;
--   * in target_key: the HPKE target private key sealed with AES-256-GCM under
--     a host key (walletauth Config.Sealer), bound to the same ids; the sealed
--     bytes name the key that sealed them, so keys rotate.
-- The store keeps both opaque, byte for byte; the column types do not change.
--
-- Rows written by earlier releases hold the code and the target key in
-- plaintext. They must not survive, so they are deleted here. An issuance
-- lives five minutes (walletauth's default OTP TTL): the deletion only ends
-- the logins in progress, whose clients get 401 "no pending OTP for this
-- credential" and request a new code. During a rolling upgrade, replicas of
-- an earlier release keep writing plaintext rows until they are replaced, and
-- a code issued by a replica of one release fails to verify on the other
-- (401, or 500 INTERNAL_ERROR for a target key that does not open). Those
-- rows expire within the OTP TTL and Sweep deletes them then; a host that
-- does not sweep runs the DELETE below once more after the last replica of
-- an earlier release has stopped.

DELETE FROM otp_issuances;

COMMENT ON COLUMN otp_issuances.code IS
    'HMAC-SHA256 of the one-time code under a host key, bound to the issuance (hex); never the code';
COMMENT ON COLUMN otp_issuances.target_key IS
    'HPKE target private key sealed with AES-256-GCM under a host key, bound to the issuance; never in plaintext';
