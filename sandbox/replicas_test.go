package sandbox_test

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/walletauth"
)

// TestReplicasAreOneSandbox: two simulators on one PostgreSQL database,
// each with its own pool (replicas behind a load balancer, sharing their
// keys), are one sandbox. A customer made through one is the other's; a
// balance funded through one is the other's; a transfer out challenged on
// one is retried on the other and debits once; a quote made on one reads
// the same on the other; a payout held through one is approved by the
// risk desk on the other, and both then answer the same approval, the
// same transaction and the same balance; the clock moved on one is moved
// on the other.
func TestReplicasAreOneSandbox(t *testing.T) {
	dsn := pgtest.DSN(t)
	keys, err := walletauth.EphemeralKeys(nil)
	if err != nil {
		t.Fatal(err)
	}
	first := pgtest.Store(t, pgtest.Pool(t, dsn, 4, nil), postgres.Config{})
	second := pgtest.SameSchema(t, first, pgtest.Pool(t, dsn, 4, nil), postgres.Config{})
	cfg := func(s storage.Store) sandbox.Config {
		return sandbox.Config{Store: s, SigningKey: keys.SigningKey, Sealer: keys.Sealer, CodeMACKey: keys.CodeMACKey}
	}
	a, b := newEnvWith(t, cfg(first)), newEnvWith(t, cfg(second))

	c, w := a.customer("Two Replicas")
	if got := b.wallet(c.ID); got != w {
		t.Fatalf("the second replica finds wallet %s, the first made %s", got, w)
	}
	if diff := cmp.Diff(get[sandbox.Customer](a, "/customers/"+c.ID), get[sandbox.Customer](b, "/customers/"+c.ID)); diff != "" {
		t.Fatalf("the customer differs between the replicas (-first +second):\n%s", diff)
	}
	b.do("POST", "/sandbox/internal-accounts/"+w+"/fund", map[string]any{"amount": 1_000_000, "currency": "USD"}).ok(t, 200, nil)
	if got := a.balance(w, "USD"); got != 1_000_000 {
		t.Fatalf("the first replica sees a balance of %d after the second funded 1000000", got)
	}

	key := a.login(w)
	ext := b.external(c.ID, usdAccount("000123456"))
	body := func(amount int64) map[string]any {
		return map[string]any{"source": map[string]string{"accountId": w}, "destination": map[string]string{"accountId": ext.ID}, "amount": amount}
	}
	ch := a.challenge("POST", "/transfer-out", body(10_000))
	var paid sandbox.Transaction
	b.retry(key, ch, "POST", "/transfer-out", body(10_000)).ok(t, 201, &paid)
	a.retry(key, ch, "POST", "/transfer-out", body(10_000)).fails(t, 401, apierror.Unauthorized)
	if diff := cmp.Diff(a.tx(paid.ID), b.tx(paid.ID)); diff != "" {
		t.Fatalf("the transaction differs between the replicas (-first +second):\n%s", diff)
	}
	if got, want := a.balance(w, "USD"), int64(1_000_000-10_000); got != want || b.balance(w, "USD") != want {
		t.Fatalf("balances %d and %d after one transfer out, want %d on both", got, b.balance(w, "USD"), want)
	}

	q := a.quote(payer{c, w, key}, map[string]any{"accountId": ext.ID}, 20_000)
	if diff := cmp.Diff(a.getQuote(q.ID), b.getQuote(q.ID)); diff != "" {
		t.Fatalf("the quote differs between the replicas (-first +second):\n%s", diff)
	}

	held := a.signed(key, "POST", "/transfer-out", body(sandbox.ApprovalPayoutUSDCents))
	var ap sandbox.PayoutApproval
	held.ok(t, 202, &ap)
	if got := get[sandbox.PayoutApproval](b, "/payout-approvals/"+ap.ID); got.State != "WAITING" {
		t.Fatalf("the second replica reads the held payout as %s", got.State)
	}
	var made sandbox.Transaction
	b.do("POST", "/sandbox/payout-approvals/"+ap.ID+"/approve", nil).ok(t, 200, &made)
	fromA, fromB := get[sandbox.PayoutApproval](a, "/payout-approvals/"+ap.ID), get[sandbox.PayoutApproval](b, "/payout-approvals/"+ap.ID)
	if diff := cmp.Diff(fromA, fromB); diff != "" || fromA.State != "APPROVED" || fromA.TransactionID != made.ID {
		t.Fatalf("after the approval: first %+v, transaction %s; (-first +second):\n%s", fromA, made.ID, diff)
	}
	a.do("POST", "/sandbox/payout-approvals/"+ap.ID+"/approve", nil).fails(t, 409, apierror.Conflict)
	want := int64(1_000_000 - 10_000 - sandbox.ApprovalPayoutUSDCents)
	if a.balance(w, "USD") != want || b.balance(w, "USD") != want {
		t.Fatalf("balances %d and %d after the approved payout, want %d on both", a.balance(w, "USD"), b.balance(w, "USD"), want)
	}

	moved := a.advance(3600)
	if got := b.clockNow(); got.Before(moved) || got.Sub(moved) > time.Minute {
		t.Fatalf("the second replica's clock reads %s after the first moved it to %s", got, moved)
	}
	if got := get[sandbox.Quote](b, "/quotes/"+q.ID); got.Status != "EXPIRED" {
		t.Fatalf("the quote reads %s on the second replica an hour later, want EXPIRED", got.Status)
	}
}

// TestCustomerUniquenessUnderRace: of customers created at once with one
// platformCustomerId, or one UMA address, exactly one is created; every
// other is 409 naming the rule (CONFLICT with details.field
// platformCustomerId, UMA_ADDRESS_EXISTS). On the memory store, and with
// WALLETGATE_POSTGRES_DSN on two replicas of one PostgreSQL database.
func TestCustomerUniquenessUnderRace(t *testing.T) {
	envs := map[string][2]*env{}
	m := newEnv(t)
	envs["memory"] = [2]*env{m, m}
	if dsn := os.Getenv(pgtest.EnvDSN); dsn != "" {
		first := pgtest.Store(t, pgtest.Pool(t, dsn, 8, nil), postgres.Config{})
		second := pgtest.SameSchema(t, first, pgtest.Pool(t, dsn, 8, nil), postgres.Config{})
		envs["postgres"] = [2]*env{newEnvWith(t, sandbox.Config{Store: first}), newEnvWith(t, sandbox.Config{Store: second})}
	}
	for name, pair := range envs {
		t.Run(name, func(t *testing.T) {
			for _, rule := range []struct {
				member, value string
				status        int
				code          apierror.Code
			}{
				{"platformCustomerId", "race-" + name, 409, apierror.Conflict},
				{"umaAddress", "$race." + name + "@sandbox.walletgate.dev", 409, apierror.UMAAddressExists},
			} {
				const n = 8
				statuses := make([]resp, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						e := *pair[i%2]
						e.t = worker{t}
						statuses[i] = e.do("POST", "/customers", map[string]any{"customerType": "INDIVIDUAL", "fullName": "Race",
							"email": fmt.Sprintf("race%d@example.com", uniq()), rule.member: rule.value})
					}()
				}
				wg.Wait()
				created := 0
				for _, r := range statuses {
					if r.status == 201 {
						created++
						continue
					}
					if f := r.fails(t, rule.status, rule.code); rule.member == "platformCustomerId" && f.Details["field"] != rule.member {
						t.Errorf("%s: refusal %v does not name the field", rule.member, f.Details)
					}
				}
				if created != 1 {
					t.Errorf("%s: %d customers created with one value, want 1", rule.member, created)
				}
			}
		})
	}
}
