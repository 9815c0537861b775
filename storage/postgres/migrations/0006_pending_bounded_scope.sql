-- walletgate storage schema, version 6: bounded scopes of pending requests.
--
-- PendingRequests.CreateBounded keeps a request in a scope (a passkey's
-- login challenges) that holds at most a given number of requests,
-- deleting the scope's oldest when a new one is stored. bound_scope names
-- the scope; it is NULL for every other request, which alone counts
-- against its account in CreateLimited. The index finds a scope's
-- requests in their order of age: by created_at, then by id bytewise.

ALTER TABLE pending_requests ADD COLUMN bound_scope text;

CREATE INDEX pending_requests_bound_scope_idx ON pending_requests (bound_scope, created_at, id COLLATE "C")
    WHERE bound_scope IS NOT NULL;
