package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
)

const extColumns = `id, customer_id, tenant, platform_account_id, status, ownership_type, currency, account_type,
	address, network, vasp_name, info, created_at, updated_at, version`

const (
	extInsertSQL = `INSERT INTO {s}.external_accounts (` + extColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, 1)
	ON CONFLICT DO NOTHING`
	extGetSQL    = `SELECT ` + extColumns + ` FROM {s}.external_accounts WHERE id = $1`
	extLockSQL   = extGetSQL + ` FOR UPDATE`
	extUpdateSQL = `UPDATE {s}.external_accounts SET customer_id = $2, platform_account_id = $3, status = $4,
	ownership_type = $5, currency = $6, account_type = $7, address = $8, network = $9, vasp_name = $10,
	info = $11, created_at = $12, updated_at = $13, version = version + 1
	WHERE id = $1 AND version = $14 RETURNING version, tenant`
	extExistsSQL = `SELECT 1 FROM {s}.external_accounts WHERE id = $1`
	extListSQL   = `SELECT ` + extColumns + ` FROM {s}.external_accounts WHERE customer_id = $1 ORDER BY seq`
)

type extRepo struct{ t *tx }

func extFields(t *tx, a *storage.ExternalAccount) error {
	return t.valid("external account", key("ID", a.ID), key("CustomerID", a.CustomerID), key("Tenant", a.Tenant),
		text("PlatformAccountID", a.PlatformAccountID), text("Status", string(a.Status)),
		text("OwnershipType", a.OwnershipType), text("Currency", a.Currency), text("AccountType", a.AccountType),
		text("Address", a.Address), text("Network", a.Network), text("VaspName", a.VaspName))
}

func extArgs(a *storage.ExternalAccount) []any {
	return []any{a.ID, a.CustomerID, a.Tenant, a.PlatformAccountID, string(a.Status), a.OwnershipType, a.Currency,
		a.AccountType, a.Address, a.Network, a.VaspName, []byte(a.Info), a.CreatedAt, a.UpdatedAt}
}

// extUpdateArgs are extArgs without the tenant, which Update keeps.
func extUpdateArgs(a *storage.ExternalAccount) []any {
	args := extArgs(a)
	return append(args[:2:2], args[3:]...)
}

func scanExt(row pgx.Row, a *storage.ExternalAccount) error {
	var status string
	var info []byte
	err := row.Scan(&a.ID, &a.CustomerID, &a.Tenant, &a.PlatformAccountID, &status, &a.OwnershipType, &a.Currency,
		&a.AccountType, &a.Address, &a.Network, &a.VaspName, &info, utc(&a.CreatedAt), utc(&a.UpdatedAt), &a.Version)
	a.Status, a.Info = storage.AccountStatus(status), json.RawMessage(info)
	return err
}

func (r extRepo) Create(ctx context.Context, a *storage.ExternalAccount) error {
	if err := extFields(r.t, a); err != nil {
		return err
	}
	tag, err := r.t.exec(ctx, r.t.s.q.extInsert, extArgs(a)...)
	if err != nil {
		return wrap("create external account", err)
	}
	if tag.RowsAffected() == 0 {
		return storage.ErrDuplicate
	}
	a.Version = 1
	return nil
}

func (r extRepo) Get(ctx context.Context, id string) (storage.ExternalAccount, error) {
	var a storage.ExternalAccount
	if !storableKey(id) {
		return a, notFoundOrDone(r.t)
	}
	found, err := r.t.queryRow(ctx, r.t.s.q.extGet, []any{id}, func(row pgx.Row) error { return scanExt(row, &a) })
	switch {
	case err != nil:
		return storage.ExternalAccount{}, wrap("get external account", err)
	case !found:
		return a, storage.ErrNotFound
	}
	return a, nil
}

func (r extRepo) Lock(ctx context.Context, id string) (storage.ExternalAccount, error) {
	var a storage.ExternalAccount
	if !storableKey(id) {
		return a, notFoundOrDone(r.t)
	}
	found, err := r.t.queryRow(ctx, r.t.s.q.extLock, []any{id}, func(row pgx.Row) error { return scanExt(row, &a) })
	switch {
	case err != nil:
		return storage.ExternalAccount{}, wrap("lock external account", err)
	case !found:
		return a, storage.ErrNotFound
	}
	return a, nil
}

func (r extRepo) Update(ctx context.Context, a *storage.ExternalAccount) error {
	if err := extFields(r.t, a); err != nil {
		return err
	}
	var v int64
	var tenant string
	found, err := r.t.queryRow(ctx, r.t.s.q.extUpdate, append(extUpdateArgs(a), a.Version),
		func(row pgx.Row) error { return row.Scan(&v, &tenant) })
	if err != nil {
		return wrap("update external account", err)
	}
	if !found {
		return r.t.casMiss(ctx, r.t.s.q.extExists, a.ID, "external account")
	}
	a.Version, a.Tenant = v, tenant
	return nil
}

func (r extRepo) ListByCustomer(ctx context.Context, customerID string) ([]storage.ExternalAccount, error) {
	if !storableKey(customerID) {
		return nil, r.t.check()
	}
	var out []storage.ExternalAccount
	err := r.t.query(ctx, r.t.s.q.extList, []any{customerID}, func(rows pgx.Rows) error {
		var a storage.ExternalAccount
		if err := scanExt(rows, &a); err != nil {
			return err
		}
		out = append(out, a)
		return nil
	})
	if err != nil {
		return nil, wrap("list external accounts", err)
	}
	return out, nil
}

const walletColumns = `id, customer_id, tenant, email, phone, created_at, updated_at, security_changed_at, version`

const (
	walletInsertSQL = `INSERT INTO {s}.internal_accounts (` + walletColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1) ON CONFLICT DO NOTHING`
	walletGetSQL = `SELECT ` + walletColumns + ` FROM {s}.internal_accounts WHERE id = $1`
	// walletOfCredSQL reads the account of a credential (see readAhead).
	walletOfCredSQL = `SELECT ` + walletColumns + ` FROM {s}.internal_accounts
	WHERE id = (SELECT account_id FROM {s}.credentials WHERE id = $1)`
	// walletOfSessSQL reads the account of a session.
	walletOfSessSQL = `SELECT ` + walletColumns + ` FROM {s}.internal_accounts
	WHERE id = (SELECT account_id FROM {s}.sessions WHERE id = $1)`
	// walletUpdateSQL keeps the stored tenant: a wallet's never changes.
	walletUpdateSQL = `UPDATE {s}.internal_accounts SET customer_id = $2, email = $3, phone = $4,
	created_at = $5, updated_at = $6, security_changed_at = $7, version = version + 1
	WHERE id = $1 AND version = $8 RETURNING version, tenant`
	walletExistsSQL = `SELECT 1 FROM {s}.internal_accounts WHERE id = $1`
	walletListSQL   = `SELECT ` + walletColumns + ` FROM {s}.internal_accounts WHERE customer_id = $1 ORDER BY seq`
	// walletLockSQL waits for any transaction holding the row and returns
	// the row as that one committed it.
	walletLockSQL = `SELECT ` + walletColumns + ` FROM {s}.internal_accounts WHERE id = $1 FOR UPDATE`
	// walletMarkChangedSQL is MarkSecurityChanged, a deferred write: its
	// guard fails (guard_failed, SQLSTATE WG001) when no account has the
	// id.
	walletMarkChangedSQL = `WITH marked AS (UPDATE {s}.internal_accounts SET security_changed_at = $2, updated_at = $2,
	version = version + 1 WHERE id = $1 RETURNING 1)
	SELECT CASE WHEN count(*) = 0 THEN {s}.guard_failed('` + guardWalletExists + `') ELSE 1 END FROM marked`
)

// guardWalletExists is the guard of MarkSecurityChanged.
const guardWalletExists = "internal account exists"

type walletRepo struct{ t *tx }

func walletFields(t *tx, a *storage.InternalAccount) error {
	return t.valid("internal account", key("ID", a.ID), key("CustomerID", a.CustomerID), key("Tenant", a.Tenant),
		text("Email", a.Email), text("Phone", a.Phone))
}

func walletArgs(a *storage.InternalAccount) []any {
	return []any{a.ID, a.CustomerID, a.Tenant, a.Email, a.Phone, a.CreatedAt, a.UpdatedAt, nullTime(a.SecurityChangedAt)}
}

// walletUpdateArgs are walletArgs without the tenant, which Update keeps.
func walletUpdateArgs(a *storage.InternalAccount) []any {
	return []any{a.ID, a.CustomerID, a.Email, a.Phone, a.CreatedAt, a.UpdatedAt, nullTime(a.SecurityChangedAt)}
}

func scanWallet(row pgx.Row, a *storage.InternalAccount) error {
	return row.Scan(&a.ID, &a.CustomerID, &a.Tenant, &a.Email, &a.Phone, utc(&a.CreatedAt), utc(&a.UpdatedAt),
		utc(&a.SecurityChangedAt), &a.Version)
}

func (r walletRepo) Create(ctx context.Context, a *storage.InternalAccount) error {
	if err := walletFields(r.t, a); err != nil {
		return err
	}
	tag, err := r.t.exec(ctx, r.t.s.q.walletInsert, walletArgs(a)...)
	if err != nil {
		return wrap("create internal account", err)
	}
	if tag.RowsAffected() == 0 {
		return storage.ErrDuplicate
	}
	a.Version = 1
	return nil
}

func (r walletRepo) Get(ctx context.Context, id string) (storage.InternalAccount, error) {
	var a storage.InternalAccount
	if !storableKey(id) {
		return a, notFoundOrDone(r.t)
	}
	if a, ok := r.t.heldWallet(id); ok {
		return a, nil
	}
	if a, ok := r.t.aheadWallet(id); ok {
		return a, nil
	}
	found, err := r.t.queryRow(ctx, r.t.s.q.walletGet, []any{id}, func(row pgx.Row) error { return scanWallet(row, &a) })
	switch {
	case err != nil:
		return storage.InternalAccount{}, wrap("get internal account", err)
	case !found:
		return a, storage.ErrNotFound
	}
	return a, nil
}

// OfCredential reads the credential's account in one statement.
func (r walletRepo) OfCredential(ctx context.Context, credentialID string) (storage.InternalAccount, error) {
	return r.of(ctx, r.t.s.q.walletOfCred, credentialID)
}

// OfSession reads the session's account in one statement.
func (r walletRepo) OfSession(ctx context.Context, sessionID string) (storage.InternalAccount, error) {
	return r.of(ctx, r.t.s.q.walletOfSess, sessionID)
}

// of reads the account that st, given the id of a record of it, returns.
func (r walletRepo) of(ctx context.Context, st stmt, id string) (storage.InternalAccount, error) {
	var a storage.InternalAccount
	if !storableKey(id) {
		return a, notFoundOrDone(r.t)
	}
	found, err := r.t.queryRow(ctx, st, []any{id}, func(row pgx.Row) error { return scanWallet(row, &a) })
	switch {
	case err != nil:
		return storage.InternalAccount{}, wrap("get the internal account of a record", err)
	case !found:
		return storage.InternalAccount{}, storage.ErrNotFound
	}
	return a, nil
}

func (r walletRepo) Update(ctx context.Context, a *storage.InternalAccount) error {
	if err := walletFields(r.t, a); err != nil {
		return err
	}
	var v int64
	var tenant string
	found, err := r.t.queryRow(ctx, r.t.s.q.walletUpdate, append(walletUpdateArgs(a), a.Version),
		func(row pgx.Row) error { return row.Scan(&v, &tenant) })
	if err != nil {
		return wrap("update internal account", err)
	}
	if !found {
		return r.t.casMiss(ctx, r.t.s.q.walletExists, a.ID, "internal account")
	}
	a.Version, a.Tenant = v, tenant
	return nil
}

// Lock reads the account with a row lock held until the transaction ends.
func (r walletRepo) Lock(ctx context.Context, id string) (storage.InternalAccount, error) {
	var a storage.InternalAccount
	if !storableKey(id) {
		return a, notFoundOrDone(r.t)
	}
	found, err := r.t.queryRow(ctx, r.t.s.q.walletLock, []any{id}, func(row pgx.Row) error { return scanWallet(row, &a) })
	switch {
	case err != nil:
		return storage.InternalAccount{}, wrap("lock internal account", err)
	case !found:
		return storage.InternalAccount{}, storage.ErrNotFound
	}
	r.t.hold(heldWallets, a.ID, a)
	return a, nil
}

// MarkSecurityChanged is a deferred write: it travels with the
// transaction's next statement or its COMMIT, and an account that does
// not exist aborts the transaction with an error wrapping
// storage.ErrNotFound.
func (r walletRepo) MarkSecurityChanged(ctx context.Context, id string, at time.Time) error {
	if !storableKey(id) {
		return notFoundOrDone(r.t)
	}
	b := &batch{}
	b.Queue(r.t.s.q.walletMarkChanged, id, at).Fn = func(br pgx.BatchResults) error {
		_, err := br.Exec()
		if pgCode(err) == codeGuardFailed {
			return fmt.Errorf("postgres: mark the security change of internal account %s: %w", id, storage.ErrNotFound)
		}
		return err
	}
	return wrap("mark security change", r.t.deferWrite(ctx, b))
}

func (r walletRepo) ListByCustomer(ctx context.Context, customerID string) ([]storage.InternalAccount, error) {
	if !storableKey(customerID) {
		return nil, r.t.check()
	}
	var out []storage.InternalAccount
	err := r.t.query(ctx, r.t.s.q.walletList, []any{customerID}, func(rows pgx.Rows) error {
		var a storage.InternalAccount
		if err := scanWallet(rows, &a); err != nil {
			return err
		}
		out = append(out, a)
		return nil
	})
	if err != nil {
		return nil, wrap("list internal accounts", err)
	}
	return out, nil
}
