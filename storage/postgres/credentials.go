package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/walletgate/walletgate/storage"
)

const credColumns = `id, account_id, tenant, type, nickname, email, phone,
	oauth_issuer, oauth_audience, oauth_subject, oauth_identity_sha256,
	webauthn_credential_id, webauthn_public_key, webauthn_attestation_type, webauthn_aaguid,
	webauthn_sign_count, webauthn_transports, webauthn_user_present, webauthn_user_verified,
	webauthn_backup_eligible, webauthn_backup_state, webauthn_clone_warning,
	enrolled_by_session, enrolled_by_credential, enrolment_origin, enrolment_assurance, enrolment_settles_at,
	created_at, updated_at, version`

const (
	// credInsertSQL reports a clash with any unique index (id, one EMAIL_OTP
	// or SMS_OTP per account, WebAuthn id per tenant, OAuth identity per
	// account) as zero rows instead of an error that would abort the
	// transaction.
	credInsertSQL = `INSERT INTO {s}.credentials (` + credColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
	$23, $24, $25, $26, $27, $28, $29, 1)
	ON CONFLICT DO NOTHING`
	credGetSQL = `SELECT ` + credColumns + ` FROM {s}.credentials WHERE id = $1`
	// credUpdateSQL keeps the stored tenant: a credential's tenant is its
	// wallet's, for good.
	credUpdateSQL = `UPDATE {s}.credentials SET account_id = $2, type = $3, nickname = $4, email = $5, phone = $6,
	oauth_issuer = $7, oauth_audience = $8, oauth_subject = $9, oauth_identity_sha256 = $10,
	webauthn_credential_id = $11, webauthn_public_key = $12, webauthn_attestation_type = $13, webauthn_aaguid = $14,
	webauthn_sign_count = $15, webauthn_transports = $16, webauthn_user_present = $17, webauthn_user_verified = $18,
	webauthn_backup_eligible = $19, webauthn_backup_state = $20, webauthn_clone_warning = $21,
	enrolled_by_session = $22, enrolled_by_credential = $23, enrolment_origin = $24, enrolment_assurance = $25,
	enrolment_settles_at = $26, created_at = $27, updated_at = $28, version = version + 1
	WHERE id = $1 AND version = $29 RETURNING version, tenant`
	credExistsSQL     = `SELECT 1 FROM {s}.credentials WHERE id = $1`
	credDeleteSQL     = `DELETE FROM {s}.credentials WHERE id = $1`
	credListSQL       = `SELECT ` + credColumns + ` FROM {s}.credentials WHERE account_id = $1 ORDER BY seq`
	credByWebAuthnSQL = `SELECT ` + credColumns + ` FROM {s}.credentials WHERE type = 'PASSKEY' AND tenant = $1 AND webauthn_credential_id = $2`
	credByEmailSQL    = `SELECT ` + credColumns + ` FROM {s}.credentials WHERE type = 'EMAIL_OTP' AND tenant = $1 AND email = $2 ORDER BY created_at, seq`
	credLockSQL       = `SELECT ` + credColumns + ` FROM {s}.credentials WHERE id = $1 FOR UPDATE`
	savepointSQL      = `SAVEPOINT walletgate_stmt`
	releaseSQL        = `RELEASE SAVEPOINT walletgate_stmt`
	rollbackToSQL     = `ROLLBACK TO SAVEPOINT walletgate_stmt`
	// advisoryLockSQL takes a transaction-level advisory lock (LockEmail).
	advisoryLockSQL = `SELECT pg_advisory_xact_lock($1)`
)

type credRepo struct{ t *tx }

func credFields(t *tx, c *storage.Credential) error {
	fs := []field{key("ID", c.ID), key("AccountID", c.AccountID), key("Tenant", c.Tenant), text("Type", string(c.Type)),
		text("Nickname", c.Nickname), key("Email", c.Email), text("Phone", c.Phone),
		key("Enrolment.SessionID", c.Enrolment.SessionID), key("Enrolment.CredentialID", c.Enrolment.CredentialID),
		key("Enrolment.Origin", c.Enrolment.Origin), text("Enrolment.Assurance", string(c.Enrolment.Assurance))}
	if c.OAuth != nil {
		fs = append(fs, text("OAuth.Issuer", c.OAuth.Issuer), text("OAuth.Audience", c.OAuth.Audience),
			text("OAuth.Subject", c.OAuth.Subject))
	}
	if c.WebAuthn != nil {
		fs = append(fs, text("WebAuthn.AttestationType", c.WebAuthn.AttestationType))
		for _, tr := range c.WebAuthn.Transports {
			fs = append(fs, text("WebAuthn.Transports", tr))
		}
	}
	if err := t.valid("credential", fs...); err != nil {
		return err
	}
	if c.WebAuthn != nil && len(c.WebAuthn.CredentialID) > MaxWebAuthnIDBytes {
		return fmt.Errorf("%w: credential WebAuthn.CredentialID is %d bytes, WebAuthn allows %d",
			ErrUnstorable, len(c.WebAuthn.CredentialID), MaxWebAuthnIDBytes)
	}
	return nil
}

// oauthKey is the SHA-256 of the length-prefixed issuer, audience and
// subject, so that no two distinct identities share a key.
func oauthKey(o *storage.OAuthIdentity) []byte {
	h := sha256.New()
	for _, s := range []string{o.Issuer, o.Audience, o.Subject} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return h.Sum(nil)
}

// credArgs returns the 29 column values of c, id first.
func credArgs(c *storage.Credential) []any {
	args := make([]any, 0, 30)
	args = append(args, c.ID, c.AccountID, c.Tenant, string(c.Type), c.Nickname, c.Email, c.Phone)
	if o := c.OAuth; o != nil {
		args = append(args, o.Issuer, o.Audience, o.Subject, oauthKey(o))
	} else {
		args = append(args, nil, nil, nil, nil)
	}
	if w := c.WebAuthn; w != nil {
		id := w.CredentialID
		if id == nil {
			id = []byte{} // NULL would mean "no WebAuthn record"
		}
		args = append(args, id, w.PublicKey, w.AttestationType, w.AAGUID, int64(w.SignCount), w.Transports,
			w.UserPresent, w.UserVerified, w.BackupEligible, w.BackupState, w.CloneWarning)
	} else {
		args = append(args, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil)
	}
	e := &c.Enrolment
	return append(args, e.SessionID, e.CredentialID, e.Origin, string(e.Assurance), nullTime(e.SettlesAt), c.CreatedAt, c.UpdatedAt)
}

// credUpdateArgs are credArgs without the tenant, which Update keeps.
func credUpdateArgs(c *storage.Credential) []any {
	args := credArgs(c)
	return append(args[:2:2], args[3:]...)
}

func scanCred(row pgx.Row, c *storage.Credential) error {
	var (
		typ, assurance          string
		iss, aud, sub           pgtype.Text
		oauthSum                []byte
		wid, pub, aaguid        []byte
		att                     pgtype.Text
		count                   pgtype.Int8
		transports              []string
		up, uv, be, bs, cloneWn pgtype.Bool
	)
	e := &c.Enrolment
	err := row.Scan(&c.ID, &c.AccountID, &c.Tenant, &typ, &c.Nickname, &c.Email, &c.Phone,
		&iss, &aud, &sub, &oauthSum, &wid, &pub, &att, &aaguid, &count, &transports, &up, &uv, &be, &bs, &cloneWn,
		&e.SessionID, &e.CredentialID, &e.Origin, &assurance, utc(&e.SettlesAt),
		utc(&c.CreatedAt), utc(&c.UpdatedAt), &c.Version)
	if err != nil {
		return err
	}
	c.Type, e.Assurance = storage.CredentialType(typ), storage.CredentialType(assurance)
	if iss.Valid {
		c.OAuth = &storage.OAuthIdentity{Issuer: iss.String, Audience: aud.String, Subject: sub.String}
	}
	if wid != nil {
		c.WebAuthn = &storage.WebAuthnCredential{CredentialID: wid, PublicKey: pub, AttestationType: att.String,
			AAGUID: aaguid, SignCount: uint32(count.Int64), Transports: transports,
			UserPresent: up.Bool, UserVerified: uv.Bool, BackupEligible: be.Bool, BackupState: bs.Bool, CloneWarning: cloneWn.Bool}
	}
	return nil
}

func (r credRepo) Create(ctx context.Context, c *storage.Credential) error {
	if err := credFields(r.t, c); err != nil {
		return err
	}
	tag, err := r.t.exec(ctx, r.t.s.q.credInsert, credArgs(c)...)
	if err != nil {
		return wrap("create credential", err)
	}
	if tag.RowsAffected() == 0 {
		return storage.ErrDuplicate
	}
	c.Version = 1
	return nil
}

func (r credRepo) Get(ctx context.Context, id string) (storage.Credential, error) {
	if !storableKey(id) {
		return storage.Credential{}, notFoundOrDone(r.t)
	}
	if c, ok := r.t.heldCredential(id); ok {
		return c, nil
	}
	return r.one(ctx, "get credential", r.t.s.q.credGet, id)
}

// one returns the credential st selects with args.
func (r credRepo) one(ctx context.Context, op string, st stmt, args ...any) (storage.Credential, error) {
	var c storage.Credential
	found, err := r.t.queryRow(ctx, st, args, func(row pgx.Row) error { return scanCred(row, &c) })
	switch {
	case err != nil:
		return storage.Credential{}, wrap(op, err)
	case !found:
		return storage.Credential{}, storage.ErrNotFound
	}
	return c, nil
}

// Update is compare-and-set on Version. A uniqueness clash can only be
// detected by the unique indexes, whose violation would abort the
// transaction, so the UPDATE runs inside a savepoint that is rolled back on
// a violation; the savepoint, the UPDATE and its release travel in one round
// trip.
func (r credRepo) Update(ctx context.Context, c *storage.Credential) error {
	if err := credFields(r.t, c); err != nil {
		return err
	}
	var v int64
	var tenant string
	found := false
	b := &batch{}
	b.Queue(r.t.s.q.savepoint)
	b.Queue(r.t.s.q.credUpdate, append(credUpdateArgs(c), c.Version)...).Query(func(rows pgx.Rows) error {
		if rows.Next() {
			found = true
			return rows.Scan(&v, &tenant)
		}
		return nil
	})
	b.Queue(r.t.s.q.release)
	err := r.t.send(ctx, b)
	if pgCode(err) == codeUniqueViolation {
		if _, rerr := r.t.exec(ctx, r.t.s.q.rollbackTo); rerr != nil {
			return wrap("update credential", rerr)
		}
		return wrap("update credential", err)
	}
	if err != nil {
		return wrap("update credential", err)
	}
	if !found {
		return r.t.casMiss(ctx, r.t.s.q.credExists, c.ID, "credential")
	}
	c.Version, c.Tenant = v, tenant
	return nil
}

func (r credRepo) Delete(ctx context.Context, id string) error {
	if !storableKey(id) {
		return notFoundOrDone(r.t)
	}
	tag, err := r.t.exec(ctx, r.t.s.q.credDelete, id)
	switch {
	case err != nil:
		return wrap("delete credential", err)
	case tag.RowsAffected() == 0:
		return storage.ErrNotFound
	}
	return nil
}

func (r credRepo) list(ctx context.Context, op string, st stmt, args ...any) ([]storage.Credential, error) {
	var out []storage.Credential
	err := r.t.query(ctx, st, args, func(rows pgx.Rows) error {
		var c storage.Credential
		if err := scanCred(rows, &c); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

func (r credRepo) ListByAccount(ctx context.Context, accountID string) ([]storage.Credential, error) {
	if !storableKey(accountID) {
		return nil, r.t.check()
	}
	return r.list(ctx, "list credentials", r.t.s.q.credList, accountID)
}

func (r credRepo) FindByWebAuthnID(ctx context.Context, tenant string, credentialID []byte) (storage.Credential, error) {
	if len(credentialID) > MaxWebAuthnIDBytes || !storableKey(tenant) {
		return storage.Credential{}, notFoundOrDone(r.t)
	}
	if credentialID == nil {
		credentialID = []byte{} // an empty id is stored as empty, not NULL
	}
	return r.one(ctx, "find credential by WebAuthn id", r.t.s.q.credByWebAuthn, tenant, credentialID)
}

// Lock reads the credential with a row lock held until the transaction
// ends; a concurrent Delete waits for it, and a Lock that waited for a Delete
// finds nothing. With an attempt it is lockForAttempt.
func (r credRepo) Lock(ctx context.Context, id string, attempt *storage.OTPAttempt) (storage.LockedCredential, error) {
	if attempt != nil {
		return r.lockForAttempt(ctx, id, *attempt)
	}
	c, err := r.lock(ctx, id)
	return storage.LockedCredential{Credential: c}, err
}

// lock is Lock without an attempt.
func (r credRepo) lock(ctx context.Context, id string) (storage.Credential, error) {
	if !storableKey(id) {
		return storage.Credential{}, notFoundOrDone(r.t)
	}
	// The credential's account is read in the same round trip, right
	// after the lock (see readAhead), for the account's later Get: a
	// session's event names its customer. It is not when the transaction
	// holds an account already (a signed operation's, whose Get answers
	// from what its lock read), nor inside a host transaction, whose
	// statements may write it before a later read.
	var c storage.Credential
	var a storage.InternalAccount
	foundC, foundA := false, false
	b := &batch{}
	r.queueLock(b, id, &c, &foundC)
	ahead := r.t.mayReadAhead()
	if ahead {
		b.Queue(r.t.s.q.walletOfCred, id).Query(func(rows pgx.Rows) error {
			if !rows.Next() {
				return nil
			}
			foundA = true
			return scanWallet(rows, &a)
		})
	}
	switch err := r.t.send(ctx, b); {
	case err != nil:
		return storage.Credential{}, wrap("lock credential", err)
	case !foundC:
		return storage.Credential{}, storage.ErrNotFound
	}
	r.t.hold(heldCredentials, c.ID, cloneCredential(c))
	if ahead && foundA && a.ID == c.AccountID {
		r.t.readAhead(aheadRows{wallet: &a})
	}
	return c, nil
}

// queueLock queues the locking read of credential id into b, which sets
// *found and scans the row into c when the credential exists.
func (r credRepo) queueLock(b *batch, id string, c *storage.Credential, found *bool) {
	b.Queue(r.t.s.q.credLock, id).Query(func(rows pgx.Rows) error {
		if !rows.Next() {
			return nil
		}
		*found = true
		return scanCred(rows, c)
	})
}

// lockForAttempt sends the credential's locking read and the attempt
// (otpLockAttemptSQL) in one round trip: at READ COMMITTED the attempt's
// statement takes its snapshot once the lock was granted, so it reads the
// issuance as a read sent after the lock would. The credential's account
// is read ahead in the same round trip, right after the lock, as lock
// reads it (see readAhead), for the account's Get that follows: the
// caller's guard decides on it, a lockout's event names its customer. A
// refused hit costs a read more, as allow's does (and that read drops
// the account read ahead). A budget below one is allow's, which refuses
// every hit: the issuance is read with the lock, and the window opened
// after.
func (r credRepo) lockForAttempt(ctx context.Context, id string, a storage.OTPAttempt) (storage.LockedCredential, error) {
	if !storableKey(id) {
		return storage.LockedCredential{}, notFoundOrDone(r.t)
	}
	limit := min(max(a.Limit, 0), math.MaxInt32)
	if limit > 0 {
		// With no attempt allowed nothing is counted: the key is unused.
		if err := r.t.valid("rate-limit window", key("key", a.Key)); err != nil {
			return storage.LockedCredential{}, err
		}
	}
	var c storage.Credential
	var w storage.InternalAccount
	var cur, att otpRow
	foundC, foundW, counted := false, false, false
	b := &batch{}
	r.queueLock(b, id, &c, &foundC)
	ahead := r.t.mayReadAhead()
	if ahead {
		b.Queue(r.t.s.q.walletOfCred, id).Query(func(rows pgx.Rows) error {
			if !rows.Next() {
				return nil
			}
			foundW = true
			return scanWallet(rows, &w)
		})
	}
	if a.Budget < 1 || limit == 0 {
		b.Queue(r.t.s.q.otpGet, id).Query(func(rows pgx.Rows) error {
			if !rows.Next() {
				return nil
			}
			return rows.Scan(cur.dest()...)
		})
	} else {
		b.Queue(r.t.s.q.otpLockAttempt, id, a.Now, int32(limit), a.Key, a.Now.Add(a.Window), int64(a.Budget)).Query(
			func(rows pgx.Rows) error {
				if !rows.Next() {
					return nil
				}
				return rows.Scan(append(append([]any{&counted}, cur.dest()...), att.dest()...)...)
			})
	}
	switch err := r.t.send(ctx, b); {
	case err != nil:
		return storage.LockedCredential{}, wrap("lock credential for an OTP attempt", err)
	case !foundC:
		return storage.LockedCredential{}, storage.ErrNotFound
	}
	r.t.hold(heldCredentials, c.ID, cloneCredential(c))
	if ahead && foundW && w.ID == c.AccountID {
		r.t.readAhead(aheadRows{wallet: &w})
	}
	res := storage.LockedCredential{Credential: c, Issuance: cur.issuance(), Reserved: att.issuance()}
	o := res.Issuance
	if o == nil || !o.ConsumedAt.IsZero() || !a.Now.Before(o.ExpiresAt) || o.Attempts >= limit || counted {
		return res, nil
	}
	// Live, and the hit did not count: the window refused it (and is held
	// by this transaction), or the budget is below one.
	lr := limitRepo{r.t}
	var err error
	if a.Budget < 1 {
		res.Wait, err = lr.allow(ctx, a.Key, a.Now, a.Window, a.Budget)
	} else {
		res.Wait, err = lr.windowWait(ctx, a.Key, a.Now)
	}
	if err != nil {
		return storage.LockedCredential{}, err
	}
	return res, nil
}

// LockEmail takes a transaction-level advisory lock derived from the
// schema, the tenant and the address, so it needs no row and stores of
// other schemas, and other tenants, never wait on it.
func (r credRepo) LockEmail(ctx context.Context, tenant, email string) error {
	_, err := r.t.exec(ctx, r.t.s.q.advisoryLock, lockKey(emailLockName(tenant, email), r.t.s.cfg.Schema))
	return wrap("lock email", err)
}

// emailLockName names the lock of an address of a tenant. The empty
// tenant's is the name releases before tenants used, so replicas of both
// take one lock during an upgrade; another tenant's starts with a prefix
// of its own and the tenant's length, so no two pairs share a name.
func emailLockName(tenant, email string) string {
	if tenant == "" {
		return "email/" + email
	}
	return "tenant-email/" + strconv.Itoa(len(tenant)) + "/" + tenant + "/" + email
}

func (r credRepo) ListEmailOTPByEmail(ctx context.Context, tenant, email string) ([]storage.Credential, error) {
	if !storableKey(email) || !storableKey(tenant) {
		return nil, r.t.check()
	}
	return r.list(ctx, "list EMAIL_OTP credentials by email", r.t.s.q.credByEmail, tenant, email)
}
