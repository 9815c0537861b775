package webhook_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/walletgate/walletgate/apierror/webhooksig"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/relay"
	"github.com/walletgate/walletgate/storage/webhook"
)

// A Publisher is what storage/relay delivers through.
var _ relay.Publisher = (*webhook.Publisher)(nil)

func testEvent() storage.Event {
	return storage.Event{ID: testID, Type: "EXTERNAL_ACCOUNT.STATUS_UPDATED", AccountID: "ExternalAccount:1", Payload: testBody, CreatedAt: t0}
}

func newPublisher(t *testing.T, url string, client *http.Client) *webhook.Publisher {
	t.Helper()
	p, err := webhook.NewPublisher(webhook.PublisherConfig{Target: url, Signer: testSigner(t), Client: client})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPublishDelivered(t *testing.T) {
	v := testVerifier(t, webhooksig.VerifierConfig{})
	for _, status := range []int{200, 202, 204, 409} {
		var got atomic.Value
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || r.Header.Get(webhooksig.IDHeader) != testID {
				t.Errorf("method %s, headers %v", r.Method, r.Header)
			}
			d, err := v.Verify(r)
			if err != nil {
				t.Errorf("receiver: %v", err)
			}
			got.Store(d)
			w.WriteHeader(status)
			_, _ = io.WriteString(w, strings.Repeat("z", 10<<10)) // more than the publisher reads
		}))
		err := newPublisher(t, srv.URL+"/hook", nil).Publish(context.Background(), testEvent())
		srv.Close()
		if err != nil {
			t.Fatalf("status %d: %v", status, err)
		}
		if d, _ := got.Load().(webhooksig.Delivery); string(d.Body) != string(testBody) {
			t.Fatalf("status %d: receiver got %q", status, d.Body)
		}
	}
}

func TestPublishFailures(t *testing.T) {
	deliveryErr := func(t *testing.T, err error) *webhook.DeliveryError {
		t.Helper()
		var de *webhook.DeliveryError
		if !errors.As(err, &de) {
			t.Fatalf("error %v (%T), want a *DeliveryError", err, err)
		}
		if de.EventID != testID || !strings.Contains(err.Error(), testID) {
			t.Fatalf("error %v does not name the event", err)
		}
		return de
	}

	t.Run("500", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "database down"+strings.Repeat(".", 8<<10), http.StatusInternalServerError)
		}))
		defer srv.Close()
		de := deliveryErr(t, newPublisher(t, srv.URL, nil).Publish(context.Background(), testEvent()))
		if de.Status != 500 || !strings.HasPrefix(de.Body, "database down") || len(de.Body) != webhook.MaxResponseBytes {
			t.Fatalf("status %d body %d bytes %.20q", de.Status, len(de.Body), de.Body)
		}
		if msg := de.Error(); !strings.Contains(msg, "500 Internal Server Error") || len(msg) > 400 {
			t.Fatalf("message %q", msg)
		}
	})

	for _, status := range []int{400, 401, 413, 429, 503} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
			defer srv.Close()
			if de := deliveryErr(t, newPublisher(t, srv.URL, nil).Publish(context.Background(), testEvent())); de.Status != status {
				t.Fatalf("status %d, want %d", de.Status, status)
			}
		})
	}

	t.Run("redirect not followed", func(t *testing.T) {
		var hit atomic.Bool
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit.Store(true) }))
		defer other.Close()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
		}))
		defer srv.Close()
		// A caller's client that follows redirects is copied with them off.
		client := &http.Client{}
		if de := deliveryErr(t, newPublisher(t, srv.URL, client).Publish(context.Background(), testEvent())); de.Status != 307 || hit.Load() {
			t.Fatalf("status %d, redirect followed: %v", de.Status, hit.Load())
		}
		if client.CheckRedirect != nil {
			t.Fatal("the caller's client was modified")
		}
	})

	t.Run("receiver down", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		de := deliveryErr(t, newPublisher(t, "http://"+addr+"/hook", nil).Publish(context.Background(), testEvent()))
		if de.Status != 0 || !errors.Is(de, syscall.ECONNREFUSED) {
			t.Fatalf("status %d err %v, want connection refused", de.Status, de.Err)
		}
	})

	slow := func(t *testing.T) *httptest.Server {
		stop := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // so that the server notices the client leave
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		}))
		t.Cleanup(func() { close(stop); srv.Close() })
		return srv
	}

	t.Run("slow receiver, client timeout", func(t *testing.T) {
		srv := slow(t)
		start := time.Now()
		de := deliveryErr(t, newPublisher(t, srv.URL, &http.Client{Timeout: 100 * time.Millisecond}).Publish(context.Background(), testEvent()))
		var ne net.Error
		if de.Status != 0 || !errors.As(de, &ne) || !ne.Timeout() {
			t.Fatalf("status %d err %v, want a timeout", de.Status, de.Err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("took %v", d)
		}
	})

	t.Run("slow receiver, ctx deadline", func(t *testing.T) {
		srv := slow(t)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		de := deliveryErr(t, newPublisher(t, srv.URL, nil).Publish(ctx, testEvent()))
		if de.Status != 0 || !errors.Is(de, context.DeadlineExceeded) {
			t.Fatalf("status %d err %v, want context.DeadlineExceeded", de.Status, de.Err)
		}
	})

	t.Run("payload id differs from event id", func(t *testing.T) {
		var hit atomic.Bool
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit.Store(true) }))
		defer srv.Close()
		e := testEvent()
		e.ID = "Webhook:00000000-0000-4000-8000-000000000000"
		err := newPublisher(t, srv.URL, nil).Publish(context.Background(), e)
		var de *webhook.DeliveryError
		if err == nil || errors.As(err, &de) || hit.Load() {
			t.Fatalf("error %v, sent %v", err, hit.Load())
		}
	})

	t.Run("route fails", func(t *testing.T) {
		p, err := webhook.NewPublisher(webhook.PublisherConfig{Route: func(e storage.Event) (string, error) {
			return "", errors.New("no endpoint for " + e.AccountID)
		}, Signer: testSigner(t)})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Publish(context.Background(), testEvent()); err == nil || !strings.Contains(err.Error(), "no endpoint") {
			t.Fatalf("error %v", err)
		}
	})
}

func TestNewPublisherRefuses(t *testing.T) {
	for _, u := range []string{"", "/hook", "ftp://example.com/x", "http://", "://x"} {
		if _, err := webhook.NewPublisher(webhook.PublisherConfig{Target: u, Signer: testSigner(t)}); err == nil {
			t.Errorf("URL %q accepted", u)
		}
	}
	if _, err := webhook.NewPublisher(webhook.PublisherConfig{Target: "http://127.0.0.1/"}); err == nil {
		t.Error("nil signer accepted")
	}
	if _, err := webhook.NewPublisher(webhook.PublisherConfig{Signer: testSigner(t)}); err == nil {
		t.Error("no target and no route accepted")
	}
	route := func(storage.Event) (string, error) { return "http://127.0.0.1/", nil }
	if _, err := webhook.NewPublisher(webhook.PublisherConfig{Target: "http://127.0.0.1/", Route: route, Signer: testSigner(t)}); err == nil {
		t.Error("both target and route accepted")
	}
}
