package sandbox_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// worker is the TB of a client goroutine: Fatal reports and ends the
// goroutine only, as FailNow may not be called off the test goroutine.
type worker struct{ testing.TB }

func (w worker) Fatal(args ...any) {
	w.TB.Helper()
	w.TB.Error(args...)
	runtime.Goexit()
}

func (w worker) Fatalf(format string, args ...any) {
	w.TB.Helper()
	w.TB.Errorf(format, args...)
	runtime.Goexit()
}

// TestConcurrentClients runs 32 platform clients against one simulator at
// once. Each creates a customer (and so a wallet), logs in, funds its wallet,
// moves money in and out, exports its wallet through the signed retry
// (racing two copies of each retry) and funds and drains a wallet shared by
// all. Afterwards every balance must add up exactly and every transaction and
// export must have happened exactly once.
func TestConcurrentClients(t *testing.T) {
	const clients = 32
	const (
		funds, fundAmount = 5, 1_000
		ins, inAmount     = 3, 500
		outs, outAmount   = 2, 300
		exports           = 2
		sharedFund        = 100
		sharedOut         = 40
	)
	e := newEnv(t)
	shared, sharedWallet := e.customer("Shared Pool")
	e.do("POST", "/sandbox/internal-accounts/"+sharedWallet+"/fund", map[string]any{"amount": 1_000_000, "currency": "USD"}).ok(t, 200, nil)
	// Transfers out of a wallet are signed by one of its sessions.
	sharedKey := e.login(sharedWallet)
	sharedExts := make([]string, clients)
	for i := range sharedExts {
		sharedExts[i] = e.external(shared.ID, usdAccount(fmt.Sprintf("9%04d1", i))).ID
	}

	var (
		wg         sync.WaitGroup
		start      = make(chan struct{})
		exportOK   atomic.Int64
		replayLost atomic.Int64
		txIDs      sync.Map
		dupTx      atomic.Int64
		wallets    = make([]string, clients)
	)
	record := func(id string) {
		if _, loaded := txIDs.LoadOrStore(id, true); loaded {
			dupTx.Add(1)
		}
	}
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &env{t: worker{t}, sim: e.sim, srv: e.srv, base: e.base, user: e.user, pass: e.pass}
			<-start
			c, wallet := w.customer(fmt.Sprintf("Client %d", i))
			wallets[i] = wallet
			key := w.login(wallet)
			w.keys = map[string]*authclient.ClientKey{wallet: key, sharedWallet: sharedKey}
			for range funds {
				w.do("POST", "/sandbox/internal-accounts/"+wallet+"/fund", map[string]any{"amount": fundAmount, "currency": "USD"}).ok(w.t, 200, nil)
			}
			ok := w.external(c.ID, usdAccount(fmt.Sprintf("7%07d", i*10+1)))
			failing := w.external(c.ID, usdAccount(fmt.Sprintf("8%05d002", i)))
			for range ins {
				tx, r := w.transfer(true, ok.ID, wallet, inAmount)
				r.ok(w.t, 201, nil)
				record(tx.ID)
			}
			tx, r := w.transfer(true, failing.ID, wallet, 10_000)
			r.ok(w.t, 201, nil)
			record(tx.ID)
			for range outs {
				tx, r := w.transfer(false, ok.ID, wallet, outAmount)
				r.ok(w.t, 201, nil)
				record(tx.ID)
			}
			for range sharedFund / 20 {
				w.do("POST", "/sandbox/internal-accounts/"+sharedWallet+"/fund", map[string]any{"amount": 20, "currency": "USD"}).ok(w.t, 200, nil)
			}
			tx, r = w.transfer(false, sharedExts[i], sharedWallet, sharedOut)
			r.ok(w.t, 201, nil)
			record(tx.ID)

			_, pub := exportKey(t)
			path := "/internal-accounts/" + wallet + "/export"
			body := map[string]string{"clientPublicKey": pub}
			for range exports {
				ch := w.challenge("POST", path, body)
				sig, err := key.Stamp(ch.PayloadToSign)
				if err != nil {
					w.t.Fatal(err)
				}
				// Two copies of the same retry race; exactly one wins.
				var inner sync.WaitGroup
				statuses := make([]int, 2)
				for j := range statuses {
					inner.Add(1)
					go func() {
						defer inner.Done()
						ww := *w
						ww.t = worker{t}
						statuses[j] = ww.do("POST", path, body, stamper.HeaderSignature, sig, stamper.HeaderRequestID, ch.RequestID).status
					}()
				}
				inner.Wait()
				for _, s := range statuses {
					switch s {
					case 200:
						exportOK.Add(1)
					case 401:
						replayLost.Add(1)
					default:
						w.t.Errorf("export retry answered %d", s)
					}
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}

	want := int64(funds*fundAmount + ins*inAmount - outs*outAmount)
	for i, wallet := range wallets {
		if got := e.balance(wallet, "USD"); got != want {
			t.Errorf("client %d: balance %d, want %d", i, got, want)
		}
	}
	if got, want := e.balance(sharedWallet, "USD"), int64(1_000_000+clients*(sharedFund-sharedOut)); got != want {
		t.Errorf("shared balance %d, want %d", got, want)
	}
	if exportOK.Load() != clients*exports || replayLost.Load() != clients*exports {
		t.Errorf("exports: %d succeeded and %d refused, want %d each", exportOK.Load(), replayLost.Load(), clients*exports)
	}
	if dupTx.Load() != 0 {
		t.Errorf("%d duplicate transaction ids", dupTx.Load())
	}
	n := 0
	txIDs.Range(func(k, _ any) bool {
		n++
		if tx := e.tx(k.(string)); tx.Status != "COMPLETED" && tx.FailureReason != "INSUFFICIENT_FUNDS" {
			t.Errorf("transaction %+v", tx)
		}
		return true
	})
	if n != clients*(ins+1+outs+1) {
		t.Errorf("%d transactions, want %d", n, clients*(ins+1+outs+1))
	}
}
