package storagetest

import (
	"context"
	"sync"

	"github.com/walletgate/walletgate/storage"
)

// Guard is a guard for a service's Config.Guard that a test switches: it
// records the id of every account it is asked about and answers the
// refusal last given to Set (nil, its zero value, admits). It is safe for
// concurrent use.
type Guard struct {
	mu      sync.Mutex
	refusal error
	asked   []string
}

// Wallet is the guard of an embedded wallet (walletauth's WalletGuard).
func (g *Guard) Wallet(_ context.Context, w storage.InternalAccount) error { return g.ask(w.ID) }

// Account is the guard of an external account (ownership's AccountGuard).
func (g *Guard) Account(_ context.Context, a storage.ExternalAccount) error { return g.ask(a.ID) }

func (g *Guard) ask(id string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked = append(g.asked, id)
	return g.refusal
}

// Set makes refusal the answer to every question from now on.
func (g *Guard) Set(refusal error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refusal = refusal
}

// Take returns the ids asked about, in order, since the last Take.
func (g *Guard) Take() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.asked
	g.asked = nil
	return out
}
