package memory

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// Copies: records go in and come out as deep copies.

func cloneExt(a *storage.ExternalAccount) *storage.ExternalAccount {
	c := *a
	c.Info = slices.Clone(a.Info)
	return &c
}

func cloneCred(a *storage.Credential) *storage.Credential {
	c := *a
	if a.OAuth != nil {
		o := *a.OAuth
		c.OAuth = &o
	}
	if a.WebAuthn != nil {
		w := *a.WebAuthn
		w.CredentialID = slices.Clone(w.CredentialID)
		w.PublicKey = slices.Clone(w.PublicKey)
		w.AAGUID = slices.Clone(w.AAGUID)
		w.Transports = slices.Clone(w.Transports)
		c.WebAuthn = &w
	}
	return &c
}

func cloneOTP(o *storage.OTPIssuance) *storage.OTPIssuance {
	c := *o
	c.TargetKey = slices.Clone(o.TargetKey)
	return &c
}

func cloneSession(s *storage.Session) *storage.Session {
	c := *s
	c.PublicKey = slices.Clone(s.PublicKey)
	return &c
}

func clonePending(p *storage.PendingRequest) *storage.PendingRequest {
	c := copyPending(p)
	return &c
}

// copyPending copies p and its byte slices, which share one new array (a
// request is created and consumed on every signed retry: one allocation
// instead of three). Each copy is capped at its length, so an append to one
// never writes into another.
func copyPending(p *storage.PendingRequest) storage.PendingRequest {
	c := *p
	var buf []byte
	if n := len(p.BodyDigest) + len(p.Payload) + len(p.Data); n > 0 {
		buf = make([]byte, n)
	}
	c.BodyDigest, buf = carve(p.BodyDigest, buf)
	c.Payload, buf = carve(p.Payload, buf)
	c.Data, _ = carve(p.Data, buf)
	return c
}

// carve copies src into the head of buf, which has room for it, and returns
// the copy and the rest of buf. Like slices.Clone it keeps nil nil and an
// empty slice empty but not nil.
func carve(src, buf []byte) (cp, rest []byte) {
	if len(src) == 0 {
		return src[:0:0], buf
	}
	n := copy(buf, src)
	return buf[:n:n], buf[n:]
}

func cloneEvent(e *storage.Event) *storage.Event {
	c := *e
	c.Payload = slices.Clone(e.Payload)
	return &c
}

// Every method first takes the locks of the keys it reads (shared) or
// writes (exclusive), then works on the tables: see locks.go.

// External accounts.

type extRepo struct{ *tx }

func (r extRepo) Create(ctx context.Context, a *storage.ExternalAccount) error {
	if err := r.lockX(ctx, lkExt, a.ID); err != nil {
		return err
	}
	if _, ok := r.s.ext.get(a.ID); ok {
		return storage.ErrDuplicate
	}
	if err := r.lockX(ctx, lkExtByCustomer, a.CustomerID); err != nil {
		return err
	}
	a.Version = 1
	tput(r.tx, &r.s.ext, a.ID, cloneExt(a))
	appendIndex(r.tx, &r.s.extByCustomer, a.CustomerID, a.ID)
	return nil
}

func (r extRepo) get(ctx context.Context, id string, mode lockMode) (storage.ExternalAccount, error) {
	if err := r.lock(ctx, lkExt, id, mode); err != nil {
		return storage.ExternalAccount{}, err
	}
	a, ok := r.s.ext.get(id)
	if !ok {
		return storage.ExternalAccount{}, storage.ErrNotFound
	}
	return *cloneExt(a), nil
}

func (r extRepo) Get(ctx context.Context, id string) (storage.ExternalAccount, error) {
	return r.get(ctx, id, shared)
}

// Lock is Get under an exclusive lock, held until the transaction ends.
func (r extRepo) Lock(ctx context.Context, id string) (storage.ExternalAccount, error) {
	return r.get(ctx, id, exclusive)
}

func (r extRepo) Update(ctx context.Context, a *storage.ExternalAccount) error {
	if err := r.lockX(ctx, lkExt, a.ID); err != nil {
		return err
	}
	cur, ok := r.s.ext.get(a.ID)
	if !ok {
		return storage.ErrNotFound
	}
	if cur.Version != a.Version {
		return storage.ErrConflict
	}
	if cur.CustomerID != a.CustomerID {
		if err := r.lockX(ctx, lkExtByCustomer, cur.CustomerID); err != nil {
			return err
		}
		if err := r.lockX(ctx, lkExtByCustomer, a.CustomerID); err != nil {
			return err
		}
		removeIndex(r.tx, &r.s.extByCustomer, cur.CustomerID, a.ID)
		appendIndex(r.tx, &r.s.extByCustomer, a.CustomerID, a.ID)
	}
	a.Version++
	tput(r.tx, &r.s.ext, a.ID, cloneExt(a))
	return nil
}

func (r extRepo) ListByCustomer(ctx context.Context, customerID string) ([]storage.ExternalAccount, error) {
	if err := r.lockS(ctx, lkExtByCustomer, customerID); err != nil {
		return nil, err
	}
	ids, _ := r.s.extByCustomer.get(customerID)
	out := make([]storage.ExternalAccount, 0, len(ids))
	for _, id := range ids {
		a, err := r.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// Ownership challenges.

type challengeRepo struct{ *tx }

func (r challengeRepo) Put(ctx context.Context, c *storage.OwnershipChallenge) error {
	if err := r.lockX(ctx, lkChallenge, c.AccountID); err != nil {
		return err
	}
	cp := *c
	tput(r.tx, &r.s.challenges, c.AccountID, &cp)
	r.watch(kindChallenge, c.AccountID, c.ExpiresAt)
	return nil
}

func (r challengeRepo) Get(ctx context.Context, accountID string) (storage.OwnershipChallenge, error) {
	if err := r.lockS(ctx, lkChallenge, accountID); err != nil {
		return storage.OwnershipChallenge{}, err
	}
	c, ok := r.s.challenges.get(accountID)
	if !ok {
		return storage.OwnershipChallenge{}, storage.ErrNotFound
	}
	return *c, nil
}

func (r challengeRepo) Consume(ctx context.Context, accountID, challengeID string) (storage.OwnershipChallenge, error) {
	if err := r.lockX(ctx, lkChallenge, accountID); err != nil {
		return storage.OwnershipChallenge{}, err
	}
	c, ok := r.s.challenges.get(accountID)
	if !ok || c.ID != challengeID {
		return storage.OwnershipChallenge{}, storage.ErrNotFound
	}
	tdel(r.tx, &r.s.challenges, accountID)
	return *c, nil
}

// Internal accounts.

type walletRepo struct{ *tx }

func (r walletRepo) Create(ctx context.Context, a *storage.InternalAccount) error {
	if err := r.lockX(ctx, lkWallet, a.ID); err != nil {
		return err
	}
	if _, ok := r.s.wallets.get(a.ID); ok {
		return storage.ErrDuplicate
	}
	if err := r.lockX(ctx, lkWalletByCustomer, a.CustomerID); err != nil {
		return err
	}
	a.Version = 1
	cp := *a
	tput(r.tx, &r.s.wallets, a.ID, &cp)
	appendIndex(r.tx, &r.s.walletsByCust, a.CustomerID, a.ID)
	return nil
}

func (r walletRepo) get(ctx context.Context, id string, mode lockMode) (storage.InternalAccount, error) {
	if err := r.lock(ctx, lkWallet, id, mode); err != nil {
		return storage.InternalAccount{}, err
	}
	a, ok := r.s.wallets.get(id)
	if !ok {
		return storage.InternalAccount{}, storage.ErrNotFound
	}
	return *a, nil
}

func (r walletRepo) Get(ctx context.Context, id string) (storage.InternalAccount, error) {
	return r.get(ctx, id, shared)
}

func (r walletRepo) Update(ctx context.Context, a *storage.InternalAccount) error {
	if err := r.lockX(ctx, lkWallet, a.ID); err != nil {
		return err
	}
	cur, ok := r.s.wallets.get(a.ID)
	if !ok {
		return storage.ErrNotFound
	}
	if cur.Version != a.Version {
		return storage.ErrConflict
	}
	if cur.CustomerID != a.CustomerID {
		if err := r.lockX(ctx, lkWalletByCustomer, cur.CustomerID); err != nil {
			return err
		}
		if err := r.lockX(ctx, lkWalletByCustomer, a.CustomerID); err != nil {
			return err
		}
		removeIndex(r.tx, &r.s.walletsByCust, cur.CustomerID, a.ID)
		appendIndex(r.tx, &r.s.walletsByCust, a.CustomerID, a.ID)
	}
	a.Version++
	cp := *a
	tput(r.tx, &r.s.wallets, a.ID, &cp)
	return nil
}

// Lock is Get under an exclusive lock, held until the transaction ends.
func (r walletRepo) Lock(ctx context.Context, id string) (storage.InternalAccount, error) {
	return r.get(ctx, id, exclusive)
}

func (r walletRepo) ListByCustomer(ctx context.Context, customerID string) ([]storage.InternalAccount, error) {
	if err := r.lockS(ctx, lkWalletByCustomer, customerID); err != nil {
		return nil, err
	}
	ids, _ := r.s.walletsByCust.get(customerID)
	out := make([]storage.InternalAccount, 0, len(ids))
	for _, id := range ids {
		a, err := r.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// Credentials.

type credRepo struct{ *tx }

// lockKeys takes the exclusive locks of the WebAuthn id and the address c
// is (or will be) listed under.
func (r credRepo) lockKeys(ctx context.Context, c *storage.Credential) error {
	if c.Type == storage.Passkey && c.WebAuthn != nil {
		if err := r.lockX(ctx, lkWebAuthn, string(c.WebAuthn.CredentialID)); err != nil {
			return err
		}
	}
	if c.Type == storage.EmailOTP {
		return r.lockX(ctx, lkEmail, c.Email)
	}
	return nil
}

// conflicts reports whether c would break a uniqueness rule against the stored
// credentials other than c itself. The caller holds the lock of c's account's
// credentials and lockKeys(c); conflicts reads each of them under a shared
// lock.
func (r credRepo) conflicts(ctx context.Context, c *storage.Credential) (bool, error) {
	if c.Type == storage.Passkey && c.WebAuthn != nil {
		if owner, ok := r.s.webauthn.get(string(c.WebAuthn.CredentialID)); ok && owner != c.ID {
			return true, nil
		}
	}
	ids, _ := r.s.credsByAcct.get(c.AccountID)
	for _, id := range ids {
		if id == c.ID {
			continue
		}
		if err := r.lockS(ctx, lkCred, id); err != nil {
			return false, err
		}
		o, _ := r.s.creds.get(id)
		switch {
		case o.Type != c.Type:
		case c.Type == storage.EmailOTP, c.Type == storage.SMSOTP:
			return true, nil
		case c.Type == storage.OAuth && c.OAuth != nil && o.OAuth != nil && *c.OAuth == *o.OAuth:
			return true, nil
		}
	}
	return false, nil
}

// emailOf returns the address c is listed under, and whether it is listed
// under one at all (only EMAIL_OTP credentials are).
func emailOf(c *storage.Credential) (string, bool) {
	return c.Email, c.Type == storage.EmailOTP
}

// index lists c under its WebAuthn id and, unless it is listed there
// already (as was), its address.
func (r credRepo) index(c, was *storage.Credential) {
	if c.Type == storage.Passkey && c.WebAuthn != nil {
		tput(r.tx, &r.s.webauthn, string(c.WebAuthn.CredentialID), c.ID)
	}
	if e, ok := emailOf(c); ok {
		if was != nil {
			if we, wok := emailOf(was); wok && we == e {
				return
			}
		}
		appendIndex(r.tx, &r.s.credsByEmail, e, c.ID)
	}
}

// unindex removes c from the WebAuthn id index and, unless it stays listed
// there (as next), from its address.
func (r credRepo) unindex(c, next *storage.Credential) {
	if c.Type == storage.Passkey && c.WebAuthn != nil {
		tdel(r.tx, &r.s.webauthn, string(c.WebAuthn.CredentialID))
	}
	if e, ok := emailOf(c); ok {
		if next != nil {
			if ne, nok := emailOf(next); nok && ne == e {
				return
			}
		}
		removeIndex(r.tx, &r.s.credsByEmail, e, c.ID)
	}
}

func (r credRepo) Create(ctx context.Context, c *storage.Credential) error {
	if err := r.lockX(ctx, lkCred, c.ID); err != nil {
		return err
	}
	if _, ok := r.s.creds.get(c.ID); ok {
		return storage.ErrDuplicate
	}
	if err := r.lockX(ctx, lkCredByAccount, c.AccountID); err != nil {
		return err
	}
	if err := r.lockKeys(ctx, c); err != nil {
		return err
	}
	if dup, err := r.conflicts(ctx, c); err != nil || dup {
		return cmp.Or(err, storage.ErrDuplicate)
	}
	c.Version = 1
	cp := cloneCred(c)
	tput(r.tx, &r.s.creds, c.ID, cp)
	appendIndex(r.tx, &r.s.credsByAcct, c.AccountID, c.ID)
	r.index(cp, nil)
	return nil
}

func (r credRepo) get(ctx context.Context, id string, mode lockMode) (storage.Credential, error) {
	if err := r.lock(ctx, lkCred, id, mode); err != nil {
		return storage.Credential{}, err
	}
	c, ok := r.s.creds.get(id)
	if !ok {
		return storage.Credential{}, storage.ErrNotFound
	}
	return *cloneCred(c), nil
}

func (r credRepo) Get(ctx context.Context, id string) (storage.Credential, error) {
	return r.get(ctx, id, shared)
}

func (r credRepo) Update(ctx context.Context, c *storage.Credential) error {
	if err := r.lockX(ctx, lkCred, c.ID); err != nil {
		return err
	}
	cur, ok := r.s.creds.get(c.ID)
	if !ok {
		return storage.ErrNotFound
	}
	if cur.Version != c.Version {
		return storage.ErrConflict
	}
	// The account's list is read (shared) for the uniqueness check, and
	// changed (exclusive) only when c moves to another account.
	moves := cur.AccountID != c.AccountID
	mode := shared
	if moves {
		mode = exclusive
		if err := r.lockX(ctx, lkCredByAccount, cur.AccountID); err != nil {
			return err
		}
	}
	if err := r.lock(ctx, lkCredByAccount, c.AccountID, mode); err != nil {
		return err
	}
	if err := r.lockKeys(ctx, cur); err != nil {
		return err
	}
	if err := r.lockKeys(ctx, c); err != nil {
		return err
	}
	if dup, err := r.conflicts(ctx, c); err != nil || dup {
		return cmp.Or(err, storage.ErrDuplicate)
	}
	if moves {
		removeIndex(r.tx, &r.s.credsByAcct, cur.AccountID, c.ID)
		appendIndex(r.tx, &r.s.credsByAcct, c.AccountID, c.ID)
	}
	c.Version++
	cp := cloneCred(c)
	r.unindex(cur, cp)
	r.index(cp, cur)
	tput(r.tx, &r.s.creds, c.ID, cp)
	return nil
}

func (r credRepo) Delete(ctx context.Context, id string) error {
	if err := r.lockX(ctx, lkCred, id); err != nil {
		return err
	}
	cur, ok := r.s.creds.get(id)
	if !ok {
		return storage.ErrNotFound
	}
	if err := r.lockX(ctx, lkCredByAccount, cur.AccountID); err != nil {
		return err
	}
	if err := r.lockKeys(ctx, cur); err != nil {
		return err
	}
	tdel(r.tx, &r.s.creds, id)
	removeIndex(r.tx, &r.s.credsByAcct, cur.AccountID, id)
	r.unindex(cur, nil)
	return nil
}

// list returns the credentials with the given ids, read under shared locks.
func (r credRepo) list(ctx context.Context, ids []string) ([]storage.Credential, error) {
	out := make([]storage.Credential, 0, len(ids))
	for _, id := range ids {
		c, err := r.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (r credRepo) ListByAccount(ctx context.Context, accountID string) ([]storage.Credential, error) {
	if err := r.lockS(ctx, lkCredByAccount, accountID); err != nil {
		return nil, err
	}
	ids, _ := r.s.credsByAcct.get(accountID)
	return r.list(ctx, ids)
}

func (r credRepo) FindByWebAuthnID(ctx context.Context, credentialID []byte) (storage.Credential, error) {
	if err := r.lockS(ctx, lkWebAuthn, string(credentialID)); err != nil {
		return storage.Credential{}, err
	}
	id, ok := r.s.webauthn.get(string(credentialID))
	if !ok {
		return storage.Credential{}, storage.ErrNotFound
	}
	return r.Get(ctx, id)
}

// Lock is Get under an exclusive lock, held until the transaction ends.
func (r credRepo) Lock(ctx context.Context, id string) (storage.Credential, error) {
	return r.get(ctx, id, exclusive)
}

// LockEmail takes the exclusive lock of the address: the one every write of
// an EMAIL_OTP credential of the address takes too.
func (r credRepo) LockEmail(ctx context.Context, email string) error {
	return r.lockX(ctx, lkEmail, email)
}

func (r credRepo) ListEmailOTPByEmail(ctx context.Context, email string) ([]storage.Credential, error) {
	if err := r.lockS(ctx, lkEmail, email); err != nil {
		return nil, err
	}
	ids, _ := r.s.credsByEmail.get(email)
	out, err := r.list(ctx, ids)
	slices.SortStableFunc(out, func(a, b storage.Credential) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, err
}

// OTP issuances.

type otpRepo struct{ *tx }

func (r otpRepo) Put(ctx context.Context, o *storage.OTPIssuance) error {
	if err := r.lockX(ctx, lkOTPByCred, o.CredentialID); err != nil {
		return err
	}
	if prev, ok := r.s.otpByCred.get(o.CredentialID); ok {
		if err := r.lockX(ctx, lkOTP, prev); err != nil {
			return err
		}
		tdel(r.tx, &r.s.otp, prev)
	}
	if err := r.lockX(ctx, lkOTP, o.ID); err != nil {
		return err
	}
	if _, ok := r.s.otp.get(o.ID); ok {
		return storage.ErrDuplicate
	}
	tput(r.tx, &r.s.otp, o.ID, cloneOTP(o))
	tput(r.tx, &r.s.otpByCred, o.CredentialID, o.ID)
	r.watch(kindOTP, o.ID, o.ExpiresAt)
	return nil
}

func (r otpRepo) GetByCredential(ctx context.Context, credentialID string) (storage.OTPIssuance, error) {
	if err := r.lockS(ctx, lkOTPByCred, credentialID); err != nil {
		return storage.OTPIssuance{}, err
	}
	id, ok := r.s.otpByCred.get(credentialID)
	if !ok {
		return storage.OTPIssuance{}, storage.ErrNotFound
	}
	if err := r.lockS(ctx, lkOTP, id); err != nil {
		return storage.OTPIssuance{}, err
	}
	o, ok := r.s.otp.get(id)
	if !ok {
		return storage.OTPIssuance{}, storage.ErrNotFound
	}
	return *cloneOTP(o), nil
}

// live locks issuance id and returns it when it is neither consumed nor
// expired at now: ErrNotFound, ErrConsumed or ErrExpired otherwise, checked
// in that order.
func (r otpRepo) live(ctx context.Context, id string, now time.Time) (*storage.OTPIssuance, error) {
	if err := r.lockX(ctx, lkOTP, id); err != nil {
		return nil, err
	}
	o, ok := r.s.otp.get(id)
	switch {
	case !ok:
		return nil, storage.ErrNotFound
	case !o.ConsumedAt.IsZero():
		return nil, storage.ErrConsumed
	case !now.Before(o.ExpiresAt):
		return nil, storage.ErrExpired
	}
	return o, nil
}

func (r otpRepo) Attempt(ctx context.Context, id string, limit int, now time.Time) (storage.OTPIssuance, error) {
	o, err := r.live(ctx, id, now)
	if err != nil {
		return storage.OTPIssuance{}, err
	}
	if o.Attempts >= limit {
		return storage.OTPIssuance{}, storage.ErrExhausted
	}
	set(r.tx, &o.Attempts, o.Attempts+1)
	return *cloneOTP(o), nil
}

func (r otpRepo) Consume(ctx context.Context, id string, now time.Time) (storage.OTPIssuance, error) {
	o, err := r.live(ctx, id, now)
	if err != nil {
		return storage.OTPIssuance{}, err
	}
	set(r.tx, &o.ConsumedAt, now)
	return *cloneOTP(o), nil
}

// Sessions.

type sessionRepo struct{ *tx }

func (r sessionRepo) Create(ctx context.Context, s *storage.Session) error {
	if err := r.lockX(ctx, lkSession, s.ID); err != nil {
		return err
	}
	if _, ok := r.s.sessions.get(s.ID); ok {
		return storage.ErrDuplicate
	}
	if err := r.lockX(ctx, lkSessByAccount, s.AccountID); err != nil {
		return err
	}
	if err := r.lockX(ctx, lkSessByCred, s.CredentialID); err != nil {
		return err
	}
	tput(r.tx, &r.s.sessions, s.ID, cloneSession(s))
	appendIndex(r.tx, &r.s.sessByAcct, s.AccountID, s.ID)
	appendIndex(r.tx, &r.s.sessByCred, s.CredentialID, s.ID)
	r.watch(kindSession, s.ID, s.ExpiresAt)
	return nil
}

func (r sessionRepo) Get(ctx context.Context, id string) (storage.Session, error) {
	if err := r.lockS(ctx, lkSession, id); err != nil {
		return storage.Session{}, err
	}
	s, ok := r.s.sessions.get(id)
	if !ok {
		return storage.Session{}, storage.ErrNotFound
	}
	return *cloneSession(s), nil
}

func (r sessionRepo) ListActive(ctx context.Context, accountID string, now time.Time) ([]storage.Session, error) {
	if err := r.lockS(ctx, lkSessByAccount, accountID); err != nil {
		return nil, err
	}
	ids, _ := r.s.sessByAcct.get(accountID)
	var out []storage.Session
	for _, id := range ids {
		s, err := r.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if s.Active(now) {
			out = append(out, s)
		}
	}
	return out, nil
}

func (r sessionRepo) Revoke(ctx context.Context, id string, at time.Time) error {
	if err := r.lockX(ctx, lkSession, id); err != nil {
		return err
	}
	s, ok := r.s.sessions.get(id)
	if !ok {
		return storage.ErrNotFound
	}
	if !s.RevokedAt.IsZero() {
		return storage.ErrConflict
	}
	set(r.tx, &s.RevokedAt, at)
	return nil
}

func (r sessionRepo) RevokeByCredential(ctx context.Context, credentialID string, at time.Time) (int, error) {
	if err := r.lockS(ctx, lkSessByCred, credentialID); err != nil {
		return 0, err
	}
	ids, _ := r.s.sessByCred.get(credentialID)
	n := 0
	for _, id := range ids {
		if err := r.lockX(ctx, lkSession, id); err != nil {
			return n, err
		}
		if s, _ := r.s.sessions.get(id); s.RevokedAt.IsZero() {
			set(r.tx, &s.RevokedAt, at)
			n++
		}
	}
	return n, nil
}

// LockSigner takes the account exclusively, then the session's credential
// and the session shared: Revoke, RevokeByCredential and Credentials.Delete
// take them exclusively. The session's CredentialID never changes, so it is
// read before the session is locked, to keep the lock order.
func (r sessionRepo) LockSigner(ctx context.Context, accountID, id string) (storage.Session, error) {
	if _, err := (walletRepo{r.tx}).get(ctx, accountID, exclusive); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return storage.Session{}, err
	}
	peek, ok := r.s.sessions.get(id)
	if !ok {
		return storage.Session{}, storage.ErrNotFound
	}
	if _, err := (credRepo{r.tx}).get(ctx, peek.CredentialID, shared); err != nil {
		return storage.Session{}, err
	}
	s, err := r.Get(ctx, id)
	if err != nil {
		return storage.Session{}, err
	}
	if s.AccountID != accountID {
		return storage.Session{}, storage.ErrNotFound
	}
	return s, nil
}

// Pending requests.

type pendingRepo struct{ *tx }

func (r pendingRepo) Create(ctx context.Context, p *storage.PendingRequest) error {
	if err := r.lockX(ctx, lkPending, p.ID); err != nil {
		return err
	}
	if _, ok := r.s.pending.get(p.ID); ok {
		return storage.ErrDuplicate
	}
	if err := r.lockX(ctx, lkPendByAcct, p.AccountID); err != nil {
		return err
	}
	r.insert(p)
	return nil
}

func (r pendingRepo) insert(p *storage.PendingRequest) {
	tput(r.tx, &r.s.pending, p.ID, clonePending(p))
	appendIndex(r.tx, &r.s.pendByAcct, p.AccountID, p.ID)
	r.watch(kindPending, p.ID, p.ExpiresAt)
}

// CreateLimited holds the account's list of requests exclusively, reads
// each listed request under its shared lock (a consumption in flight is
// waited for) and drops from the list those that no longer count: swept,
// consumed or expired at p.CreatedAt. The list is the requests created
// since the last such pruning, so it stays near limit long.
func (r pendingRepo) CreateLimited(ctx context.Context, p *storage.PendingRequest, limit int) (time.Time, error) {
	if limit <= 0 {
		return time.Time{}, errors.New("memory: CreateLimited needs a positive limit")
	}
	if err := r.lockX(ctx, lkPending, p.ID); err != nil {
		return time.Time{}, err
	}
	if _, ok := r.s.pending.get(p.ID); ok {
		return time.Time{}, storage.ErrDuplicate
	}
	if err := r.lockX(ctx, lkPendByAcct, p.AccountID); err != nil {
		return time.Time{}, err
	}
	ids, _ := r.s.pendByAcct.get(p.AccountID)
	live := make([]string, 0, min(len(ids), limit)+1)
	var earliest time.Time
	for _, id := range ids {
		if err := r.lockS(ctx, lkPending, id); err != nil {
			return time.Time{}, err
		}
		q, ok := r.s.pending.get(id)
		if !ok || !q.ConsumedAt.IsZero() || !q.ExpiresAt.After(p.CreatedAt) {
			continue
		}
		live = append(live, id)
		if earliest.IsZero() || q.ExpiresAt.Before(earliest) {
			earliest = q.ExpiresAt
		}
	}
	if len(live) >= limit {
		if len(live) < len(ids) {
			tput(r.tx, &r.s.pendByAcct, p.AccountID, live)
		}
		return earliest, storage.ErrExhausted
	}
	if len(live) == 0 {
		tdel(r.tx, &r.s.pendByAcct, p.AccountID)
	} else if len(live) < len(ids) {
		tput(r.tx, &r.s.pendByAcct, p.AccountID, live)
	}
	r.insert(p)
	return time.Time{}, nil
}

func (r pendingRepo) Get(ctx context.Context, id string) (storage.PendingRequest, error) {
	if err := r.lockS(ctx, lkPending, id); err != nil {
		return storage.PendingRequest{}, err
	}
	p, ok := r.s.pending.get(id)
	if !ok {
		return storage.PendingRequest{}, storage.ErrNotFound
	}
	return copyPending(p), nil
}

func (r pendingRepo) Consume(ctx context.Context, id string, now time.Time) (storage.PendingRequest, error) {
	if err := r.lockX(ctx, lkPending, id); err != nil {
		return storage.PendingRequest{}, err
	}
	p, ok := r.s.pending.get(id)
	switch {
	case !ok:
		return storage.PendingRequest{}, storage.ErrNotFound
	case !p.ConsumedAt.IsZero():
		return storage.PendingRequest{}, storage.ErrConsumed
	case !now.Before(p.ExpiresAt):
		return storage.PendingRequest{}, storage.ErrExpired
	}
	set(r.tx, &p.ConsumedAt, now)
	return copyPending(p), nil
}

// Outbox. Every method holds the one outbox lock: exclusive to write,
// shared to read.

type outboxRepo struct{ *tx }

func (r outboxRepo) Append(ctx context.Context, e *storage.Event) error {
	if err := r.lockX(ctx, lkOutbox, ""); err != nil {
		return err
	}
	if _, ok := r.s.eventsByID[e.ID]; ok {
		return storage.ErrDuplicate
	}
	// Seq is never reused, also after a rollback: a gap is harmless and
	// keeps Seq increasing in commit order.
	r.s.seq++
	e.Seq = r.s.seq
	e.Attempts, e.NextAttemptAt, e.LeaseOwner, e.LeasedUntil, e.LastError, e.ParkedAt = 0, time.Time{}, "", time.Time{}, "", time.Time{}
	cp := cloneEvent(e)
	set(r.tx, &r.s.events, append(r.s.events, cp))
	put(r.tx, r.s.eventsByID, e.ID, cp)
	put(r.tx, r.s.eventsByAcct, e.AccountID, append(slices.Clip(r.s.eventsByAcct[e.AccountID]), cp))
	return nil
}

func (r outboxRepo) Lease(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]storage.Event, error) {
	if err := r.lockX(ctx, lkOutbox, ""); err != nil {
		return nil, err
	}
	var out []storage.Event
	held := map[string]bool{} // accounts with an earlier pending event
	for _, e := range r.s.events {
		if len(out) >= limit {
			break
		}
		if !e.DeliveredAt.IsZero() || !e.ParkedAt.IsZero() || held[e.AccountID] {
			continue
		}
		held[e.AccountID] = true
		if e.NextAttemptAt.After(now) || e.LeasedUntil.After(now) {
			continue
		}
		set(r.tx, &e.LeaseOwner, owner)
		set(r.tx, &e.LeasedUntil, now.Add(lease))
		out = append(out, *cloneEvent(e))
	}
	return out, nil
}

func (r outboxRepo) MarkDelivered(ctx context.Context, ids []string, at time.Time) error {
	if err := r.lockX(ctx, lkOutbox, ""); err != nil {
		return err
	}
	for _, id := range ids {
		if e, ok := r.s.eventsByID[id]; ok && e.DeliveredAt.IsZero() {
			set(r.tx, &e.DeliveredAt, at)
			set(r.tx, &e.LeaseOwner, "")
			set(r.tx, &e.LeasedUntil, time.Time{})
		}
	}
	return nil
}

// failed records a failed delivery of id under owner's lease.
func (r outboxRepo) failed(ctx context.Context, id, owner, reason string) (*storage.Event, error) {
	if err := r.lockX(ctx, lkOutbox, ""); err != nil {
		return nil, err
	}
	e, ok := r.s.eventsByID[id]
	if !ok || !e.DeliveredAt.IsZero() || !e.ParkedAt.IsZero() {
		return nil, storage.ErrNotFound
	}
	if e.LeaseOwner != owner {
		return nil, storage.ErrConflict
	}
	set(r.tx, &e.Attempts, e.Attempts+1)
	set(r.tx, &e.LastError, reason)
	set(r.tx, &e.LeaseOwner, "")
	set(r.tx, &e.LeasedUntil, time.Time{})
	return e, nil
}

func (r outboxRepo) Retry(ctx context.Context, id, owner string, next time.Time, reason string) error {
	e, err := r.failed(ctx, id, owner, reason)
	if err == nil {
		set(r.tx, &e.NextAttemptAt, next)
	}
	return err
}

func (r outboxRepo) Park(ctx context.Context, id, owner string, at time.Time, reason string) error {
	e, err := r.failed(ctx, id, owner, reason)
	if err == nil {
		set(r.tx, &e.ParkedAt, at)
	}
	return err
}

func (r outboxRepo) Parked(ctx context.Context, after int64, limit int) ([]storage.Event, error) {
	if err := r.lockS(ctx, lkOutbox, ""); err != nil {
		return nil, err
	}
	var out []storage.Event
	for _, e := range r.s.events {
		if len(out) >= limit {
			break
		}
		if e.Seq > after && !e.ParkedAt.IsZero() {
			out = append(out, *cloneEvent(e))
		}
	}
	return out, nil
}

func (r outboxRepo) Redrive(ctx context.Context, id string, now time.Time) error {
	if err := r.lockX(ctx, lkOutbox, ""); err != nil {
		return err
	}
	e, ok := r.s.eventsByID[id]
	if !ok || e.ParkedAt.IsZero() {
		return storage.ErrNotFound
	}
	set(r.tx, &e.ParkedAt, time.Time{})
	set(r.tx, &e.Attempts, 0)
	set(r.tx, &e.NextAttemptAt, now)
	return nil
}

func (r outboxRepo) ListByAccount(ctx context.Context, accountID string) ([]storage.Event, error) {
	if err := r.lockS(ctx, lkOutbox, ""); err != nil {
		return nil, err
	}
	evs := r.s.eventsByAcct[accountID]
	out := make([]storage.Event, 0, len(evs))
	for _, e := range evs {
		out = append(out, *cloneEvent(e))
	}
	return out, nil
}

// Rate limits.

type limitRepo struct{ *tx }

func (r limitRepo) Allow(ctx context.Context, key string, now time.Time, window time.Duration, limit int) (time.Duration, error) {
	if err := r.lockX(ctx, lkLimit, key); err != nil {
		return 0, err
	}
	w, ok := r.s.limits.get(key)
	if !ok || !now.Before(w.end) {
		w = newWindow(now, window)
		tput(r.tx, &r.s.limits, key, w)
		r.watch(kindLimit, key, now.Add(window))
	}
	if w.count >= limit {
		return w.end.Sub(now), nil
	}
	set(r.tx, &w.count, w.count+1)
	return 0, nil
}

func newWindow(now time.Time, d time.Duration) *window {
	return &window{end: now.Add(d)}
}

type idemRepo struct{ *tx }

// idemKey is the map key of (scope, key): the scope is length-prefixed, so
// no two pairs share one.
func idemKey(scope, key string) string {
	return strconv.Itoa(len(scope)) + ":" + scope + key
}

func cloneIdem(r *storage.IdempotencyRecord) *storage.IdempotencyRecord {
	c := *r
	c.Fingerprint = slices.Clone(r.Fingerprint)
	c.Body = slices.Clone(r.Body)
	if r.Header != nil {
		c.Header = make(map[string][]string, len(r.Header))
		for k, v := range r.Header {
			c.Header[k] = slices.Clone(v)
		}
	}
	return &c
}

func (r idemRepo) Begin(ctx context.Context, rec *storage.IdempotencyRecord, now time.Time) error {
	k := idemKey(rec.Scope, rec.Key)
	if err := r.lockX(ctx, lkIdem, k); err != nil {
		return err
	}
	if old, ok := r.s.idem.get(k); ok && old.ExpiresAt.After(now) {
		return storage.ErrDuplicate
	}
	tput(r.tx, &r.s.idem, k, cloneIdem(rec))
	r.watch(kindIdempotency, k, rec.ExpiresAt)
	return nil
}

func (r idemRepo) Get(ctx context.Context, scope, key string) (storage.IdempotencyRecord, error) {
	k := idemKey(scope, key)
	if err := r.lockS(ctx, lkIdem, k); err != nil {
		return storage.IdempotencyRecord{}, err
	}
	rec, ok := r.s.idem.get(k)
	if !ok {
		return storage.IdempotencyRecord{}, storage.ErrNotFound
	}
	return *cloneIdem(rec), nil
}

func (r idemRepo) Complete(ctx context.Context, rec *storage.IdempotencyRecord) error {
	k := idemKey(rec.Scope, rec.Key)
	if err := r.lockX(ctx, lkIdem, k); err != nil {
		return err
	}
	old, ok := r.s.idem.get(k)
	switch {
	case !ok:
		return storage.ErrNotFound
	case old.Token != rec.Token || old.State != storage.IdempotencyInProgress:
		return storage.ErrConflict
	}
	next := cloneIdem(old)
	next.State = storage.IdempotencyComplete
	next.Status = rec.Status
	next.Body = slices.Clone(rec.Body)
	next.Header = cloneIdem(rec).Header
	next.ExpiresAt = rec.ExpiresAt
	tput(r.tx, &r.s.idem, k, next)
	r.watch(kindIdempotency, k, next.ExpiresAt)
	return nil
}

func (r idemRepo) Release(ctx context.Context, scope, key, token string) error {
	k := idemKey(scope, key)
	if err := r.lockX(ctx, lkIdem, k); err != nil {
		return err
	}
	old, ok := r.s.idem.get(k)
	if !ok || old.Token != token || old.State != storage.IdempotencyInProgress {
		return storage.ErrNotFound
	}
	tdel(r.tx, &r.s.idem, k)
	return nil
}
