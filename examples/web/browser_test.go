package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

const chromiumPath = "/usr/bin/chromium"

// screenshots makes TestBrowserWalksEveryStep write a PNG of each step
// (phone viewport) to testdata/screenshots, as committed:
//
//	go test ./examples/web -run TestBrowserWalksEveryStep/memory -screenshots
var screenshots = flag.Bool("screenshots", false, "write the screenshots of each step to testdata/screenshots")

// tamperHook wraps the page's fetch: while armed, it rewrites the
// payloadToSign of the next 202 answer of a PATCH (privateEnabled true
// becomes false), as a compromised relay would, and it counts the requests
// that carry a stamp.
const tamperHook = `(() => {
  const orig = window.fetch;
  window.__hook = { armed: false, tampered: 0, stamped: 0 };
  window.fetch = async (input, init) => {
    const h = new Headers(init && init.headers);
    if (h.has("Service-Wallet-Signature")) window.__hook.stamped++;
    const res = await orig(input, init);
    if (window.__hook.armed && init && init.method === "PATCH" && res.status === 202) {
      window.__hook.armed = false;
      const j = await res.json();
      const altered = j.payloadToSign.replace('"privateEnabled":true', '"privateEnabled":false');
      if (altered === j.payloadToSign) throw new Error("tamper hook: nothing to alter in " + j.payloadToSign);
      j.payloadToSign = altered;
      window.__hook.tampered++;
      return new Response(JSON.stringify(j), { status: 202, headers: res.headers });
    }
    return res;
  };
  return true;
})()`

// a11yCheck returns the accessibility and layout problems of the page at a
// phone's width: inputs without a label, buttons without a name, status
// lines that are not live regions, a missing viewport meta, horizontal
// scrolling.
const a11yCheck = `(() => {
  const problems = [];
  for (const i of document.querySelectorAll("input")) if (i.labels.length === 0) problems.push("input #" + i.id + " has no label");
  for (const b of document.querySelectorAll("button")) if (!b.textContent.trim()) problems.push("button #" + b.id + " has no name");
  for (const s of document.querySelectorAll(".status")) if (s.getAttribute("role") !== "status") problems.push("#" + s.id + " is not role=status");
  if (!document.querySelector('meta[name=viewport][content*="width=device-width"]')) problems.push("no viewport meta");
  if (document.documentElement.scrollWidth > window.innerWidth) problems.push("scrolls sideways: " + document.documentElement.scrollWidth + " > " + window.innerWidth);
  if (document.documentElement.lang !== "en") problems.push("no lang");
  return problems;
})()`

// TestBrowserWalksEveryStep drives the page in headless Chromium (phone
// viewport, a virtual authenticator) through every step, on the memory store
// and, with WALLETGATE_POSTGRES_DSN, on PostgreSQL, asserting each step's
// visible outcome and a refusal: a malformed email (400 INVALID_INPUT), a
// wrong OTP code (401 UNAUTHORIZED), a payload altered in transit refused by
// the page before stamping (and nothing stamped sent), a payout to the
// unproven wallet (400 EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED) then paid
// after the proof, and the revoked session's signature (401
// WALLET_SIGNATURE_INVALID). It skips without Chromium at /usr/bin/chromium.
func TestBrowserWalksEveryStep(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("Chromium is not installed at %s (apt-get install -y chromium; .ci/run does); skipping the browser test of examples/web", chromiumPath)
	}
	t.Run("memory", func(t *testing.T) { walk(t, start(t), *screenshots) })
	t.Run("postgres", func(t *testing.T) {
		dsn := os.Getenv("WALLETGATE_POSTGRES_DSN")
		if dsn == "" {
			t.Skip("WALLETGATE_POSTGRES_DSN is not set; skipping the PostgreSQL run")
		}
		walk(t, start(t, "-postgres", dsn), false)
	})
}

// walk drives one server's page through every step.
func walk(t *testing.T, s *server, shoot bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("hide-scrollbars", true), chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()

	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(expr string) any {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[any](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	shot := func(name, section string) {
		t.Helper()
		if !shoot {
			return
		}
		// The element's top at the top of the viewport: a section, or with
		// "last:<step>" the last entry of the step's log.
		target := fmt.Sprintf(`document.getElementById(%q)`, section)
		if step, ok := strings.CutPrefix(section, "last:"); ok {
			target = fmt.Sprintf(`document.querySelector("#%s-log .entry:last-of-type")`, step)
		}
		eval(fmt.Sprintf(`(%s).scrollIntoView({block: "start"}); true`, target))
		png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join("testdata", "screenshots", name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// act clears step's status, runs the actions (a click, keys) and waits
	// for the status to settle; the outcome must be want and the text must
	// contain each of texts.
	act := func(step, want string, texts []string, actions ...chromedp.Action[chromedp.Void]) string {
		t.Helper()
		eval(fmt.Sprintf(`(() => { const e = document.getElementById(%q); e.dataset.outcome = ""; e.textContent = ""; return true; })()`, step+"-status"))
		do(step, actions...)
		got, err := chromedp.Run(bctx, chromedp.Poll[map[string]string](fmt.Sprintf(`(() => {
			const e = document.getElementById(%q);
			return e.dataset.outcome && e.dataset.outcome !== "busy" ? {outcome: e.dataset.outcome, text: e.textContent} : null;
		})()`, step+"-status"), chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second)))
		if err != nil {
			t.Fatalf("%s: waiting for the status: %v", step, err)
		}
		if got["outcome"] != want {
			t.Fatalf("%s: outcome %q (%s), want %q", step, got["outcome"], got["text"], want)
		}
		for _, s := range texts {
			if !strings.Contains(got["text"], s) {
				t.Fatalf("%s: status %q does not say %q", step, got["text"], s)
			}
		}
		// The log shows each request with its answer, and a refusal's code.
		logText, _ := eval(fmt.Sprintf(`document.getElementById(%q).textContent`, step+"-log")).(string)
		if !strings.Contains(logText, "Request") || !strings.Contains(logText, "Answer: HTTP") {
			t.Fatalf("%s: the log shows no request and answer: %q", step, logText)
		}
		if f := strings.Fields(got["text"]); want == "refused" && len(f) > 2 && f[0] == "Refused:" {
			code := strings.TrimSuffix(f[2], ":")
			if !strings.Contains(logText, "Error code: "+code+", HTTP "+f[1]) {
				t.Fatalf("%s: the log does not show the error code %s (HTTP %s): %q", step, code, f[1], logText)
			}
		}
		t.Logf("%s: %s", step, got["text"])
		return got["text"]
	}
	click := func(id string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.ID(id)) }
	typeIn := func(id, text string) chromedp.Action[chromedp.Void] {
		clear := chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(document.getElementById(%q).value = "", true)`, id)))
			return err
		})
		return chromedp.Steps(clear, chromedp.SendKeys(chromedp.ID(id), text))
	}

	// A phone: 390 x 844 CSS pixels, portrait, touch.
	do("viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulatePortrait, chromedp.EmulateMobile, chromedp.EmulateTouch))
	do("navigate", chromedp.Navigate(s.origin+"/"), chromedp.WaitReady(chromedp.CSS("body[data-ready=true]")))
	off := false
	if _, err := chromedp.Call(bctx, webauthn.Enable, webauthn.EnableParams{EnableUI: &off}); err != nil {
		t.Fatalf("WebAuthn.enable: %v", err)
	}
	// AutomaticPresenceSimulation and IsUserVerified have no omitempty: left
	// unset, every ceremony waits for a touch.
	if _, err := chromedp.Call(bctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
		Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21,
		Transport: webauthn.AuthenticatorTransportInternal, HasResidentKey: true, HasUserVerification: true,
		IsUserVerified: true, AutomaticPresenceSimulation: true}}); err != nil {
		t.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	if problems, ok := eval(a11yCheck).([]any); !ok || len(problems) > 0 {
		t.Fatalf("accessibility and layout: %v", problems)
	}
	if got := eval(`document.getElementById("config-status").dataset.outcome`); got != "ok" {
		t.Fatalf("config status %v", got)
	}
	shot("00-start", "top")

	// 1. Customer: a malformed email is refused, then the form is submitted
	// from the keyboard (Enter in the email field).
	act("customer", "refused", []string{"Refused: 400 INVALID_INPUT", "email"}, typeIn("email", "not-an-email"), click("create-customer"))
	shot("01-customer-refused", "step-customer")
	email := fmt.Sprintf("ada.web.%d@example.com", time.Now().UnixNano())
	act("customer", "ok", []string{"Created Customer:", "wallet InternalAccount:", "EMAIL_OTP credential AuthMethod:"},
		typeIn("email", email+kb.Enter))
	shot("01-customer", "step-customer")

	// 2. EMAIL_OTP: the bundle checked against the pinned key, a wrong code
	// refused, the sandbox's code accepted after its payload was checked.
	act("otp", "ok", []string{"Code sent", "signed by the pinned key"}, click("otp-send"))
	act("otp", "refused", []string{"Refused: 401 UNAUTHORIZED", "Invalid OTP code"}, typeIn("otp-code", "123456"), click("otp-verify"))
	shot("02-otp-wrong-code", "step-otp")
	act("otp", "ok", []string{"Logged in: EMAIL_OTP session Session:"}, typeIn("otp-code", "000000"+kb.Enter))
	shot("02-otp", "step-otp")

	// 3. Passkey: registration (signed by the email session) and login.
	act("passkey", "ok", []string{"Passkey registered: AuthMethod:"}, click("passkey-register"))
	act("passkey", "ok", []string{"Logged in with the passkey: PASSKEY session Session:"}, click("passkey-login"))
	shot("03-passkey", "step-passkey")

	// 4. Signed wallet update: an altered payload is refused before
	// stamping and no stamped request leaves the page; then the real one.
	eval(tamperHook)
	eval(`window.__hook.armed = true`)
	act("privacy", "refused", []string{"Not signed: the payload failed the parameters check"}, click("privacy-update"))
	if got := eval(`[window.__hook.tampered, window.__hook.stamped]`); fmt.Sprint(got) != "[1 0]" {
		t.Fatalf("tampered, stamped requests = %v, want [1 0]: the page stamped an altered payload", got)
	}
	shot("04-privacy-tampered", "last:privacy")
	act("privacy", "ok", []string{"Signed and applied: privateEnabled is true"}, click("privacy-update"))
	if got := eval(`window.__hook.stamped`); fmt.Sprint(got) != "1" {
		t.Fatalf("stamped requests = %v after the update, want 1", got)
	}
	shot("04-privacy", "step-privacy")

	// 5. The page's Ethereum wallet, registered unproven.
	act("eth", "ok", []string{"Registered 0x", "PENDING_OWNERSHIP_VERIFICATION"}, click("eth-create"))
	shot("05-eth-wallet", "step-eth")

	// 6. A payout of 1000 USDC (the threshold) to it is refused.
	act("payout", "ok", []string{"Funded: 2000 USDC"}, click("fund"))
	act("payout", "refused", []string{"Refused: 400 EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED", "verification threshold"}, click("payout"))
	shot("06-payout-refused", "step-payout")

	// 7. personal_sign proves the wallet.
	act("prove", "ok", []string{"Proven: ExternalAccount:", "is ACTIVE"}, click("prove"))
	shot("07-proof", "step-prove")

	// 8. The same payout now goes through, its payload checked and stamped.
	act("payout-again", "ok", []string{"Paid: Transaction:", "COMPLETED", "1000000000 USDC units"}, click("payout-again"))
	shot("08-payout", "step-payout-again")

	// 9. The passkey session revokes the email session, whose key is then
	// refused.
	act("revoke", "ok", []string{"Revoked the email session Session:", "1 session(s) remain"}, click("revoke"))
	act("revoke", "refused", []string{"Refused: 401 WALLET_SIGNATURE_INVALID"}, click("revoked-try"))
	shot("09-revoke", "step-revoke")

	// Keyboard: Tab moves the focus from a button to the next control in
	// document order (the scrollable request and answer blocks included).
	if got := eval(`(() => { const b = document.getElementById("privacy-update"); b.focus(); window.__from = b; return document.activeElement === b; })()`); got != true {
		t.Fatalf("the privacy button cannot take the focus")
	}
	do("keyboard", chromedp.KeyEvent(kb.Tab))
	if got := eval(`document.activeElement !== window.__from && !!(window.__from.compareDocumentPosition(document.activeElement) & Node.DOCUMENT_POSITION_FOLLOWING)`); got != true {
		t.Fatalf("Tab did not move the focus forward from the privacy button")
	}
}
