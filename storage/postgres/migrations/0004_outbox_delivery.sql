-- walletgate storage schema, version 4: the delivery state of outbox events.
--
-- Relays lease due events with SELECT ... FOR UPDATE SKIP LOCKED and a
-- lease that ends at leased_until, so replicas never hold one event at the
-- same time; a failed delivery counts an attempt and sets the next one; an
-- event that failed for too long is parked until re-driven.

ALTER TABLE outbox_events
    ADD COLUMN attempts        integer     NOT NULL DEFAULT 0,
    ADD COLUMN next_attempt_at timestamptz,
    ADD COLUMN lease_owner     text,
    ADD COLUMN leased_until    timestamptz,
    ADD COLUMN last_error      text,
    ADD COLUMN parked_at       timestamptz;

DROP INDEX outbox_events_undelivered_idx;
-- Pending events: neither delivered nor parked. Leasing scans them in seq
-- order and checks each against the earlier pending events of its account.
CREATE INDEX outbox_events_pending_idx ON outbox_events (seq)
    WHERE delivered_at IS NULL AND parked_at IS NULL;
CREATE INDEX outbox_events_pending_account_idx ON outbox_events (account_id, seq)
    WHERE delivered_at IS NULL AND parked_at IS NULL;
CREATE INDEX outbox_events_parked_idx ON outbox_events (seq) WHERE parked_at IS NOT NULL;
