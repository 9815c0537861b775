-- walletgate storage schema, version 11: tenants, enrolments and the time
-- of authentication.
--
-- A wallet and an external account belong to a tenant the host names (a
-- platform, in a host serving several), and a credential to its wallet's: an EMAIL_OTP address
-- and a WebAuthn credential id are unique within a tenant, not across
-- tenants, so no answer to one tenant depends on another's wallets. Rows
-- of earlier releases are of the empty tenant, where the rules hold as
-- they did.
--
-- A credential records how it was enrolled: the session that signed the
-- enrolment and its credential, the credential it answers to and the
-- assurance it carries until its security-change period ends
-- (enrolment_settles_at); a wallet records when its credentials last
-- changed. A session records when the ceremony that authenticated it took
-- place, which a refresh keeps; a row without one was authenticated when
-- it was created.

ALTER TABLE internal_accounts ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE external_accounts ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE internal_accounts ADD COLUMN security_changed_at timestamptz;
ALTER TABLE credentials ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE credentials ADD COLUMN enrolled_by_session text NOT NULL DEFAULT '';
ALTER TABLE credentials ADD COLUMN enrolled_by_credential text NOT NULL DEFAULT '';
ALTER TABLE credentials ADD COLUMN enrolment_origin text NOT NULL DEFAULT '';
ALTER TABLE credentials ADD COLUMN enrolment_assurance text NOT NULL DEFAULT '';
ALTER TABLE credentials ADD COLUMN enrolment_settles_at timestamptz;
ALTER TABLE sessions ADD COLUMN authenticated_at timestamptz;
CREATE UNIQUE INDEX credentials_webauthn_id_once_per_tenant ON credentials (tenant, webauthn_credential_id) WHERE type = 'PASSKEY';
DROP INDEX credentials_webauthn_id_once;
CREATE INDEX credentials_email_otp_tenant_email_idx ON credentials (tenant, email) WHERE type = 'EMAIL_OTP';
DROP INDEX credentials_email_otp_email_idx;
