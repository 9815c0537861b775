-- walletgate storage schema, version 1.
--
-- Migrate runs this file with search_path set to the target schema, so the
-- names below are unqualified. Conventions:
--   * every record has a text primary key (its "<Type>:<uuid>" id);
--   * times are timestamptz; a NULL time is Go's zero time (not consumed,
--     not revoked, not delivered);
--   * opaque JSON and byte fields are bytea, kept byte for byte;
--   * seq columns record insertion order for the "in creation order" lists;
--   * no foreign keys: the contract lets a record name an id the store has
--     not seen (credentials of an account kept elsewhere, for instance).

CREATE TABLE external_accounts (
    id                  text        PRIMARY KEY,
    seq                 bigint      GENERATED ALWAYS AS IDENTITY,
    customer_id         text        NOT NULL,
    platform_account_id text        NOT NULL,
    status              text        NOT NULL,
    ownership_type      text        NOT NULL,
    currency            text        NOT NULL,
    account_type        text        NOT NULL,
    address             text        NOT NULL,
    network             text        NOT NULL,
    vasp_name           text        NOT NULL,
    info                bytea,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    version             bigint      NOT NULL CHECK (version >= 1)
);
CREATE INDEX external_accounts_customer_idx ON external_accounts (customer_id, seq);

-- One outstanding challenge per account: Put upserts on account_id.
CREATE TABLE ownership_challenges (
    id                text        PRIMARY KEY,
    account_id        text        NOT NULL,
    method            text        NOT NULL,
    message           text        NOT NULL,
    nonce             text        NOT NULL,
    verification_link text        NOT NULL,
    token             text        NOT NULL,
    issued_at         timestamptz NOT NULL,
    expires_at        timestamptz NOT NULL,
    CONSTRAINT ownership_challenges_one_per_account UNIQUE (account_id)
);
CREATE INDEX ownership_challenges_expires_idx ON ownership_challenges (expires_at);

CREATE TABLE internal_accounts (
    id          text        PRIMARY KEY,
    seq         bigint      GENERATED ALWAYS AS IDENTITY,
    customer_id text        NOT NULL,
    email       text        NOT NULL,
    phone       text        NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    version     bigint      NOT NULL CHECK (version >= 1)
);
CREATE INDEX internal_accounts_customer_idx ON internal_accounts (customer_id, seq);

-- Credentials of every type share one table; the columns of other types stay
-- NULL (OAuth, WebAuthn) or empty (email, phone).
CREATE TABLE credentials (
    id                        text        PRIMARY KEY,
    seq                       bigint      GENERATED ALWAYS AS IDENTITY,
    account_id                text        NOT NULL,
    type                      text        NOT NULL,
    nickname                  text        NOT NULL,
    email                     text        NOT NULL,
    phone                     text        NOT NULL,
    oauth_issuer              text,
    oauth_audience            text,
    oauth_subject             text,
    -- SHA-256 of the length-prefixed issuer, audience and subject: a fixed
    -- size key for the one-identity-per-account rule.
    oauth_identity_sha256     bytea,
    webauthn_credential_id    bytea,
    webauthn_public_key       bytea,
    webauthn_attestation_type text,
    webauthn_aaguid           bytea,
    webauthn_sign_count       bigint,
    webauthn_transports       text[],
    webauthn_user_present     boolean,
    webauthn_user_verified    boolean,
    webauthn_backup_eligible  boolean,
    webauthn_backup_state     boolean,
    webauthn_clone_warning    boolean,
    created_at                timestamptz NOT NULL,
    updated_at                timestamptz NOT NULL,
    version                   bigint      NOT NULL CHECK (version >= 1),
    CONSTRAINT credentials_oauth_complete CHECK (
        (oauth_issuer IS NULL) = (oauth_audience IS NULL) AND
        (oauth_issuer IS NULL) = (oauth_subject IS NULL) AND
        (oauth_issuer IS NULL) = (oauth_identity_sha256 IS NULL)),
    CONSTRAINT credentials_webauthn_complete CHECK (
        webauthn_credential_id IS NULL OR (
            octet_length(webauthn_credential_id) <= 1023 AND
            webauthn_sign_count BETWEEN 0 AND 4294967295 AND
            webauthn_user_present IS NOT NULL AND webauthn_user_verified IS NOT NULL AND
            webauthn_backup_eligible IS NOT NULL AND webauthn_backup_state IS NOT NULL AND
            webauthn_clone_warning IS NOT NULL))
);
CREATE INDEX credentials_account_idx ON credentials (account_id, seq);
CREATE UNIQUE INDEX credentials_one_email_otp_per_account ON credentials (account_id) WHERE type = 'EMAIL_OTP';
CREATE UNIQUE INDEX credentials_one_sms_otp_per_account ON credentials (account_id) WHERE type = 'SMS_OTP';
CREATE UNIQUE INDEX credentials_webauthn_id_once ON credentials (webauthn_credential_id) WHERE type = 'PASSKEY';
CREATE UNIQUE INDEX credentials_oauth_identity_once_per_account ON credentials (account_id, oauth_identity_sha256) WHERE type = 'OAUTH';
CREATE INDEX credentials_email_otp_email_idx ON credentials (email) WHERE type = 'EMAIL_OTP';

-- One live issuance per credential: Put upserts on credential_id.
CREATE TABLE otp_issuances (
    id            text        PRIMARY KEY,
    credential_id text        NOT NULL,
    account_id    text        NOT NULL,
    code          text        NOT NULL,
    target_key    bytea,
    issued_at     timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    attempts      integer     NOT NULL CHECK (attempts >= 0),
    consumed_at   timestamptz,
    CONSTRAINT otp_issuances_one_per_credential UNIQUE (credential_id)
);
CREATE INDEX otp_issuances_expires_idx ON otp_issuances (expires_at);

CREATE TABLE sessions (
    id            text        PRIMARY KEY,
    seq           bigint      GENERATED ALWAYS AS IDENTITY,
    account_id    text        NOT NULL,
    credential_id text        NOT NULL,
    public_key    bytea,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL,
    revoked_at    timestamptz
);
CREATE INDEX sessions_account_idx ON sessions (account_id, seq);
CREATE INDEX sessions_unrevoked_credential_idx ON sessions (credential_id) WHERE revoked_at IS NULL;
CREATE INDEX sessions_expires_idx ON sessions (expires_at);

CREATE TABLE pending_requests (
    id          text        PRIMARY KEY,
    kind        text        NOT NULL,
    account_id  text        NOT NULL,
    method      text        NOT NULL,
    path        text        NOT NULL,
    body_digest bytea,
    payload     bytea,
    signer_rule text        NOT NULL,
    signer_ref  text        NOT NULL,
    data        bytea,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    consumed_at timestamptz
);
CREATE INDEX pending_requests_expires_idx ON pending_requests (expires_at);

-- The outbox. seq is assigned under a transaction-level advisory lock held
-- until commit, so it increases in commit order.
CREATE TABLE outbox_events (
    id           text        PRIMARY KEY,
    seq          bigint      GENERATED ALWAYS AS IDENTITY,
    type         text        NOT NULL,
    account_id   text        NOT NULL,
    payload      bytea,
    created_at   timestamptz NOT NULL,
    delivered_at timestamptz,
    CONSTRAINT outbox_events_seq_key UNIQUE (seq)
);
CREATE INDEX outbox_events_undelivered_idx ON outbox_events (seq) WHERE delivered_at IS NULL;
CREATE INDEX outbox_events_account_idx ON outbox_events (account_id, seq);
CREATE INDEX outbox_events_delivered_idx ON outbox_events (delivered_at) WHERE delivered_at IS NOT NULL;

CREATE TABLE rate_limit_windows (
    key        text        PRIMARY KEY,
    window_end timestamptz NOT NULL,
    hits       integer     NOT NULL CHECK (hits >= 0)
);
CREATE INDEX rate_limit_windows_end_idx ON rate_limit_windows (window_end);
