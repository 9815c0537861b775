-- walletgate storage schema, version 9: payouts held for approval.
--
-- A payout policy that asks for approval stores the payout as signed, and
-- each approval locks the row (SELECT ... FOR UPDATE) and updates it by
-- compare-and-set on version, so the last approval executes the payout
-- once. Rows are swept after expires_at.

CREATE TABLE payout_approvals (
    id             text        PRIMARY KEY,
    customer_id    text        NOT NULL,
    source_id      text        NOT NULL,
    destination_id text        NOT NULL,
    amount         bigint      NOT NULL,
    currency       text        NOT NULL,
    rule           text        NOT NULL,
    request_id     text        NOT NULL,
    requested_by   text        NOT NULL,
    required       integer     NOT NULL CHECK (required >= 1),
    approvers      text[]      NOT NULL,
    state          text        NOT NULL CHECK (state IN ('WAITING', 'APPROVED', 'REFUSED')),
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    version        bigint      NOT NULL CHECK (version >= 1)
);
CREATE INDEX payout_approvals_expires_idx ON payout_approvals (expires_at);
