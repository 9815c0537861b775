-- walletgate storage schema, version 3: Idempotency-Key records.
--
-- One row per (scope, key): the first request made with an Idempotency-Key
-- reserves it (state IN_PROGRESS, with a random token naming the
-- reservation) and, once it completed, holds the response to replay (state
-- COMPLETE). The primary key is the guard: of concurrent first requests,
-- on any replica, exactly one inserts the row. A row whose expires_at has
-- passed is replaced by the next Begin and deleted by Sweep.

CREATE TABLE idempotency_keys (
    scope       text        NOT NULL,
    key         text        NOT NULL,
    token       text        NOT NULL,
    fingerprint bytea,
    state       text        NOT NULL CHECK (state IN ('IN_PROGRESS', 'COMPLETE')),
    status      integer     NOT NULL,
    header      bytea,
    body        bytea,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);
