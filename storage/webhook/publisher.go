package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/apierror/webhooksig"
	"github.com/walletgate/walletgate/storage"
)

// DefaultTimeout is the timeout of the http.Client a [Publisher] makes when
// given none.
const DefaultTimeout = 10 * time.Second

// MaxResponseBytes is how much of a receiver's response body a [Publisher]
// reads (for [DeliveryError.Body]); the rest is discarded unread.
const MaxResponseBytes = 4 << 10

// Publisher delivers outbox events as signed webhooks. It implements the
// Publisher of storage/relay; it is safe for concurrent use.
type Publisher struct {
	route  func(storage.Event) (string, error)
	signer *webhooksig.Signer
	client *http.Client
	tel    telemetry
}

// PublisherConfig configures [NewPublisher]. Signer and exactly one of
// Target and Route are required.
type PublisherConfig struct {
	// Target is the absolute http or https URL every event is posted to.
	Target string
	// Route, instead of Target, returns the URL of each event (an error
	// from it fails that Publish; the URL is checked as Target is).
	Route func(storage.Event) (string, error)
	// Signer signs every body.
	Signer *webhooksig.Signer
	// Client sends the requests; nil means one with [DefaultTimeout]. It
	// is copied with redirects switched off: a 3xx answer is a failed
	// delivery, so a signed body is only ever sent to a URL the host chose.
	Client *http.Client
	// Telemetry receives the publisher's records, spans and metrics (see
	// the package documentation); the zero value reports nothing. Each
	// delivery the receiver refused or did not answer is logged at Debug
	// (storage/relay logs the failed Publish at Warn) and an event refused
	// before sending (not an envelope, no route) at Error, with the event
	// id and type and the status or error. Each delivery is a client span
	// "webhook.deliver", counted and timed by the delivery counter and
	// duration histogram. No record or attribute carries the body, the
	// signature, the URL's path or query or the response body.
	Telemetry operation.Telemetry
}

// NewPublisher returns a Publisher posting the events as cfg says. It fails
// when cfg.Signer is nil, when neither or both of Target and Route are set,
// when Target is not an absolute http or https URL, or when
// cfg.Telemetry.MeterProvider refuses the publisher's instruments.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	if cfg.Signer == nil {
		return nil, errors.New("webhook: PublisherConfig.Signer is nil")
	}
	route := cfg.Route
	switch {
	case cfg.Target != "" && route != nil:
		return nil, errors.New("webhook: PublisherConfig sets both Target and Route")
	case cfg.Target != "":
		if err := checkURL(cfg.Target); err != nil {
			return nil, err
		}
		target := cfg.Target
		route = func(storage.Event) (string, error) { return target, nil }
	case route == nil:
		return nil, errors.New("webhook: PublisherConfig needs a Target or a Route")
	}
	c := &http.Client{Timeout: DefaultTimeout}
	if cfg.Client != nil {
		cc := *cfg.Client
		c = &cc
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	tel, err := newTelemetry(cfg)
	if err != nil {
		return nil, err
	}
	return &Publisher{route: route, signer: cfg.Signer, client: c, tel: tel}, nil
}

func checkURL(target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("webhook: target URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("webhook: target URL %q is not an absolute http or https URL", u.Redacted())
	}
	return nil
}

// DeliveryError is a failed delivery: Status is the receiver's HTTP status,
// or 0 when no response arrived (Err then says why: connection refused, the
// client's timeout, ctx ended). Body is the start of the response body, at
// most [MaxResponseBytes], as valid UTF-8.
type DeliveryError struct {
	// EventID is the id of the event that was not delivered.
	EventID string
	// Status is the receiver's HTTP status, 0 when none arrived.
	Status int
	// Body is the start of the receiver's response body.
	Body string
	// Err is the transport error when Status is 0, otherwise nil. It names
	// the receiver's host, never the URL's path or query.
	Err error
}

// Error names the event and the status (or the transport failure) and quotes
// the start of the response body.
func (e *DeliveryError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("webhook: delivering %s: %v", e.EventID, e.Err)
	}
	body := e.Body
	if len(body) > 200 {
		body = body[:200] + "..."
	}
	return fmt.Sprintf("webhook: delivering %s: receiver answered %d %s: %q", e.EventID, e.Status, http.StatusText(e.Status), body)
}

// Unwrap returns the transport error, if any.
func (e *DeliveryError) Unwrap() error { return e.Err }

// Response is a receiver's answer to one delivery.
type Response struct {
	// Status is the HTTP status.
	Status int
	// Body is the start of the response body, at most [MaxResponseBytes],
	// as valid UTF-8.
	Body string
}

// Delivered reports whether the answer counts as delivered: 2xx, or 409
// (the receiver already has that id).
func (r Response) Delivered() bool { return r.Status/100 == 2 || r.Status == http.StatusConflict }

// Send posts e.Payload, unchanged, to the event's URL with Content-Type
// application/json, X-Grid-Signature (signed by the Publisher's signer) and
// X-Grid-Webhook-Id = e.ID, and returns the receiver's answer, whatever its
// status. It returns a *DeliveryError with Status 0 when no answer came
// within ctx and the client's timeout. It reads at most MaxResponseBytes of
// the response and always closes it. It never retries; an event whose
// payload is not an envelope with id e.ID is refused without sending (a
// plain error: retrying cannot help).
func (p *Publisher) Send(ctx context.Context, e storage.Event) (Response, error) {
	ctx, d := p.tel.begin(ctx, e)
	req, err := p.request(ctx, e)
	if err != nil {
		d.failed(err, false)
		return Response{}, err
	}
	d.target(req.URL)
	resp, err := p.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			// Without the URL: its path or query may carry a credential.
			err = fmt.Errorf("%s %s: %w", ue.Op, req.URL.Host, ue.Err)
		}
		d.failed(err, true)
		return Response{}, &DeliveryError{EventID: e.ID, Err: err}
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
	r := Response{Status: resp.StatusCode, Body: strings.ToValidUTF8(string(snippet), "\uFFFD")}
	d.answered(r.Status, r.Delivered())
	return r, nil
}

// request builds the signed request delivering e, or says why e cannot be
// sent.
func (p *Publisher) request(ctx context.Context, e storage.Event) (*http.Request, error) {
	var head struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(e.Payload, &head); err != nil || head.ID != e.ID || e.ID == "" {
		return nil, fmt.Errorf("webhook: event %q: payload is not an envelope with that id", e.ID)
	}
	target, err := p.route(e)
	if err != nil {
		return nil, fmt.Errorf("webhook: routing %s: %w", e.ID, err)
	}
	if checkURL(target) != nil {
		// Not quoted: a URL's path or query may carry a credential.
		return nil, fmt.Errorf("webhook: routing %s: the route returned a URL that is not an absolute http or https URL", e.ID)
	}
	sig, err := p.signer.Sign(e.Payload)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(e.Payload))
	if err != nil {
		return nil, fmt.Errorf("webhook: delivering %s: %w", e.ID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhooksig.SignatureHeader, sig)
	req.Header.Set(webhooksig.IDHeader, e.ID)
	req.Header.Set("User-Agent", "walletgate-webhook/1")
	return req, nil
}

// Publish sends e as [Publisher.Send] does and returns nil when the answer
// counts as delivered ([Response.Delivered]); otherwise a *DeliveryError
// with the status and the start of the body (or Send's error).
func (p *Publisher) Publish(ctx context.Context, e storage.Event) error {
	resp, err := p.Send(ctx, e)
	if err != nil {
		return err
	}
	if resp.Delivered() {
		return nil
	}
	return &DeliveryError{EventID: e.ID, Status: resp.Status, Body: resp.Body}
}
