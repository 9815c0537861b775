package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
)

const challengeColumns = `id, account_id, method, message, nonce, verification_link, token, issued_at, expires_at`

const (
	// challengePutSQL supersedes the account's challenge in one statement:
	// the row of the account is replaced in place, id included.
	challengePutSQL = `INSERT INTO {s}.ownership_challenges (` + challengeColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
	ON CONFLICT (account_id) DO UPDATE SET id = EXCLUDED.id, method = EXCLUDED.method,
	message = EXCLUDED.message, nonce = EXCLUDED.nonce, verification_link = EXCLUDED.verification_link,
	token = EXCLUDED.token, issued_at = EXCLUDED.issued_at, expires_at = EXCLUDED.expires_at`
	challengeGetSQL = `SELECT ` + challengeColumns + ` FROM {s}.ownership_challenges WHERE account_id = $1`
	// challengeConsumeSQL removes the challenge only if it is still the
	// outstanding one: of concurrent consumers one deletes it, the others
	// wait for its row lock and then match nothing.
	challengeConsumeSQL = `DELETE FROM {s}.ownership_challenges WHERE account_id = $1 AND id = $2
	RETURNING ` + challengeColumns
)

type challengeRepo struct{ t *tx }

func scanChallenge(row pgx.Row, c *storage.OwnershipChallenge) error {
	return row.Scan(&c.ID, &c.AccountID, &c.Method, &c.Message, &c.Nonce, &c.VerificationLink, &c.Token,
		utc(&c.IssuedAt), utc(&c.ExpiresAt))
}

// Put stores c as the account's outstanding challenge. When c.ID is already
// the id of another account's challenge the statement fails with an error
// wrapping storage.ErrDuplicate, and the transaction is aborted.
func (r challengeRepo) Put(ctx context.Context, c *storage.OwnershipChallenge) error {
	err := r.t.valid("ownership challenge", key("ID", c.ID), key("AccountID", c.AccountID), text("Method", c.Method),
		text("Message", c.Message), text("Nonce", c.Nonce), text("VerificationLink", c.VerificationLink), text("Token", c.Token))
	if err != nil {
		return err
	}
	_, err = r.t.exec(ctx, r.t.s.q.challengePut, c.ID, c.AccountID, c.Method, c.Message, c.Nonce,
		c.VerificationLink, c.Token, c.IssuedAt, c.ExpiresAt)
	return wrap("put ownership challenge", err)
}

func (r challengeRepo) Get(ctx context.Context, accountID string) (storage.OwnershipChallenge, error) {
	var c storage.OwnershipChallenge
	if !storableKey(accountID) {
		return c, notFoundOrDone(r.t)
	}
	found, err := r.t.queryRow(ctx, r.t.s.q.challengeGet, []any{accountID}, func(row pgx.Row) error { return scanChallenge(row, &c) })
	switch {
	case err != nil:
		return storage.OwnershipChallenge{}, wrap("get ownership challenge", err)
	case !found:
		return c, storage.ErrNotFound
	}
	return c, nil
}

func (r challengeRepo) Consume(ctx context.Context, accountID, challengeID string) (storage.OwnershipChallenge, error) {
	var c storage.OwnershipChallenge
	if !storableKey(accountID) || !storableKey(challengeID) {
		return c, notFoundOrDone(r.t)
	}
	found, err := r.t.queryRow(ctx, r.t.s.q.challengeConsume, []any{accountID, challengeID},
		func(row pgx.Row) error { return scanChallenge(row, &c) })
	switch {
	case err != nil:
		return storage.OwnershipChallenge{}, wrap("consume ownership challenge", err)
	case !found:
		return c, storage.ErrNotFound
	}
	return c, nil
}
