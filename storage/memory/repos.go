package memory

import (
	"context"
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
	c := *p
	c.BodyDigest = slices.Clone(p.BodyDigest)
	c.Payload = slices.Clone(p.Payload)
	c.Data = slices.Clone(p.Data)
	return &c
}

func cloneEvent(e *storage.Event) *storage.Event {
	c := *e
	c.Payload = slices.Clone(e.Payload)
	return &c
}

// External accounts.

type extRepo struct{ *tx }

func (r extRepo) Create(_ context.Context, a *storage.ExternalAccount) error {
	if err := r.check(); err != nil {
		return err
	}
	if _, ok := r.s.ext[a.ID]; ok {
		return storage.ErrDuplicate
	}
	a.Version = 1
	put(r.tx, r.s.ext, a.ID, cloneExt(a))
	appendIndex(r.tx, r.s.extByCustomer, a.CustomerID, a.ID)
	return nil
}

func (r extRepo) Get(_ context.Context, id string) (storage.ExternalAccount, error) {
	if err := r.check(); err != nil {
		return storage.ExternalAccount{}, err
	}
	a, ok := r.s.ext[id]
	if !ok {
		return storage.ExternalAccount{}, storage.ErrNotFound
	}
	return *cloneExt(a), nil
}

// Lock is Get: the store serializes transactions, so the account is held.
func (r extRepo) Lock(ctx context.Context, id string) (storage.ExternalAccount, error) {
	return r.Get(ctx, id)
}

func (r extRepo) Update(_ context.Context, a *storage.ExternalAccount) error {
	if err := r.check(); err != nil {
		return err
	}
	cur, ok := r.s.ext[a.ID]
	if !ok {
		return storage.ErrNotFound
	}
	if cur.Version != a.Version {
		return storage.ErrConflict
	}
	if cur.CustomerID != a.CustomerID {
		removeIndex(r.tx, r.s.extByCustomer, cur.CustomerID, a.ID)
		appendIndex(r.tx, r.s.extByCustomer, a.CustomerID, a.ID)
	}
	a.Version++
	put(r.tx, r.s.ext, a.ID, cloneExt(a))
	return nil
}

func (r extRepo) ListByCustomer(_ context.Context, customerID string) ([]storage.ExternalAccount, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	ids := r.s.extByCustomer[customerID]
	out := make([]storage.ExternalAccount, 0, len(ids))
	for _, id := range ids {
		out = append(out, *cloneExt(r.s.ext[id]))
	}
	return out, nil
}

// Ownership challenges.

type challengeRepo struct{ *tx }

func (r challengeRepo) Put(_ context.Context, c *storage.OwnershipChallenge) error {
	if err := r.check(); err != nil {
		return err
	}
	cp := *c
	put(r.tx, r.s.challenges, c.AccountID, &cp)
	r.watch(kindChallenge, c.AccountID, c.ExpiresAt)
	return nil
}

func (r challengeRepo) Get(_ context.Context, accountID string) (storage.OwnershipChallenge, error) {
	if err := r.check(); err != nil {
		return storage.OwnershipChallenge{}, err
	}
	c, ok := r.s.challenges[accountID]
	if !ok {
		return storage.OwnershipChallenge{}, storage.ErrNotFound
	}
	return *c, nil
}

func (r challengeRepo) Consume(_ context.Context, accountID, challengeID string) (storage.OwnershipChallenge, error) {
	if err := r.check(); err != nil {
		return storage.OwnershipChallenge{}, err
	}
	c, ok := r.s.challenges[accountID]
	if !ok || c.ID != challengeID {
		return storage.OwnershipChallenge{}, storage.ErrNotFound
	}
	del(r.tx, r.s.challenges, accountID)
	return *c, nil
}

// Internal accounts.

type walletRepo struct{ *tx }

func (r walletRepo) Create(_ context.Context, a *storage.InternalAccount) error {
	if err := r.check(); err != nil {
		return err
	}
	if _, ok := r.s.wallets[a.ID]; ok {
		return storage.ErrDuplicate
	}
	a.Version = 1
	cp := *a
	put(r.tx, r.s.wallets, a.ID, &cp)
	appendIndex(r.tx, r.s.walletsByCust, a.CustomerID, a.ID)
	return nil
}

func (r walletRepo) Get(_ context.Context, id string) (storage.InternalAccount, error) {
	if err := r.check(); err != nil {
		return storage.InternalAccount{}, err
	}
	a, ok := r.s.wallets[id]
	if !ok {
		return storage.InternalAccount{}, storage.ErrNotFound
	}
	return *a, nil
}

func (r walletRepo) Update(_ context.Context, a *storage.InternalAccount) error {
	if err := r.check(); err != nil {
		return err
	}
	cur, ok := r.s.wallets[a.ID]
	if !ok {
		return storage.ErrNotFound
	}
	if cur.Version != a.Version {
		return storage.ErrConflict
	}
	if cur.CustomerID != a.CustomerID {
		removeIndex(r.tx, r.s.walletsByCust, cur.CustomerID, a.ID)
		appendIndex(r.tx, r.s.walletsByCust, a.CustomerID, a.ID)
	}
	a.Version++
	cp := *a
	put(r.tx, r.s.wallets, a.ID, &cp)
	return nil
}

// Lock is Get: transactions are serialized, so the account stays as read
// until this one ends.
func (r walletRepo) Lock(ctx context.Context, id string) (storage.InternalAccount, error) {
	return r.Get(ctx, id)
}

func (r walletRepo) ListByCustomer(_ context.Context, customerID string) ([]storage.InternalAccount, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	ids := r.s.walletsByCust[customerID]
	out := make([]storage.InternalAccount, 0, len(ids))
	for _, id := range ids {
		out = append(out, *r.s.wallets[id])
	}
	return out, nil
}

// Credentials.

type credRepo struct{ *tx }

// conflicts reports whether c would break a uniqueness rule against the stored
// credentials other than c itself.
func (r credRepo) conflicts(c *storage.Credential) bool {
	if c.Type == storage.Passkey && c.WebAuthn != nil {
		if owner, ok := r.s.webauthn[string(c.WebAuthn.CredentialID)]; ok && owner != c.ID {
			return true
		}
	}
	for _, id := range r.s.credsByAcct[c.AccountID] {
		if id == c.ID {
			continue
		}
		o := r.s.creds[id]
		switch {
		case o.Type != c.Type:
		case c.Type == storage.EmailOTP, c.Type == storage.SMSOTP:
			return true
		case c.Type == storage.OAuth && c.OAuth != nil && o.OAuth != nil && *c.OAuth == *o.OAuth:
			return true
		}
	}
	return false
}

func (r credRepo) index(c *storage.Credential) {
	if c.Type == storage.Passkey && c.WebAuthn != nil {
		put(r.tx, r.s.webauthn, string(c.WebAuthn.CredentialID), c.ID)
	}
}

func (r credRepo) unindex(c *storage.Credential) {
	if c.Type == storage.Passkey && c.WebAuthn != nil {
		del(r.tx, r.s.webauthn, string(c.WebAuthn.CredentialID))
	}
}

func (r credRepo) Create(_ context.Context, c *storage.Credential) error {
	if err := r.check(); err != nil {
		return err
	}
	if _, ok := r.s.creds[c.ID]; ok || r.conflicts(c) {
		return storage.ErrDuplicate
	}
	c.Version = 1
	cp := cloneCred(c)
	put(r.tx, r.s.creds, c.ID, cp)
	appendIndex(r.tx, r.s.credsByAcct, c.AccountID, c.ID)
	r.index(cp)
	return nil
}

func (r credRepo) Get(_ context.Context, id string) (storage.Credential, error) {
	if err := r.check(); err != nil {
		return storage.Credential{}, err
	}
	c, ok := r.s.creds[id]
	if !ok {
		return storage.Credential{}, storage.ErrNotFound
	}
	return *cloneCred(c), nil
}

func (r credRepo) Update(_ context.Context, c *storage.Credential) error {
	if err := r.check(); err != nil {
		return err
	}
	cur, ok := r.s.creds[c.ID]
	if !ok {
		return storage.ErrNotFound
	}
	if cur.Version != c.Version {
		return storage.ErrConflict
	}
	if r.conflicts(c) {
		return storage.ErrDuplicate
	}
	if cur.AccountID != c.AccountID {
		removeIndex(r.tx, r.s.credsByAcct, cur.AccountID, c.ID)
		appendIndex(r.tx, r.s.credsByAcct, c.AccountID, c.ID)
	}
	c.Version++
	cp := cloneCred(c)
	r.unindex(cur)
	r.index(cp)
	put(r.tx, r.s.creds, c.ID, cp)
	return nil
}

func (r credRepo) Delete(_ context.Context, id string) error {
	if err := r.check(); err != nil {
		return err
	}
	cur, ok := r.s.creds[id]
	if !ok {
		return storage.ErrNotFound
	}
	del(r.tx, r.s.creds, id)
	removeIndex(r.tx, r.s.credsByAcct, cur.AccountID, id)
	r.unindex(cur)
	return nil
}

func (r credRepo) ListByAccount(_ context.Context, accountID string) ([]storage.Credential, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	ids := r.s.credsByAcct[accountID]
	out := make([]storage.Credential, 0, len(ids))
	for _, id := range ids {
		out = append(out, *cloneCred(r.s.creds[id]))
	}
	return out, nil
}

func (r credRepo) FindByWebAuthnID(_ context.Context, credentialID []byte) (storage.Credential, error) {
	if err := r.check(); err != nil {
		return storage.Credential{}, err
	}
	id, ok := r.s.webauthn[string(credentialID)]
	if !ok {
		return storage.Credential{}, storage.ErrNotFound
	}
	return *cloneCred(r.s.creds[id]), nil
}

// Lock is Get: transactions are serialized, so the credential stays as read
// until this one ends.
func (r credRepo) Lock(ctx context.Context, id string) (storage.Credential, error) {
	return r.Get(ctx, id)
}

// LockEmail needs no bookkeeping: transactions are serialized.
func (r credRepo) LockEmail(context.Context, string) error {
	return r.check()
}

func (r credRepo) ListEmailOTPByEmail(_ context.Context, email string) ([]storage.Credential, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	// Credentials tied to an email are few per account and the memory store
	// serves one process; a linear scan keeps the store free of a second
	// index that every write would have to maintain.
	var out []storage.Credential
	for _, c := range r.s.creds {
		if c.Type == storage.EmailOTP && c.Email == email {
			out = append(out, *cloneCred(c))
		}
	}
	slices.SortFunc(out, func(a, b storage.Credential) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// OTP issuances.

type otpRepo struct{ *tx }

func (r otpRepo) Put(_ context.Context, o *storage.OTPIssuance) error {
	if err := r.check(); err != nil {
		return err
	}
	if prev, ok := r.s.otpByCred[o.CredentialID]; ok {
		del(r.tx, r.s.otp, prev)
	}
	if _, ok := r.s.otp[o.ID]; ok {
		return storage.ErrDuplicate
	}
	put(r.tx, r.s.otp, o.ID, cloneOTP(o))
	put(r.tx, r.s.otpByCred, o.CredentialID, o.ID)
	r.watch(kindOTP, o.ID, o.ExpiresAt)
	return nil
}

func (r otpRepo) GetByCredential(_ context.Context, credentialID string) (storage.OTPIssuance, error) {
	if err := r.check(); err != nil {
		return storage.OTPIssuance{}, err
	}
	id, ok := r.s.otpByCred[credentialID]
	if !ok {
		return storage.OTPIssuance{}, storage.ErrNotFound
	}
	return *cloneOTP(r.s.otp[id]), nil
}

func (r otpRepo) Attempt(_ context.Context, id string, limit int, now time.Time) (storage.OTPIssuance, error) {
	if err := r.check(); err != nil {
		return storage.OTPIssuance{}, err
	}
	o, ok := r.s.otp[id]
	switch {
	case !ok:
		return storage.OTPIssuance{}, storage.ErrNotFound
	case !o.ConsumedAt.IsZero():
		return storage.OTPIssuance{}, storage.ErrConsumed
	case !now.Before(o.ExpiresAt):
		return storage.OTPIssuance{}, storage.ErrExpired
	case o.Attempts >= limit:
		return storage.OTPIssuance{}, storage.ErrExhausted
	}
	set(r.tx, &o.Attempts, o.Attempts+1)
	return *cloneOTP(o), nil
}

func (r otpRepo) Consume(_ context.Context, id string, now time.Time) (storage.OTPIssuance, error) {
	if err := r.check(); err != nil {
		return storage.OTPIssuance{}, err
	}
	o, ok := r.s.otp[id]
	switch {
	case !ok:
		return storage.OTPIssuance{}, storage.ErrNotFound
	case !o.ConsumedAt.IsZero():
		return storage.OTPIssuance{}, storage.ErrConsumed
	case !now.Before(o.ExpiresAt):
		return storage.OTPIssuance{}, storage.ErrExpired
	}
	set(r.tx, &o.ConsumedAt, now)
	return *cloneOTP(o), nil
}

// Sessions.

type sessionRepo struct{ *tx }

func (r sessionRepo) Create(_ context.Context, s *storage.Session) error {
	if err := r.check(); err != nil {
		return err
	}
	if _, ok := r.s.sessions[s.ID]; ok {
		return storage.ErrDuplicate
	}
	put(r.tx, r.s.sessions, s.ID, cloneSession(s))
	appendIndex(r.tx, r.s.sessByAcct, s.AccountID, s.ID)
	appendIndex(r.tx, r.s.sessByCred, s.CredentialID, s.ID)
	r.watch(kindSession, s.ID, s.ExpiresAt)
	return nil
}

func (r sessionRepo) Get(_ context.Context, id string) (storage.Session, error) {
	if err := r.check(); err != nil {
		return storage.Session{}, err
	}
	s, ok := r.s.sessions[id]
	if !ok {
		return storage.Session{}, storage.ErrNotFound
	}
	return *cloneSession(s), nil
}

func (r sessionRepo) ListActive(_ context.Context, accountID string, now time.Time) ([]storage.Session, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	var out []storage.Session
	for _, id := range r.s.sessByAcct[accountID] {
		if s := r.s.sessions[id]; s.Active(now) {
			out = append(out, *cloneSession(s))
		}
	}
	return out, nil
}

func (r sessionRepo) Revoke(_ context.Context, id string, at time.Time) error {
	if err := r.check(); err != nil {
		return err
	}
	s, ok := r.s.sessions[id]
	if !ok {
		return storage.ErrNotFound
	}
	if !s.RevokedAt.IsZero() {
		return storage.ErrConflict
	}
	set(r.tx, &s.RevokedAt, at)
	return nil
}

func (r sessionRepo) RevokeByCredential(_ context.Context, credentialID string, at time.Time) (int, error) {
	if err := r.check(); err != nil {
		return 0, err
	}
	n := 0
	for _, id := range r.s.sessByCred[credentialID] {
		if s := r.s.sessions[id]; s.RevokedAt.IsZero() {
			set(r.tx, &s.RevokedAt, at)
			n++
		}
	}
	return n, nil
}

// Pending requests.

type pendingRepo struct{ *tx }

func (r pendingRepo) Create(_ context.Context, p *storage.PendingRequest) error {
	if err := r.check(); err != nil {
		return err
	}
	if _, ok := r.s.pending[p.ID]; ok {
		return storage.ErrDuplicate
	}
	put(r.tx, r.s.pending, p.ID, clonePending(p))
	r.watch(kindPending, p.ID, p.ExpiresAt)
	return nil
}

func (r pendingRepo) Get(_ context.Context, id string) (storage.PendingRequest, error) {
	if err := r.check(); err != nil {
		return storage.PendingRequest{}, err
	}
	p, ok := r.s.pending[id]
	if !ok {
		return storage.PendingRequest{}, storage.ErrNotFound
	}
	return *clonePending(p), nil
}

func (r pendingRepo) Consume(_ context.Context, id string, now time.Time) (storage.PendingRequest, error) {
	if err := r.check(); err != nil {
		return storage.PendingRequest{}, err
	}
	p, ok := r.s.pending[id]
	switch {
	case !ok:
		return storage.PendingRequest{}, storage.ErrNotFound
	case !p.ConsumedAt.IsZero():
		return storage.PendingRequest{}, storage.ErrConsumed
	case !now.Before(p.ExpiresAt):
		return storage.PendingRequest{}, storage.ErrExpired
	}
	set(r.tx, &p.ConsumedAt, now)
	return *clonePending(p), nil
}

// Outbox.

type outboxRepo struct{ *tx }

func (r outboxRepo) Append(_ context.Context, e *storage.Event) error {
	if err := r.check(); err != nil {
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
	appendIndex(r.tx, r.s.eventsByAcct, e.AccountID, cp)
	return nil
}

func (r outboxRepo) Lease(_ context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]storage.Event, error) {
	if err := r.check(); err != nil {
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

func (r outboxRepo) MarkDelivered(_ context.Context, ids []string, at time.Time) error {
	if err := r.check(); err != nil {
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
func (r outboxRepo) failed(id, owner, reason string) (*storage.Event, error) {
	if err := r.check(); err != nil {
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

func (r outboxRepo) Retry(_ context.Context, id, owner string, next time.Time, reason string) error {
	e, err := r.failed(id, owner, reason)
	if err == nil {
		set(r.tx, &e.NextAttemptAt, next)
	}
	return err
}

func (r outboxRepo) Park(_ context.Context, id, owner string, at time.Time, reason string) error {
	e, err := r.failed(id, owner, reason)
	if err == nil {
		set(r.tx, &e.ParkedAt, at)
	}
	return err
}

func (r outboxRepo) Parked(_ context.Context, after int64, limit int) ([]storage.Event, error) {
	if err := r.check(); err != nil {
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

func (r outboxRepo) Redrive(_ context.Context, id string, now time.Time) error {
	if err := r.check(); err != nil {
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

func (r outboxRepo) ListByAccount(_ context.Context, accountID string) ([]storage.Event, error) {
	if err := r.check(); err != nil {
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

func (r limitRepo) Allow(_ context.Context, key string, now time.Time, window time.Duration, limit int) (time.Duration, error) {
	if err := r.check(); err != nil {
		return 0, err
	}
	w, ok := r.s.limits[key]
	if !ok || !now.Before(w.end) {
		put(r.tx, r.s.limits, key, newWindow(now, window))
		r.watch(kindLimit, key, now.Add(window))
		w = r.s.limits[key]
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

func (r idemRepo) Begin(_ context.Context, rec *storage.IdempotencyRecord, now time.Time) error {
	if err := r.check(); err != nil {
		return err
	}
	k := idemKey(rec.Scope, rec.Key)
	if old, ok := r.s.idem[k]; ok && old.ExpiresAt.After(now) {
		return storage.ErrDuplicate
	}
	put(r.tx, r.s.idem, k, cloneIdem(rec))
	r.watch(kindIdempotency, k, rec.ExpiresAt)
	return nil
}

func (r idemRepo) Get(_ context.Context, scope, key string) (storage.IdempotencyRecord, error) {
	if err := r.check(); err != nil {
		return storage.IdempotencyRecord{}, err
	}
	rec, ok := r.s.idem[idemKey(scope, key)]
	if !ok {
		return storage.IdempotencyRecord{}, storage.ErrNotFound
	}
	return *cloneIdem(rec), nil
}

func (r idemRepo) Complete(_ context.Context, rec *storage.IdempotencyRecord) error {
	if err := r.check(); err != nil {
		return err
	}
	k := idemKey(rec.Scope, rec.Key)
	old, ok := r.s.idem[k]
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
	put(r.tx, r.s.idem, k, next)
	r.watch(kindIdempotency, k, next.ExpiresAt)
	return nil
}

func (r idemRepo) Release(_ context.Context, scope, key, token string) error {
	if err := r.check(); err != nil {
		return err
	}
	k := idemKey(scope, key)
	old, ok := r.s.idem[k]
	if !ok || old.Token != token || old.State != storage.IdempotencyInProgress {
		return storage.ErrNotFound
	}
	del(r.tx, r.s.idem, k)
	return nil
}
