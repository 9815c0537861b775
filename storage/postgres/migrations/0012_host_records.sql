-- walletgate storage schema, version 12: a host's own records.
--
-- A host keeps opaque values under a kind and a key (storage.Records), in
-- the transactions of walletgate's operations. Create inserts with ON
-- CONFLICT DO NOTHING, so of concurrent creates of one kind and key one
-- commits; Lock is SELECT ... FOR UPDATE and Update a compare-and-set on
-- version. seq orders the records of a group by creation for List.
-- Records have no expiry: Sweep never deletes one.

CREATE TABLE host_records (
    kind       text        NOT NULL CHECK (kind <> '' AND octet_length(kind) <= 200),
    key        text        NOT NULL CHECK (octet_length(key) <= 200),
    group_name text        NOT NULL CHECK (octet_length(group_name) <= 200),
    seq        bigint      GENERATED ALWAYS AS IDENTITY,
    value      bytea       NOT NULL CHECK (octet_length(value) <= 1048576),
    version    bigint      NOT NULL CHECK (version >= 1),
    created_at timestamptz NOT NULL,
    PRIMARY KEY (kind, key)
);
CREATE INDEX host_records_group_idx ON host_records (kind, group_name, seq);
