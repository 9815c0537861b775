package sandbox

import (
	"time"
)

// state is everything the simulator keeps outside the store. It is guarded
// by Simulator.mu.
type state struct {
	customers    map[string]*customer
	byPlatformID map[string]string // platformCustomerId -> customer id
	byUMA        map[string]string // lowercased UMA address -> customer id
	wallets      map[string]*wallet
	extMeta      map[string]*extMeta
	quotes       map[string]*quote
	txs          map[string]*transaction
	unsettled    map[string]*transaction
	cards        map[string]*card
	sca          map[string]*scaChallenge
	scaCustomers map[string]*scaCustomer // by customer id, see sca.go
	// approvalTxs names the transaction an approved payout was made as,
	// by approval id (see payout_approvals.go).
	approvalTxs map[string]string
}

func newState() *state {
	return &state{
		customers:    map[string]*customer{},
		byPlatformID: map[string]string{},
		byUMA:        map[string]string{},
		wallets:      map[string]*wallet{},
		extMeta:      map[string]*extMeta{},
		quotes:       map[string]*quote{},
		txs:          map[string]*transaction{},
		unsettled:    map[string]*transaction{},
		cards:        map[string]*card{},
		sca:          map[string]*scaChallenge{},
		approvalTxs:  map[string]string{},
	}
}

// wallet is the simulator's side of an embedded wallet: its balances by
// currency, in smallest units, and its privacy setting.
type wallet struct {
	balances       map[string]int64
	privateEnabled bool
	updatedAt      time.Time // of the last change made here
}

func (st *state) wallet(id string) *wallet {
	w := st.wallets[id]
	if w == nil {
		w = &wallet{balances: map[string]int64{}}
		st.wallets[id] = w
	}
	return w
}

// move changes the balance of an internal account; external accounts have
// no balance here and are ignored.
type move struct {
	account  string
	currency string
	amount   int64 // positive credits, negative debits
}

// step is one point of a transaction's timeline: at At it takes Status (and
// failure reason) and applies its moves, exactly once.
type step struct {
	at     time.Time
	status string
	reason string
	moves  []move
}

// settle applies every step whose time has come, in order. Every read and
// write of the state calls it first, so what a client sees is the timeline
// evaluated at the injected clock's now.
func (st *state) settle(now time.Time) {
	for id, tx := range st.unsettled {
		for tx.applied < len(tx.steps) && !now.Before(tx.steps[tx.applied].at) {
			st.apply(tx, tx.steps[tx.applied])
			tx.applied++
		}
		if tx.applied == len(tx.steps) {
			delete(st.unsettled, id)
		}
	}
}

func (st *state) apply(tx *transaction, s step) {
	for _, m := range s.moves {
		if isInternal(m.account) {
			st.wallet(m.account).balances[m.currency] += m.amount
		}
	}
	r := &tx.rec
	r.Status, r.FailureReason, r.UpdatedAt = s.status, s.reason, s.at
	if s.status == TxCompleted {
		at := s.at
		r.SettledAt = &at
	}
	if q := st.quotes[r.QuoteID]; q != nil {
		q.rec.Status, q.rec.UpdatedAt = quoteStatusOf(s.status), s.at
	}
}

// schedule stores tx and applies its steps due at now at once.
func (st *state) schedule(tx *transaction, now time.Time) {
	st.txs[tx.rec.ID] = tx
	st.unsettled[tx.rec.ID] = tx
	st.settle(now)
}
