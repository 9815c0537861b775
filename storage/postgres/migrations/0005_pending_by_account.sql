-- walletgate storage schema, version 5: live pending requests by account.
--
-- PendingRequests.CreateLimited counts the unconsumed, unexpired requests of
-- an account before it stores another one; this index keeps the count to
-- the account's live requests.

CREATE INDEX pending_requests_live_account_idx ON pending_requests (account_id, expires_at)
    WHERE consumed_at IS NULL;
