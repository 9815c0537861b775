package storage

import (
	"context"
	"errors"
)

// ErrStandalone reports an operation that must commit on its own called
// inside a host's transaction (see [Standalone]). Test with errors.Is; the
// error that wraps it names the operation.
var ErrStandalone = errors.New("storage: the operation commits in a transaction of its own and refuses to run inside a host's transaction")

// standaloneKey is the context key of [Standalone].
type standaloneKey struct{}

// Standalone marks ctx for an operation whose writes must commit whatever
// the caller does next: an operation that writes when it refuses (a counted
// attempt at a one-time code, a lockout, a spent budget, a consumed
// challenge, an account made UNVERIFIED) or whose success already acted
// outside the store (a code mailed, which its rate limit counts). Were such
// an operation to run in a host's transaction, a host that rolls back on
// the error would erase the refusal's record, and the rule it keeps (at
// most so many guesses, one use of a challenge) would not hold.
//
// Every [Store.Atomic] under a marked context keeps that promise: a store
// that can run Atomic inside a transaction the host began (storage/postgres
// does, with its WithTx) refuses to, and returns an error wrapping
// ErrStandalone that names operation, having sent nothing; a store whose
// Atomic is always its own (storage/memory) ignores the mark. So a refusal
// is always recorded by a commit of the store's own, before the operation
// answers.
func Standalone(ctx context.Context, operation string) context.Context {
	return context.WithValue(ctx, standaloneKey{}, operation)
}

// StandaloneOperation returns the operation ctx was marked with by
// [Standalone], and whether it was.
func StandaloneOperation(ctx context.Context) (operation string, ok bool) {
	operation, ok = ctx.Value(standaloneKey{}).(string)
	return operation, ok
}
