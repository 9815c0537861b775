package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// The kinds of the simulator's records ([storage.Records]). Everything the
// simulator knows beside the library's own records is one of them, so every
// simulator on one store (replicas on one PostgreSQL database) is one
// sandbox, and what an operation decides commits with what it writes.
const (
	kindCustomer   = "sandbox.customer"             // by id; all in one group, for the list
	kindPlatformID = "sandbox.customer.platform-id" // by platformCustomerId: its customer (unique)
	kindUMA        = "sandbox.customer.uma"         // by lowercased UMA address: its customer (unique)
	kindWallet     = "sandbox.wallet"               // by internal account id: balances, privacy
	kindExternal   = "sandbox.external-account"     // by id, grouped by customer: what the store's record lacks
	kindQuote      = "sandbox.quote"                // by id
	kindTx         = "sandbox.transaction"          // by id, grouped by customer
	kindCard       = "sandbox.card"                 // by id
	kindSCA        = "sandbox.sca-challenge"        // by external account id: the trust challenge
	kindSCAOf      = "sandbox.sca-customer"         // by customer id
	kindApproved   = "sandbox.approval-payout"      // by payout approval id: the transaction it was made as
	kindClock      = "sandbox.clock"                // "offset": the sum of the clock's advances
)

// state is one store transaction's view of the simulator's records: every
// record read is decoded once and kept, and the records the transaction
// changed or added are written back when its function returns (flush). A
// state that writes holds every record it reads until the transaction
// ends ([storage.Records.Lock]), so what it decided on is what it writes
// over; a read-only one takes no lock of its own.
type state struct {
	ctx   context.Context
	tx    storage.Tx
	now   time.Time
	write bool
	rows  map[rowKey]*row
	order []*row
}

type rowKey struct{ kind, key string }

// row is a record of the transaction and its decoded value, a pointer
// that the simulator's code changes in place.
type row struct {
	rec   storage.Record
	val   any
	fresh bool // added by this transaction: created on flush
}

func newState(ctx context.Context, tx storage.Tx, now time.Time, write bool) *state {
	return &state{ctx: ctx, tx: tx, now: now, write: write, rows: map[rowKey]*row{}}
}

// atomic runs fn on a state that writes, in one store transaction at the
// simulator's now, and writes back what fn changed when it returns nil or
// a refusal made by committing.
func (s *Simulator) atomic(ctx context.Context, fn func(st *state) error) error {
	var refused error
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		refused = nil
		st := newState(ctx, tx, s.now(), true)
		if err := fn(st); err != nil {
			var c *committed
			if !errors.As(err, &c) {
				return err
			}
			refused = c.err
		}
		return st.flush()
	})
	if err != nil {
		return apierror.As(apierror.From(err))
	}
	if refused != nil {
		return refused
	}
	return nil
}

// committed is a refusal whose writes commit all the same: an expired
// challenge dropped as its code is refused.
type committed struct{ err error }

func (c *committed) Error() string { return c.err.Error() }
func (c *committed) Unwrap() error { return c.err }

// committing returns err as a refusal of fn that commits what fn wrote.
func committing(err error) error { return &committed{err} }

// read runs fn on a read-only state, in one store transaction.
func (s *Simulator) read(ctx context.Context, fn func(st *state) error) error {
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		return fn(newState(ctx, tx, s.now(), false))
	})
	if err != nil {
		return apierror.As(apierror.From(err))
	}
	return nil
}

// load returns the value of the record kind/key, decoded into a T the
// state keeps: storage.ErrNotFound when there is none.
func load[T any](st *state, kind, key string) (*T, error) {
	if r := st.rows[rowKey{kind, key}]; r != nil {
		return r.val.(*T), nil
	}
	var rec storage.Record
	var err error
	if st.write {
		rec, err = st.tx.Records().Lock(st.ctx, kind, key)
	} else {
		rec, err = st.tx.Records().Get(st.ctx, kind, key)
	}
	if err != nil {
		return nil, err
	}
	return keep[T](st, rec)
}

// keep decodes rec into the state, or returns the value it holds already.
func keep[T any](st *state, rec storage.Record) (*T, error) {
	k := rowKey{rec.Kind, rec.Key}
	if r := st.rows[k]; r != nil {
		return r.val.(*T), nil
	}
	v := new(T)
	if err := json.Unmarshal(rec.Value, v); err != nil {
		return nil, apierror.Internal(fmt.Errorf("sandbox: record %s %s: %w", rec.Kind, rec.Key, err))
	}
	r := &row{rec: rec, val: v}
	st.rows[k] = r
	st.order = append(st.order, r)
	return v, nil
}

// list returns the values of the records of kind in group, in creation
// order, then those this transaction added.
func list[T any](st *state, kind, group string) ([]*T, error) {
	recs, err := st.tx.Records().List(st.ctx, kind, group)
	if err != nil {
		return nil, err
	}
	out := make([]*T, 0, len(recs))
	for _, rec := range recs {
		v, err := keep[T](st, rec)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	for _, r := range st.order {
		if r.fresh && r.rec.Kind == kind && r.rec.Group == group {
			out = append(out, r.val.(*T))
		}
	}
	return out, nil
}

// add puts a new record kind/key of group with value v into the state; it
// is created on flush (ErrDuplicate then fails the transaction).
func add[T any](st *state, kind, key, group string, v *T) {
	r := &row{rec: storage.Record{Kind: kind, Key: key, Group: group, CreatedAt: st.now}, val: v, fresh: true}
	st.rows[rowKey{kind, key}] = r
	st.order = append(st.order, r)
}

// reserve makes the unique value kind/key owner's, in the store: a
// uniqueness rule of the simulator (a platformCustomerId, a UMA address).
// ErrDuplicate when another owner holds it. A value given back (its owner
// empty) is taken again; one never reserved is created, and of concurrent
// creations one commits.
func (st *state) reserve(kind, key, owner string) error {
	r, err := load[reservation](st, kind, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		// Created at once, not on flush, so that a concurrent reservation
		// of the value answers ErrDuplicate here, for the caller to name.
		v, err := json.Marshal(reservation{Owner: owner})
		if err != nil {
			return apierror.Internal(err)
		}
		return st.tx.Records().Create(st.ctx, &storage.Record{Kind: kind, Key: key, Value: v, CreatedAt: st.now})
	case err != nil:
		return err
	case r.Owner != "" && r.Owner != owner:
		return storage.ErrDuplicate
	}
	r.Owner = owner
	return nil
}

// reservation is the value of a uniqueness record: who holds the value.
type reservation struct {
	Owner string `json:"owner"`
}

// owner returns who holds the unique value kind/key, or "".
func (st *state) owner(kind, key string) (string, error) {
	r, err := load[reservation](st, kind, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return "", nil
	case err != nil:
		return "", err
	}
	return r.Owner, nil
}

// flush writes the records the transaction added or changed.
func (st *state) flush() error {
	for _, r := range st.order {
		v, err := json.Marshal(r.val)
		if err != nil {
			return apierror.Internal(err)
		}
		switch {
		case r.fresh:
			r.rec.Value = v
			if err := st.tx.Records().Create(st.ctx, &r.rec); err != nil {
				return err
			}
			r.fresh = false
		case !bytes.Equal(v, r.rec.Value):
			if !st.write {
				return apierror.Internal(fmt.Errorf("sandbox: a read-only transaction changed record %s %s", r.rec.Kind, r.rec.Key))
			}
			r.rec.Value = v
			if err := st.tx.Records().Update(st.ctx, &r.rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// wallet is the simulator's side of an embedded wallet: its balances by
// currency, in smallest units, its privacy setting, and the moves of its
// transactions' later steps, which count from their time on.
type wallet struct {
	Balances       map[string]int64 `json:"balances"`
	PrivateEnabled bool             `json:"privateEnabled,omitempty"`
	UpdatedAt      time.Time        `json:"updatedAt,omitzero"` // of the last change made here
	Due            []dueMove        `json:"due,omitempty"`
}

// dueMove is a move of a transaction's step that comes after the
// transaction was made.
type dueMove struct {
	At       time.Time `json:"at"`
	Currency string    `json:"currency"`
	Amount   int64     `json:"amount"`
}

// wallet returns the wallet id as of now, its due moves applied: a new one
// when it has none yet.
func (st *state) wallet(id string) (*wallet, error) {
	w, err := load[wallet](st, kindWallet, id)
	if errors.Is(err, storage.ErrNotFound) {
		w = &wallet{Balances: map[string]int64{}}
		add(st, kindWallet, id, "", w)
		err = nil
	}
	if err != nil {
		return nil, err
	}
	if w.Balances == nil {
		w.Balances = map[string]int64{}
	}
	kept := w.Due[:0]
	for _, m := range w.Due {
		if st.now.Before(m.At) {
			kept = append(kept, m)
			continue
		}
		w.Balances[m.Currency] += m.Amount
	}
	w.Due = kept
	if len(w.Due) == 0 {
		w.Due = nil
	}
	return w, nil
}

// move changes the balance of an internal account; external accounts have
// no balance here and are ignored.
type move struct {
	Account  string `json:"account"`
	Currency string `json:"currency"`
	Amount   int64  `json:"amount"` // positive credits, negative debits
}

// step is one point of a transaction's timeline: at At it takes Status (and
// failure reason) and applies its moves, exactly once.
type step struct {
	At     time.Time `json:"at"`
	Status string    `json:"status"`
	Reason string    `json:"reason,omitempty"`
	Moves  []move    `json:"moves,omitempty"`
}

// schedule stores the new transaction tx and its timeline: the moves of
// the steps due at now change the wallets at once, the others when their
// time comes (a wallet's due moves).
func (st *state) schedule(tx *transaction) error {
	for _, s := range tx.Steps {
		for _, m := range s.Moves {
			if !isInternal(m.Account) {
				continue
			}
			w, err := st.wallet(m.Account)
			if err != nil {
				return err
			}
			if st.now.Before(s.At) {
				w.Due = append(w.Due, dueMove{At: s.At, Currency: m.Currency, Amount: m.Amount})
			} else {
				w.Balances[m.Currency] += m.Amount
			}
		}
	}
	add(st, kindTx, tx.Rec.ID, tx.Rec.CustomerID, tx)
	return nil
}

// transaction returns the transaction id: 404 TRANSACTION_NOT_FOUND when
// there is none.
func (st *state) transaction(id string) (*transaction, error) {
	tx, err := load[transaction](st, kindTx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, apierror.New(apierror.TransactionNotFound, "transaction %q not found", id)
	}
	return tx, err
}
