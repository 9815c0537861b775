package sandbox

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/webhooksig"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/relay"
	"github.com/walletgate/walletgate/storage/webhook"
)

// EventTest is the type of the event POST /sandbox/webhooks/test sends.
const EventTest = "TEST"

// WebhookPoll is how often the simulator's relay looks for due events when
// it has none: events reach the webhook URL within about this long of their
// commit.
const WebhookPoll = 100 * time.Millisecond

// webhooks is the simulator's webhook sender: the key it signs with and,
// when Config.WebhookURL is set, the publisher and the relay that delivers
// the outbox.
type webhooks struct {
	signer *webhooksig.Signer
	pub    *webhook.Publisher // nil without a URL
	stop   context.CancelFunc
	done   chan struct{}
}

// startWebhooks makes the signer and, with a URL, starts the relay that
// delivers the store's events until Close.
func (s *Simulator) startWebhooks() error {
	key := s.cfg.WebhookKey
	if key == nil {
		var err error
		// From crypto/rand, not Config.Rand: a seeded simulator's ids
		// stay where they were.
		if key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return err
		}
	}
	signer, err := webhooksig.NewSigner(key)
	if err != nil {
		return err
	}
	s.hooks.signer = signer
	if s.cfg.WebhookURL == "" {
		return nil
	}
	if s.hooks.pub, err = webhook.NewPublisher(webhook.PublisherConfig{Target: s.cfg.WebhookURL, Signer: signer, Client: s.cfg.WebhookClient,
		Telemetry: s.cfg.Telemetry}); err != nil {
		return err
	}
	r, err := relay.New(relay.Config{Store: s.cfg.Store, Publisher: s.hooks.pub, Clock: s.cfg.Clock, Poll: WebhookPoll,
		Telemetry: s.cfg.Telemetry})
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	s.hooks.stop, s.hooks.done = stop, make(chan struct{})
	go func() {
		defer close(s.hooks.done)
		_ = r.Run(ctx)
	}()
	return nil
}

// closeWebhooks stops the relay and waits for it.
func (h *webhooks) close() {
	if h.stop != nil {
		h.stop()
		<-h.done
	}
}

// WebhookPublicKeyPEM returns the SPKI PEM of the key the simulator signs
// its webhooks with: the key a receiver verifies X-Grid-Signature with (see
// apierror/webhooksig).
func (s *Simulator) WebhookPublicKeyPEM() []byte { return s.hooks.signer.PublicKeyPEM() }

// WebhookTestResult is the answer of POST /sandbox/webhooks/test: what the
// platform's receiver answered.
type WebhookTestResult struct {
	URL            string `json:"url,omitempty"`
	ResponseStatus int    `json:"response_status"`
	ResponseBody   string `json:"response_body,omitempty"`
}

// TestWebhook sends one signed TEST event ({"id", "type": "TEST",
// "timestamp", "data": {}}) to Config.WebhookURL at once, outside the
// outbox, and returns the receiver's answer whatever its status. Without a
// URL it answers 400 WEBHOOK_ENDPOINT_NOT_SET; when no answer comes (the
// receiver is down or too slow), 400 WEBHOOK_DELIVERY_ERROR.
func (s *Simulator) TestWebhook(ctx context.Context) (WebhookTestResult, error) {
	if s.hooks.pub == nil {
		return WebhookTestResult{}, apierror.New(apierror.WebhookEndpointNotSet, "no webhook URL is configured")
	}
	e, err := storage.NewEvent(s.cfg.Rand, EventTest, "", struct{}{}, s.now())
	if err != nil {
		return WebhookTestResult{}, apierror.Internal(err)
	}
	resp, err := s.hooks.pub.Send(ctx, e)
	var de *webhook.DeliveryError
	if errors.As(err, &de) {
		return WebhookTestResult{}, apierror.New(apierror.WebhookDeliveryError, "the webhook URL did not answer").
			WithDetail("reason", de.Err.Error())
	}
	if err != nil {
		return WebhookTestResult{}, apierror.Internal(err)
	}
	return WebhookTestResult{URL: s.cfg.WebhookURL, ResponseStatus: resp.Status, ResponseBody: resp.Body}, nil
}

func (s *Simulator) hTestWebhook(w http.ResponseWriter, r *http.Request) {
	if _, ok := readBody(w, r, nil, false); !ok {
		return
	}
	res, err := s.TestWebhook(r.Context())
	signedretry.WriteAnswer(w, http.StatusOK, res, nil, err)
}
