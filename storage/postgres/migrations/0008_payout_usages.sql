-- walletgate storage schema, version 8: the payouts a payout policy counts.
--
-- Each row is one executed payout, valued in the policy's reference
-- currency. A policy holds the customer (a transaction-level advisory
-- lock), reads the customer's rows of a window and records the payout in
-- the payout's own transaction, so a payout rolled back leaves no row.
-- Rows are swept once no window can count them (expires_at).

CREATE TABLE payout_usages (
    id             text        PRIMARY KEY,
    seq            bigint      GENERATED ALWAYS AS IDENTITY,
    customer_id    text        NOT NULL,
    source_id      text        NOT NULL,
    destination_id text        NOT NULL,
    amount         bigint      NOT NULL CHECK (amount >= 0),
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL
);
CREATE INDEX payout_usages_customer_idx ON payout_usages (customer_id, created_at);
CREATE INDEX payout_usages_expires_idx ON payout_usages (expires_at);
