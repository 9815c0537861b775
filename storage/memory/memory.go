// Package memory is the in-memory [storage.Store]: the embedded default of
// walletgate, for a single process.
//
// Transactions are serialized by one mutex, so every Atomic call sees a
// consistent state and compare-and-set and single-use consumption are trivially
// race-free. A transaction records an undo entry for every write and replays
// them in reverse on error or panic, so a rolled-back transaction leaves no
// trace. Records are copied on the way in and out: a caller never holds memory
// the store owns.
//
// Expired records are found through a min-heap on their expiry, so
// [Store.Sweep] touches only what has expired. Nothing is persisted: a restart
// forgets everything. Services with several replicas need the PostgreSQL store.
package memory

import (
	"container/heap"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// Store is an in-memory store. The zero value is not usable; call [New].
type Store struct {
	mu sync.Mutex

	ext           map[string]*storage.ExternalAccount
	extByCustomer map[string][]string
	challenges    map[string]*storage.OwnershipChallenge // by account id
	wallets       map[string]*storage.InternalAccount
	walletsByCust map[string][]string
	creds         map[string]*storage.Credential
	credsByAcct   map[string][]string
	webauthn      map[string]string // raw WebAuthn credential id -> credential id
	otp           map[string]*storage.OTPIssuance
	otpByCred     map[string]string
	sessions      map[string]*storage.Session
	sessByAcct    map[string][]string
	sessByCred    map[string][]string
	pending       map[string]*storage.PendingRequest
	events        []*storage.Event // in Seq order
	eventsByID    map[string]*storage.Event
	eventsByAcct  map[string][]*storage.Event
	seq           int64
	limits        map[string]*window
	idem          map[string]*storage.IdempotencyRecord // by idemKey(scope, key)
	expiry        expiryHeap
}

// window is a rate-limit window: hits counted until end.
type window struct {
	end   time.Time
	count int
}

// New returns an empty store.
func New() *Store {
	return &Store{
		ext:           map[string]*storage.ExternalAccount{},
		extByCustomer: map[string][]string{},
		challenges:    map[string]*storage.OwnershipChallenge{},
		wallets:       map[string]*storage.InternalAccount{},
		walletsByCust: map[string][]string{},
		creds:         map[string]*storage.Credential{},
		credsByAcct:   map[string][]string{},
		webauthn:      map[string]string{},
		otp:           map[string]*storage.OTPIssuance{},
		otpByCred:     map[string]string{},
		sessions:      map[string]*storage.Session{},
		sessByAcct:    map[string][]string{},
		sessByCred:    map[string][]string{},
		pending:       map[string]*storage.PendingRequest{},
		eventsByID:    map[string]*storage.Event{},
		eventsByAcct:  map[string][]*storage.Event{},
		limits:        map[string]*window{},
		idem:          map[string]*storage.IdempotencyRecord{},
	}
}

var _ storage.Store = (*Store)(nil)

// Atomic runs fn with exclusive access to the store. See [storage.Store]. A
// context already cancelled before fn runs, or cancelled while it runs, makes
// Atomic roll back and return the context's error.
func (s *Store) Atomic(ctx context.Context, fn func(storage.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &tx{s: s}
	committed := false
	defer func() {
		t.done = true
		if !committed {
			t.rollback()
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	committed = true
	return nil
}

// tx is one transaction: the store plus the undo log of its writes.
type tx struct {
	s    *Store
	undo []func()
	done bool
}

func (t *tx) rollback() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
	t.undo = nil
}

func (t *tx) check() error {
	if t.done {
		return storage.ErrTxDone
	}
	return nil
}

// put sets m[k] = v and records how to restore the previous entry.
func put[K comparable, V any](t *tx, m map[K]V, k K, v V) {
	old, had := m[k]
	m[k] = v
	t.undo = append(t.undo, func() {
		if had {
			m[k] = old
		} else {
			delete(m, k)
		}
	})
}

// del deletes m[k] and records how to restore it.
func del[K comparable, V any](t *tx, m map[K]V, k K) {
	old, had := m[k]
	if !had {
		return
	}
	delete(m, k)
	t.undo = append(t.undo, func() { m[k] = old })
}

// appendIndex appends id to the index slice m[k]. The slice is never modified
// in place, so restoring the old header undoes the append.
func appendIndex[V any](t *tx, m map[string][]V, k string, v V) {
	put(t, m, k, append(slices.Clip(m[k]), v))
}

// removeIndex removes id from the index slice m[k] into a new slice.
func removeIndex(t *tx, m map[string][]string, k, id string) {
	old := m[k]
	i := slices.Index(old, id)
	if i < 0 {
		return
	}
	next := make([]string, 0, len(old)-1)
	next = append(append(next, old[:i]...), old[i+1:]...)
	if len(next) == 0 {
		del(t, m, k)
		return
	}
	put(t, m, k, next)
}

// set assigns *p = v and records how to restore it.
func set[V any](t *tx, p *V, v V) {
	old := *p
	*p = v
	t.undo = append(t.undo, func() { *p = old })
}

func (t *tx) ExternalAccounts() storage.ExternalAccounts { return extRepo{t} }
func (t *tx) Challenges() storage.OwnershipChallenges    { return challengeRepo{t} }
func (t *tx) InternalAccounts() storage.InternalAccounts { return walletRepo{t} }
func (t *tx) Credentials() storage.Credentials           { return credRepo{t} }
func (t *tx) OTPIssuances() storage.OTPIssuances         { return otpRepo{t} }
func (t *tx) Sessions() storage.Sessions                 { return sessionRepo{t} }
func (t *tx) PendingRequests() storage.PendingRequests   { return pendingRepo{t} }
func (t *tx) Outbox() storage.Outbox                     { return outboxRepo{t} }
func (t *tx) RateLimits() storage.RateLimits             { return limitRepo{t} }
func (t *tx) Idempotency() storage.IdempotencyKeys       { return idemRepo{t} }

// Sweep deletes what expired before cutoff: pending requests, OTP issuances,
// ownership challenges, sessions, rate-limit windows, idempotency records,
// and events delivered
// before cutoff. See [storage.Store].
func (s *Store) Sweep(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for n < limit && len(s.expiry) > 0 && s.expiry[0].at.Before(cutoff) {
		e := heap.Pop(&s.expiry).(expiryEntry)
		if s.expire(e, cutoff) {
			n++
		}
	}
	for n < limit && len(s.events) > 0 {
		ev := s.events[0]
		if ev.DeliveredAt.IsZero() || !ev.DeliveredAt.Before(cutoff) {
			break
		}
		s.events[0] = nil
		s.events = s.events[1:]
		delete(s.eventsByID, ev.ID)
		acct := s.eventsByAcct[ev.AccountID]
		if i := slices.Index(acct, ev); i >= 0 {
			acct = slices.Delete(slices.Clone(acct), i, i+1)
		}
		if len(acct) == 0 {
			delete(s.eventsByAcct, ev.AccountID)
		} else {
			s.eventsByAcct[ev.AccountID] = acct
		}
		n++
	}
	return n, nil
}

// expire deletes the record e points at when the record itself expired before
// cutoff. Entries are not removed when records are consumed, superseded or
// extended, so an entry may be stale: the record's own expiry decides.
func (s *Store) expire(e expiryEntry, cutoff time.Time) bool {
	switch e.kind {
	case kindPending:
		p, ok := s.pending[e.key]
		if !ok || !p.ExpiresAt.Before(cutoff) {
			return false
		}
		delete(s.pending, e.key)
	case kindOTP:
		o, ok := s.otp[e.key]
		if !ok || !o.ExpiresAt.Before(cutoff) {
			return false
		}
		delete(s.otp, e.key)
		if s.otpByCred[o.CredentialID] == e.key {
			delete(s.otpByCred, o.CredentialID)
		}
	case kindChallenge:
		c, ok := s.challenges[e.key]
		if !ok || !c.ExpiresAt.Before(cutoff) {
			return false
		}
		delete(s.challenges, e.key)
	case kindSession:
		ss, ok := s.sessions[e.key]
		if !ok || !ss.ExpiresAt.Before(cutoff) {
			return false
		}
		delete(s.sessions, e.key)
		s.sessByAcct[ss.AccountID] = without(s.sessByAcct, ss.AccountID, e.key)
		s.sessByCred[ss.CredentialID] = without(s.sessByCred, ss.CredentialID, e.key)
	case kindLimit:
		w, ok := s.limits[e.key]
		if !ok || !w.end.Before(cutoff) {
			return false
		}
		delete(s.limits, e.key)
	case kindIdempotency:
		r, ok := s.idem[e.key]
		if !ok || !r.ExpiresAt.Before(cutoff) {
			return false
		}
		delete(s.idem, e.key)
	}
	return true
}

// without returns m[k] minus id, deleting the key when nothing is left. It is
// used outside transactions only.
func without(m map[string][]string, k, id string) []string {
	next := slices.DeleteFunc(slices.Clone(m[k]), func(s string) bool { return s == id })
	if len(next) == 0 {
		delete(m, k)
		return nil
	}
	return next
}

type recordKind uint8

const (
	kindPending recordKind = iota
	kindOTP
	kindChallenge
	kindSession
	kindLimit
	kindIdempotency
)

type expiryEntry struct {
	at   time.Time
	key  string
	kind recordKind
}

type expiryHeap []expiryEntry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiryEntry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// watch schedules a check of a record at its expiry. A rolled-back write
// leaves its entry behind; the entry is stale and ignored by Sweep.
func (t *tx) watch(kind recordKind, key string, at time.Time) {
	heap.Push(&t.s.expiry, expiryEntry{at: at, key: key, kind: kind})
}
