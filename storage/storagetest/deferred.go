package storagetest

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// deferFixture is what every case of testDeferred starts from, committed:
// one record of every kind (seed) and an idempotency reservation.
type deferFixture struct {
	*world
	idem storage.IdempotencyRecord
}

func newDeferFixture(t *testing.T, s storage.Store) *deferFixture {
	t.Helper()
	f := &deferFixture{world: seed(t, s), idem: newIdem(t, "Platform:a", id(t, "Key"))}
	run(t, s, func(tx storage.Tx) error { return tx.Idempotency().Begin(t.Context(), &f.idem, t0) })
	return f
}

// deferCase is one method that writes. write makes a write that succeeds
// and seen reads it back in the same transaction (it fails when the write
// is not visible). before and fail make a write that fails, whose error
// is wanted.
type deferCase struct {
	name   string
	write  func(ctx context.Context, tx storage.Tx, f *deferFixture) error
	seen   func(ctx context.Context, tx storage.Tx, f *deferFixture) error
	before func(ctx context.Context, tx storage.Tx, f *deferFixture) error
	fail   func(ctx context.Context, tx storage.Tx, f *deferFixture) error
	wanted func(error) bool
	want   string
}

// is and as build a deferCase's wanted.
func is(target error) (func(error) bool, string) {
	return func(err error) bool { return errors.Is(err, target) }, target.Error()
}

func as[E error](name string) (func(error) bool, string) {
	return func(err error) bool { var e E; return errors.As(err, &e) }, "a " + name
}

// freshID returns a new id with prefix.
func freshID(prefix string) string {
	s, err := storage.NewID(rand.Reader, prefix)
	if err != nil {
		panic(err)
	}
	return s
}

// testDeferred proves, for every method that writes, the rule of writes a
// store may defer: a later call of the same transaction sees the write,
// and a write that fails is reported by that call, a later call of the
// transaction or Atomic, never later, with the whole transaction rolled
// back. Each failing write is made after a write of another table, which
// must not commit, and the transaction's function returns every error
// unexamined, as callers do.
func testDeferred(t *testing.T, newStore Factory) {
	s := newStore(t)
	for _, c := range deferCases() {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			f := newDeferFixture(t, s)
			if c.write != nil {
				err := s.Atomic(ctx, func(tx storage.Tx) error {
					if err := c.write(ctx, tx, f); err != nil {
						return err
					}
					if err := c.seen(ctx, tx, f); err != nil {
						return err
					}
					return errRollback
				})
				wantErr(t, "the write, read back in its transaction", err, errRollback)
			}
			if c.fail == nil {
				return
			}
			// The failure is reported by a later call of the transaction
			// or, when the transaction makes none, by Atomic.
			for _, later := range []bool{true, false} {
				marker := storage.InternalAccount{ID: id(t, "InternalAccount"), CustomerID: id(t, "Customer"), CreatedAt: t0, UpdatedAt: t0}
				err := s.Atomic(ctx, func(tx storage.Tx) error {
					if err := tx.InternalAccounts().Create(ctx, &marker); err != nil {
						t.Fatalf("the marker write: %v", err)
					}
					if c.before != nil {
						if err := c.before(ctx, tx, f); err != nil {
							return err
						}
					}
					if err := c.fail(ctx, tx, f); err != nil || !later {
						return err
					}
					_, err := tx.InternalAccounts().Get(ctx, marker.ID)
					return err
				})
				if err == nil {
					t.Fatalf("later call %t: Atomic returned nil for a transaction whose write failed; want %s", later, c.want)
				}
				if !c.wanted(err) {
					t.Fatalf("later call %t: Atomic: %v, want %s", later, err, c.want)
				}
				run(t, s, func(tx storage.Tx) error {
					_, err := tx.InternalAccounts().Get(ctx, marker.ID)
					wantErr(t, "the marker after the failed transaction", err, storage.ErrNotFound)
					return nil
				})
			}
		})
	}
}

// deferCases lists a case for every method of the contract that writes.
func deferCases() []deferCase {
	type ctxTx = storage.Tx
	var cases []deferCase
	add := func(c deferCase, wanted func(error) bool, want string) {
		c.wanted, c.want = wanted, want
		cases = append(cases, c)
	}
	dup, dupName := is(storage.ErrDuplicate)
	conflict, conflictName := is(storage.ErrConflict)
	notFound, notFoundName := is(storage.ErrNotFound)
	consumeErr, consumeName := as[*storage.ConsumeError]("*storage.ConsumeError")
	limited, limitedName := as[*storage.LimitError]("*storage.LimitError")
	throttled, throttledName := as[*storage.RateLimitError]("*storage.RateLimitError")
	fresh := freshID

	add(deferCase{name: "ExternalAccounts.Create",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a := f.ext
			a.ID = fresh("ExternalAccount")
			if err := tx.ExternalAccounts().Create(ctx, &a); err != nil {
				return err
			}
			_, err := tx.ExternalAccounts().Get(ctx, a.ID)
			return err
		},
		seen: noop,
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a := f.ext
			return tx.ExternalAccounts().Create(ctx, &a)
		}}, dup, dupName)
	add(deferCase{name: "ExternalAccounts.Update",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a := f.ext
			a.Status = storage.StatusActive
			return tx.ExternalAccounts().Update(ctx, &a)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a, err := tx.ExternalAccounts().Get(ctx, f.ext.ID)
			return seenIf(err, a.Status == storage.StatusActive, "the updated external account")
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a := f.ext
			a.Version++
			return tx.ExternalAccounts().Update(ctx, &a)
		}}, conflict, conflictName)
	add(deferCase{name: "Challenges.Put",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			c := f.chal
			c.ID = fresh("Challenge")
			f.chal = c
			return tx.Challenges().Put(ctx, &c)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			c, err := tx.Challenges().Get(ctx, f.ext.ID)
			return seenIf(err, c.ID == f.chal.ID, "the new challenge")
		}}, nil, "")
	add(deferCase{name: "Challenges.Consume",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			_, err := tx.Challenges().Consume(ctx, f.ext.ID, f.chal.ID)
			return err
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			_, err := tx.Challenges().Get(ctx, f.ext.ID)
			return seenIf(nil, errors.Is(err, storage.ErrNotFound), "the consumed challenge gone")
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			_, err := tx.Challenges().Consume(ctx, f.ext.ID, fresh("Challenge"))
			return err
		}}, notFound, notFoundName)
	add(deferCase{name: "InternalAccounts.Create",
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a := f.wallet
			return tx.InternalAccounts().Create(ctx, &a)
		}}, dup, dupName)
	add(deferCase{name: "InternalAccounts.Update",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a := f.wallet
			a.Email = "new@example.com"
			return tx.InternalAccounts().Update(ctx, &a)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a, err := tx.InternalAccounts().Get(ctx, f.wallet.ID)
			return seenIf(err, a.Email == "new@example.com", "the updated wallet")
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a := f.wallet
			a.Version++
			return tx.InternalAccounts().Update(ctx, &a)
		}}, conflict, conflictName)
	add(deferCase{name: "InternalAccounts.MarkSecurityChanged",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			if _, err := tx.InternalAccounts().Lock(ctx, f.wallet.ID); err != nil {
				return err
			}
			return tx.InternalAccounts().MarkSecurityChanged(ctx, f.wallet.ID, t0.Add(time.Hour))
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a, err := tx.InternalAccounts().Get(ctx, f.wallet.ID)
			return seenIf(err, a.SecurityChangedAt.Equal(t0.Add(time.Hour)) && a.UpdatedAt.Equal(t0.Add(time.Hour)) &&
				a.Version == f.wallet.Version+1, "the wallet's security change")
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.InternalAccounts().MarkSecurityChanged(ctx, fresh("InternalAccount"), t0)
		}}, notFound, notFoundName)
	add(deferCase{name: "Credentials.Create",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			c := storage.Credential{ID: fresh("AuthMethod"), AccountID: f.wallet.ID, Type: storage.OAuth, Nickname: "ada",
				CreatedAt: t0, UpdatedAt: t0, OAuth: &storage.OAuthIdentity{Issuer: "https://idp.example", Audience: "a", Subject: "s"}}
			if err := tx.Credentials().Create(ctx, &c); err != nil {
				return err
			}
			list, err := tx.Credentials().ListByAccount(ctx, f.wallet.ID)
			return seenIf(err, len(list) == 2, "the new credential")
		},
		seen: noop,
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			c := f.cred
			c.ID = fresh("AuthMethod") // the same passkey again
			return tx.Credentials().Create(ctx, &c)
		}}, dup, dupName)
	add(deferCase{name: "Credentials.Update",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			c := f.cred
			c.Nickname = "new"
			return tx.Credentials().Update(ctx, &c)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			c, err := tx.Credentials().Get(ctx, f.cred.ID)
			return seenIf(err, c.Nickname == "new", "the updated credential")
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			c := f.cred
			c.Version++
			return tx.Credentials().Update(ctx, &c)
		}}, conflict, conflictName)
	add(deferCase{name: "Credentials.Delete",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.Credentials().Delete(ctx, f.cred.ID)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			_, err := tx.Credentials().Get(ctx, f.cred.ID)
			return seenIf(nil, errors.Is(err, storage.ErrNotFound), "the deleted credential gone")
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.Credentials().Delete(ctx, fresh("AuthMethod"))
		}}, notFound, notFoundName)
	add(deferCase{name: "Credentials.Lock with an attempt",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			l, err := tx.Credentials().Lock(ctx, f.cred.ID, &storage.OTPAttempt{Limit: 5, Now: t0, Key: "budget:" + f.cred.ID,
				Window: time.Hour, Budget: 10})
			return seenIf(err, l.Reserved != nil, "a reserved attempt")
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			o, err := Issuance(ctx, tx, f.cred.ID)
			return seenIf(err, o != nil && o.Attempts == 1, "the attempt counted")
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			_, err := tx.Credentials().Lock(ctx, fresh("AuthMethod"), &storage.OTPAttempt{Limit: 5, Now: t0, Key: "k",
				Window: time.Hour, Budget: 10})
			return err
		}}, notFound, notFoundName)
	add(deferCase{name: "OTPIssuances.Put",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			o := f.otp
			o.ID = fresh("OTP")
			f.otp = o
			return tx.OTPIssuances().Put(ctx, &o)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			o, err := Issuance(ctx, tx, f.cred.ID)
			return seenIf(err, o != nil && o.ID == f.otp.ID, "the new issuance")
		}}, nil, "")
	add(deferCase{name: "OTPIssuances.Consume",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.OTPIssuances().Consume(ctx, f.otp.ID, t0)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			o, err := Issuance(ctx, tx, f.cred.ID)
			return seenIf(err, o != nil && !o.ConsumedAt.IsZero(), "the consumed issuance")
		},
		before: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.OTPIssuances().Consume(ctx, f.otp.ID, t0)
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.OTPIssuances().Consume(ctx, f.otp.ID, t0)
		}}, consumeErr, consumeName)
	add(deferCase{name: "Sessions.Create",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			s := f.session
			s.ID = fresh("Session")
			if err := tx.Sessions().Create(ctx, &s); err != nil {
				return err
			}
			_, err := tx.Sessions().Get(ctx, s.ID)
			return err
		},
		seen: noop,
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			s := f.session
			return tx.Sessions().Create(ctx, &s)
		}}, dup, dupName)
	add(deferCase{name: "Sessions.Revoke",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.Sessions().Revoke(ctx, f.session.ID, t0)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			s, err := tx.Sessions().Get(ctx, f.session.ID)
			return seenIf(err, !s.RevokedAt.IsZero(), "the revoked session")
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.Sessions().Revoke(ctx, fresh("Session"), t0)
		}}, notFound, notFoundName)
	add(deferCase{name: "Sessions.RevokeByCredential",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			n, err := tx.Sessions().RevokeByCredential(ctx, f.cred.ID, t0)
			return seenIf(err, n == 1, "one session revoked")
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			s, err := tx.Sessions().Get(ctx, f.session.ID)
			return seenIf(err, !s.RevokedAt.IsZero(), "the revoked session")
		}}, nil, "")
	add(deferCase{name: "PendingRequests.Create within an account's quota",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			p := f.pending
			p.ID = fresh("Request")
			if err := tx.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 10}); err != nil {
				return err
			}
			_, err := tx.PendingRequests().Get(ctx, p.ID)
			return err
		},
		seen: noop,
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			p := f.pending
			p.ID = fresh("Request")
			return tx.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1})
		}}, limited, limitedName)
	add(deferCase{name: "PendingRequests.Create of an id that exists",
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			p := f.pending
			return tx.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 10})
		}}, dup, dupName)
	add(deferCase{name: "PendingRequests.Create within a scope's quota",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			p := f.pending
			p.ID = fresh("Request")
			if err := tx.PendingRequests().Create(ctx, &p, storage.Quota{Scope: "scope:" + f.wallet.ID, Limit: 2}); err != nil {
				return err
			}
			_, err := tx.PendingRequests().Get(ctx, p.ID)
			return err
		},
		seen: noop,
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			p := f.pending
			return tx.PendingRequests().Create(ctx, &p, storage.Quota{Scope: "scope:" + f.wallet.ID, Limit: 2})
		}}, dup, dupName)
	add(deferCase{name: "PendingRequests.Consume",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.PendingRequests().Consume(ctx, f.pending.ID, t0)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			p, err := tx.PendingRequests().Get(ctx, f.pending.ID)
			return seenIf(err, !p.ConsumedAt.IsZero(), "the consumed request")
		},
		before: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.PendingRequests().Consume(ctx, f.pending.ID, t0)
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.PendingRequests().Consume(ctx, f.pending.ID, t0)
		}}, consumeErr, consumeName)
	add(deferCase{name: "Outbox.Append",
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			e := f.event
			e.Seq = 0
			return tx.Outbox().Append(ctx, &e)
		}}, dup, dupName)
	add(deferCase{name: "Outbox.MarkDelivered",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.Outbox().MarkDelivered(ctx, []string{f.event.ID}, t0)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			evs, err := tx.Outbox().Lease(ctx, "r", t0.Add(time.Hour), time.Minute, 100)
			for _, e := range evs {
				if e.ID == f.event.ID {
					return errors.New("storagetest: a delivered event was leased")
				}
			}
			return err
		}}, nil, "")
	add(deferCase{name: "Outbox.Retry",
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.Outbox().Retry(ctx, fresh("Webhook"), "r", t0, "down")
		}}, notFound, notFoundName)
	add(deferCase{name: "Outbox.Park",
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.Outbox().Park(ctx, fresh("Webhook"), "r", t0, "down")
		}}, notFound, notFoundName)
	add(deferCase{name: "Outbox.Redrive",
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.Outbox().Redrive(ctx, f.event.ID, t0)
		}}, notFound, notFoundName)
	add(deferCase{name: "RateLimits.Hit",
		before: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.RateLimits().Hit(ctx, "hit:"+f.wallet.ID, t0, time.Minute, 1)
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.RateLimits().Hit(ctx, "hit:"+f.wallet.ID, t0, time.Minute, 1)
		}}, throttled, throttledName)
	add(deferCase{name: "IdempotencyKeys.Begin",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			r := f.idem
			r.Key, r.Token = fresh("Key"), fresh("Token")
			if err := tx.Idempotency().Begin(ctx, &r, t0); err != nil {
				return err
			}
			_, err := tx.Idempotency().Get(ctx, r.Scope, r.Key)
			return err
		},
		seen: noop,
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			r := f.idem
			r.Token = fresh("Token")
			return tx.Idempotency().Begin(ctx, &r, t0)
		}}, dup, dupName)
	add(deferCase{name: "IdempotencyKeys.Complete",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			r := f.idem
			r.State, r.Status, r.Body = storage.IdempotencyComplete, 200, []byte(`{}`)
			return tx.Idempotency().Complete(ctx, &r)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			r, err := tx.Idempotency().Get(ctx, f.idem.Scope, f.idem.Key)
			return seenIf(err, r.State == storage.IdempotencyComplete, "the completed record")
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			r := f.idem
			r.Token = fresh("Token")
			r.State, r.Status = storage.IdempotencyComplete, 200
			return tx.Idempotency().Complete(ctx, &r)
		}}, conflict, conflictName)
	add(deferCase{name: "IdempotencyKeys.Release",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.Idempotency().Release(ctx, f.idem.Scope, f.idem.Key, f.idem.Token)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			_, err := tx.Idempotency().Get(ctx, f.idem.Scope, f.idem.Key)
			return seenIf(nil, errors.Is(err, storage.ErrNotFound), "the released record gone")
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			return tx.Idempotency().Release(ctx, f.idem.Scope, f.idem.Key, fresh("Token"))
		}}, notFound, notFoundName)
	// The payout records of a payout policy, written once per fixture's
	// customer.
	usage := func(f *deferFixture) storage.PayoutUsage {
		return storage.PayoutUsage{ID: "Payout:" + f.wallet.ID, CustomerID: f.wallet.CustomerID, SourceID: f.wallet.ID,
			DestinationID: f.ext.ID, Amount: 100, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	}
	add(deferCase{name: "PayoutUsages.Record",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			u := usage(f)
			return tx.PayoutUsage().Record(ctx, &u)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			list, err := tx.PayoutUsage().Hold(ctx, f.wallet.CustomerID, time.Time{})
			return seenIf(err, len(list) == 1, "the recorded usage")
		},
		before: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			u := usage(f)
			return tx.PayoutUsage().Record(ctx, &u)
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			u := usage(f)
			return tx.PayoutUsage().Record(ctx, &u)
		}}, dup, dupName)
	approval := func(f *deferFixture) storage.PayoutApproval {
		return storage.PayoutApproval{ID: "PayoutApproval:" + f.wallet.ID[len("InternalAccount:"):], CustomerID: f.wallet.CustomerID,
			SourceID: f.wallet.ID, DestinationID: f.ext.ID, Amount: 100, Currency: "USD", Rule: "r", RequestID: fresh("Request"),
			RequestedBy: f.cred.ID, Required: 1, State: storage.ApprovalWaiting, CreatedAt: t0, UpdatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	}
	add(deferCase{name: "PayoutApprovals.Create",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a := approval(f)
			return tx.PayoutApprovals().Create(ctx, &a)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			_, err := tx.PayoutApprovals().Lock(ctx, approval(f).ID)
			return err
		},
		before: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a := approval(f)
			return tx.PayoutApprovals().Create(ctx, &a)
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a := approval(f)
			return tx.PayoutApprovals().Create(ctx, &a)
		}}, dup, dupName)
	add(deferCase{name: "PayoutApprovals.Update",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a := approval(f)
			if err := tx.PayoutApprovals().Create(ctx, &a); err != nil {
				return err
			}
			a.State = storage.ApprovalApproved
			return tx.PayoutApprovals().Update(ctx, &a)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a, err := tx.PayoutApprovals().Lock(ctx, approval(f).ID)
			return seenIf(err, a.State == storage.ApprovalApproved, "the updated approval")
		},
		before: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a := approval(f)
			return tx.PayoutApprovals().Create(ctx, &a)
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			a := approval(f)
			a.Version = 7
			return tx.PayoutApprovals().Update(ctx, &a)
		}}, conflict, conflictName)
	record := func(f *deferFixture) storage.Record {
		return storage.Record{Kind: "deferred", Key: f.wallet.ID, Group: f.wallet.CustomerID, Value: []byte("v1"), CreatedAt: t0}
	}
	add(deferCase{name: "Records.Create",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			r := record(f)
			return tx.Records().Create(ctx, &r)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			list, err := tx.Records().List(ctx, "deferred", f.wallet.CustomerID)
			return seenIf(err, len(list) == 1, "the created record")
		},
		before: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			r := record(f)
			return tx.Records().Create(ctx, &r)
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			r := record(f)
			return tx.Records().Create(ctx, &r)
		}}, dup, dupName)
	add(deferCase{name: "Records.Update",
		write: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			r := record(f)
			if err := tx.Records().Create(ctx, &r); err != nil {
				return err
			}
			r.Value = []byte("v2")
			return tx.Records().Update(ctx, &r)
		},
		seen: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			r, err := tx.Records().Get(ctx, "deferred", f.wallet.ID)
			return seenIf(err, string(r.Value) == "v2", "the updated record")
		},
		before: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			r := record(f)
			return tx.Records().Create(ctx, &r)
		},
		fail: func(ctx context.Context, tx ctxTx, f *deferFixture) error {
			r := record(f)
			r.Version = 7
			return tx.Records().Update(ctx, &r)
		}}, conflict, conflictName)
	return cases
}

func noop(context.Context, storage.Tx, *deferFixture) error { return nil }

// seenIf returns err, or an error naming what was not seen when ok is
// false.
func seenIf(err error, ok bool, what string) error {
	switch {
	case err != nil:
		return err
	case !ok:
		return errors.New("storagetest: not seen in the transaction that wrote it: " + what)
	}
	return nil
}
