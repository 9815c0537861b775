package storage

import (
	"context"
	"errors"
	"time"
)

// ConsumeNow consumes pending request id at now ([PendingRequests.Consume])
// and reads it back, so that when it returns the consumption went through
// and its lock is held, whatever the store deferred: a decision taken after
// it (on a time read then) rests on the request being this transaction's.
// A failure of the consumption is a [*ConsumeError] for id, returned by
// whichever of the two calls carried it; the read-back of a request the
// transaction consumed cannot fail otherwise.
func ConsumeNow(ctx context.Context, tx Tx, id string, now time.Time) (PendingRequest, error) {
	if err := tx.PendingRequests().Consume(ctx, id, now); err != nil {
		return PendingRequest{}, err
	}
	p, err := tx.PendingRequests().Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		// Unreachable in a store that keeps the contract: a consumed
		// request stays until swept.
		return PendingRequest{}, &ConsumeError{ID: id, Err: err}
	}
	return p, err
}
