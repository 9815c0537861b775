package walletauth_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
)

// TestTelemetryCarriesNoSecrets runs the flows of every event type (OTP
// start, verify and login, wrong codes, a lockout, signed retries well and
// badly signed, passkey registration and login, OIDC, session refresh and
// revokes, email changes), an export, and calls over the HTTP handler (a
// wrong code, a 5xx), with a span recorder, a manual metric reader and a
// capturing log handler in the Config; then scans every span (name,
// attributes, events, status), metric (name, attributes) and log record
// (message, attributes) for every secret the flows met: codes, MACs, sealed
// keys, bundles, private and session keys in every encoding, OIDC tokens,
// stamps, payloads to sign and request bodies.
func TestTelemetryCarriesNoSecrets(t *testing.T) {
	ctx := t.Context()
	tc := newTelemetryCapture(t)
	sec := secrets{}
	e := runFlows(t, func(c *walletauth.Config) {
		c.Logger, c.TracerProvider, c.MeterProvider = tc.log, tc.tp, tc.mp
		c.WalletSecrets = sec
	})

	// An export of a new wallet, logged in over EMAIL_OTP.
	wallet, cred, err := e.svc.CreateWallet(ctx, walletauth.NewWallet{CustomerID: "Customer:9", Email: "exporter@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	sec[wallet.ID] = testMnemonic
	e.addString("wallet secret", testMnemonic)
	_, key := e.otpLogin(t, cred.ID, storage.EmailOTP, e.challenge(t, cred.ID))
	client := e.newKey(t, "export client key")
	req := walletauth.ExportRequest{ClientPublicKey: client.PublicKeyHex()}
	c := e.call("POST", "/internal-accounts/"+wallet.ID+"/export", `{"clientPublicKey":"`+client.PublicKeyHex()+`"}`)
	_, ch, err := e.svc.ExportWallet(ctx, wallet.ID, req, c)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := e.svc.ExportWallet(ctx, wallet.ID, req, e.sign(t, c, ch, key))
	if err != nil {
		t.Fatal(err)
	}
	e.addSealed("export bundle", out.EncryptedWalletCredentials)

	// Over HTTP: a wrong code (401, Warn) and an export of a wallet the
	// host holds no secret for (500, Error with its cause).
	h := e.svc.Handler()
	bundle := e.challenge(t, cred.ID)
	code := e.issued(t, cred.ID, bundle)
	wrong, _ := e.seal(t, bundle, otherEvCode(code))
	body := `{"type":"EMAIL_OTP","encryptedOtpBundle":` + quote(wrong) + `}`
	e.addString("request body", body)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequestWithContext(ctx, http.MethodPost, "/auth/credentials/"+cred.ID+"/verify", strings.NewReader(body)))
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("wrong code over HTTP: %d %s", w.Code, w.Body)
	}
	delete(sec, wallet.ID)
	_, k2 := e.otpLogin(t, cred.ID, storage.EmailOTP, e.challenge(t, cred.ID))
	_, ch, err = e.svc.ExportWallet(ctx, wallet.ID, req, c)
	if err != nil {
		t.Fatal(err)
	}
	retry := e.sign(t, c, ch, k2)
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/internal-accounts/"+wallet.ID+"/export", strings.NewReader(string(c.Body)))
	r.Header.Set("Service-Wallet-Signature", retry.Signature)
	r.Header.Set("Request-Id", retry.RequestID)
	w = httptest.NewRecorder()
	// The export route is the host's: mount it the way a host would.
	apierror.Observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _, err := e.svc.ExportWallet(r.Context(), wallet.ID, req, retry)
		apierrortest.Want(t, err, apierror.InternalError, "")
		apierror.Write(w, err)
	}), tc.log).ServeHTTP(w, r)
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("export without a secret: %d %s", w.Code, w.Body)
	}

	for _, m := range e.outbox.sent {
		e.secrets[m.Code] = "OTP code"
	}
	if len(e.secrets) < 200 {
		t.Fatalf("only %d secrets collected", len(e.secrets))
	}
	records := tc.records(t)

	// The records are there to scan.
	var joined strings.Builder
	for _, r := range records {
		joined.WriteString(r + "\n")
	}
	all := joined.String()
	for _, want := range []string{
		"span walletauth.otp.start", "span walletauth.otp.verify", "span walletauth.passkey.verify",
		"span walletauth.oidc.verify", "span walletauth.session.refresh", "span walletauth.wallet.export",
		"span signedretry.issue", "span signedretry.complete",
		"metric walletgate.walletauth.otp.outcomes", "metric walletgate.walletauth.outcomes",
		"metric walletgate.walletauth.operation.duration", "metric walletgate.signedretry.outcomes",
		"metric walletgate.signedretry.operation.duration",
		"walletgate.reason=invalid_code", "walletgate.reason=lockout", "walletgate.code=WALLET_SIGNATURE_INVALID",
		"log WARN refused operation=walletauth.otp.verify code=UNAUTHORIZED reason=lockout",
		"log WARN refused operation=signedretry.complete code=WALLET_SIGNATURE_INVALID",
		"log ERROR request failed request_id=",
		"log WARN refused operation=walletauth.passkey.verify code=UNAUTHORIZED reason=",
		"log DEBUG request refused request_id=",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the telemetry lacks %q", want)
		}
	}
	if !slices.ContainsFunc(records, func(r string) bool {
		return strings.HasPrefix(r, "log ERROR") && strings.Contains(r, "code=INTERNAL_ERROR") && strings.Contains(r, "error=")
	}) {
		t.Error("the 5xx is not logged with its cause")
	}

	// The scanner finds what it looks for.
	for v := range e.secrets {
		if telemetryLeaks([]string{"log INFO x k=" + v}, e.secrets) == nil {
			t.Fatalf("the scanner misses %q", v)
		}
		break
	}
	if l := telemetryLeaks(records, e.secrets); len(l) != 0 {
		for _, x := range l {
			t.Error(x)
		}
	}
	if testing.Verbose() {
		for _, r := range records {
			t.Log(r)
		}
	}
	t.Logf("%d telemetry records scanned for %d secrets", len(records), len(e.secrets))
}

// telemetryCapture records everything a component reports: every span
// (in-memory span recorder), every metric (manual reader) and every log
// record (a capturing slog handler at Debug), for scans.
type telemetryCapture struct {
	spans   *tracetest.SpanRecorder
	tp      *sdktrace.TracerProvider
	reader  *sdkmetric.ManualReader
	mp      *sdkmetric.MeterProvider
	handler *captureHandler
	log     *slog.Logger
}

func newTelemetryCapture(t testing.TB) *telemetryCapture {
	c := &telemetryCapture{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader(), handler: &captureHandler{recs: &captured{}}}
	c.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(c.spans))
	c.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(c.reader))
	c.log = slog.New(c.handler)
	t.Cleanup(func() {
		_ = c.tp.Shutdown(context.Background())
		_ = c.mp.Shutdown(context.Background())
	})
	return c
}

// captured is the records of a captureHandler and of the handlers derived
// from it.
type captured struct {
	mu   sync.Mutex
	recs []string
}

// captureHandler renders every record, message and attributes (its own,
// its groups' and its derived handlers'), as text.
type captureHandler struct {
	recs   *captured
	prefix string // rendered WithAttrs and WithGroup
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s%s", r.Level, r.Message, h.prefix)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value.Resolve())
		return true
	})
	h.recs.mu.Lock()
	h.recs.recs = append(h.recs.recs, b.String())
	h.recs.mu.Unlock()
	return nil
}

func (h *captureHandler) WithAttrs(as []slog.Attr) slog.Handler {
	p := h.prefix
	for _, a := range as {
		p += fmt.Sprintf(" %s=%v", a.Key, a.Value.Resolve())
	}
	return &captureHandler{recs: h.recs, prefix: p}
}

func (h *captureHandler) WithGroup(name string) slog.Handler {
	return &captureHandler{recs: h.recs, prefix: h.prefix + " group=" + name}
}

// records returns every captured item as text: "span ..." (name, kind,
// status, attributes, events and their attributes, links), "metric ..."
// (name, description, unit, each data point's attributes) and "log ..."
// (level, message, attributes).
func (c *telemetryCapture) records(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, s := range c.spans.Ended() {
		var b strings.Builder
		fmt.Fprintf(&b, "span %s kind=%v status=%v/%s scope=%s", s.Name(), s.SpanKind(), s.Status().Code, s.Status().Description, s.InstrumentationScope().Name)
		for _, kv := range s.Attributes() {
			fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.Emit())
		}
		for _, ev := range s.Events() {
			fmt.Fprintf(&b, " event=%s", ev.Name)
			for _, kv := range ev.Attributes {
				fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.Emit())
			}
		}
		for _, l := range s.Links() {
			for _, kv := range l.Attributes {
				fmt.Fprintf(&b, " link.%s=%s", kv.Key, kv.Value.Emit())
			}
		}
		out = append(out, b.String())
	}
	var rm metricdata.ResourceMetrics
	if err := c.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			head := fmt.Sprintf("metric %s unit=%s desc=%s scope=%s", m.Name, m.Unit, m.Description, sm.Scope.Name)
			var sets []attribute.Set
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					sets = append(sets, p.Attributes)
				}
			default:
				t.Fatalf("metric %s: data of type %T is not scanned", m.Name, m.Data)
			}
			if len(sets) == 0 {
				out = append(out, head)
			}
			for _, set := range sets {
				var b strings.Builder
				b.WriteString(head)
				for _, kv := range set.ToSlice() {
					fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.Emit())
				}
				out = append(out, b.String())
			}
		}
	}
	c.handler.recs.mu.Lock()
	for _, r := range c.handler.recs.recs {
		out = append(out, "log "+r)
	}
	c.handler.recs.mu.Unlock()
	return out
}

// telemetryLeaks returns, for each record, the secrets it contains.
func telemetryLeaks(records []string, secrets map[string]string) []string {
	var out []string
	for _, r := range records {
		for v, what := range secrets {
			if v != "" && strings.Contains(r, v) {
				out = append(out, fmt.Sprintf("%s in %q", what, r))
			}
		}
	}
	return out
}
