package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry/stamper"
)

// expectCase is one payload checked by Go's stamper.Expectation and by
// the page's expect.js.
type expectCase struct {
	Name      string          `json:"name"`
	Payload   string          `json:"payload"`
	Method    string          `json:"method"`
	Path      string          `json:"path"`
	AccountID string          `json:"accountId"`
	Body      *string         `json:"body"`
	Params    json.RawMessage `json:"parameters"`
}

// goVerdict is Go's verdict on c: "ok", the failed check's name
// (details.check), or "payloadToSign" for a payload that does not parse.
func goVerdict(t *testing.T, typ string, c expectCase) string {
	var body []byte
	if c.Body != nil {
		body = []byte(*c.Body)
	}
	_, err := stamper.Expectation{Type: typ, AccountID: c.AccountID, Body: body, Parameters: c.Params}.Check(c.Payload)
	if err == nil {
		return "ok"
	}
	e := apierror.As(err)
	if check, ok := e.Details["check"].(string); ok && e.Code == apierror.Unauthorized {
		return check
	}
	if e.Code == apierror.InvalidInput {
		for _, f := range e.FieldErrors() {
			if f.Field == "payloadToSign" {
				return "payloadToSign"
			}
		}
	}
	t.Fatalf("%s: Go refused with %v", c.Name, err)
	return ""
}

// TestExpectPortMatchesGo runs expect.js's checkPayload in Chromium on
// payloads that Go's stamper.Expectation.Check accepts or refuses, and
// requires the same verdict, the failed check included: the port refuses
// what Go refuses, for the same reason, and accepts what Go accepts (a body
// sent with other member order and white space, parameters spelled
// differently).
func TestExpectPortMatchesGo(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("Chromium is not installed at %s (apt-get install -y chromium; .ci/run does); skipping the comparison of expect.js with Go", chromiumPath)
	}
	const acct = "InternalAccount:0b6f1c52-8d0e-4f7a-9a51-2f4c8e1d7a10"
	const reqID = "Request:7d1f2c3b-4a5e-4f60-8a7b-000000000001"
	exp := time.Now().Add(4 * time.Minute).UTC().Format(time.RFC3339Nano)
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano)
	digest := func(body string) string {
		d, err := stamper.BodyDigest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%x", d)
	}
	payload := func(typ, account, params, bodySha, expires string) string {
		return fmt.Sprintf(`{"type":%q,"requestId":%q,"accountId":%q,"parameters":%s,"bodySha256":%q,"timestampMs":"1764000000000","expiresAt":%q}`,
			typ, reqID, account, params, bodySha, expires)
	}
	str := func(s string) *string { return &s }
	privBody := `{"privateEnabled":true}`
	outBody := `{"source":{"accountId":"` + acct + `"},"destination":{"accountId":"ExternalAccount:x"},"amount":1000000000}`
	outParams := `{"sourceAccountId":"` + acct + `","destinationAccountId":"ExternalAccount:x","amount":1000000000,"currency":"USDC"}`
	priv := func(name, p string) expectCase {
		return expectCase{Name: name, Payload: p, Method: "PATCH", Path: "/internal-accounts/" + acct, AccountID: acct, Body: str(privBody), Params: json.RawMessage(`{"privateEnabled":true}`)}
	}
	cases := []expectCase{
		priv("accepted", payload("UPDATE_WALLET_PRIVACY", acct, `{"privateEnabled":true}`, digest(privBody), exp)),
		{Name: "body sent with other spacing and order", Payload: payload("TRANSFER_OUT", acct, outParams, digest(outBody), exp), Method: "POST", Path: "/transfer-out", AccountID: acct,
			Body:   str(`{ "amount": 1000000000, "destination": {"accountId": "ExternalAccount:x"}, "source": {"accountId": "` + acct + `"} }`),
			Params: json.RawMessage(`{"currency":"USDC","amount":1e9,"destinationAccountId":"ExternalAccount:x","sourceAccountId":"` + acct + `"}`)},
		{Name: "no body", Payload: payload("REVOKE_SESSION", acct, `{"sessionId":"Session:1"}`, digest(""), exp), Method: "DELETE", Path: "/auth/sessions/Session:1", AccountID: acct,
			Params: json.RawMessage(`{"sessionId":"Session:1"}`)},
		{Name: "unicode body", Payload: payload("UPDATE_WALLET_PRIVACY", acct, `{"privateEnabled":true}`, digest(`{"privateEnabled":true,"note":"é\u00e9😀\n"}`), exp),
			Method: "PATCH", Path: "/internal-accounts/" + acct, AccountID: acct, Body: str(`{"note":"\u00e9é\ud83d\ude00\n","privateEnabled":true}`), Params: json.RawMessage(`{"privateEnabled":true}`)},
		priv("another type", payload("EXPORT_WALLET", acct, `{"privateEnabled":true}`, digest(privBody), exp)),
		priv("another account", payload("UPDATE_WALLET_PRIVACY", "InternalAccount:other", `{"privateEnabled":true}`, digest(privBody), exp)),
		priv("another body", payload("UPDATE_WALLET_PRIVACY", acct, `{"privateEnabled":true}`, digest(`{"privateEnabled":false}`), exp)),
		priv("other parameters", payload("UPDATE_WALLET_PRIVACY", acct, `{"privateEnabled":false}`, digest(privBody), exp)),
		priv("a parameter more", payload("UPDATE_WALLET_PRIVACY", acct, `{"privateEnabled":true,"clientPublicKey":"02aa"}`, digest(privBody), exp)),
		priv("a parameter less", payload("UPDATE_WALLET_PRIVACY", acct, `{}`, digest(privBody), exp)),
		priv("expired", payload("UPDATE_WALLET_PRIVACY", acct, `{"privateEnabled":true}`, digest(privBody), past)),
		priv("a member repeated", strings.Replace(payload("UPDATE_WALLET_PRIVACY", acct, `{"privateEnabled":true}`, digest(privBody), exp), `{"type":"UPDATE_WALLET_PRIVACY",`, `{"type":"EXPORT_WALLET","type":"UPDATE_WALLET_PRIVACY",`, 1)),
		priv("names differing in case", strings.Replace(payload("UPDATE_WALLET_PRIVACY", acct, `{"privateEnabled":true}`, digest(privBody), exp), `"parameters":{`, `"parameters":{"PrivateEnabled":false,`, 1)),
		priv("an unknown member", strings.Replace(payload("UPDATE_WALLET_PRIVACY", acct, `{"privateEnabled":true}`, digest(privBody), exp), `{"type"`, `{"method":"PATCH","type"`, 1)),
		priv("a member missing", strings.Replace(payload("UPDATE_WALLET_PRIVACY", acct, `{"privateEnabled":true}`, digest(privBody), exp), `"timestampMs":"1764000000000",`, ``, 1)),
		priv("requestId not a Request id", strings.Replace(payload("UPDATE_WALLET_PRIVACY", acct, `{"privateEnabled":true}`, digest(privBody), exp), reqID, "Request:1", 1)),
		priv("bodySha256 in upper case", payload("UPDATE_WALLET_PRIVACY", acct, `{"privateEnabled":true}`, strings.ToUpper(digest(privBody)), exp)),
		priv("timestampMs with a leading zero", strings.Replace(payload("UPDATE_WALLET_PRIVACY", acct, `{"privateEnabled":true}`, digest(privBody), exp), `"1764000000000"`, `"01764000000000"`, 1)),
		priv("parameters not an object", payload("UPDATE_WALLET_PRIVACY", acct, `[true]`, digest(privBody), exp)),
		priv("trailing data", payload("UPDATE_WALLET_PRIVACY", acct, `{"privateEnabled":true}`, digest(privBody), exp)+" {}"),
		priv("not JSON", "UPDATE_WALLET_PRIVACY"),
	}
	types := map[string]string{"PATCH": "UPDATE_WALLET_PRIVACY", "POST": "TRANSFER_OUT", "DELETE": "REVOKE_SESSION"}
	want := map[string]string{}
	for _, c := range cases {
		want[c.Name] = goVerdict(t, types[c.Method], c)
	}
	for _, name := range []string{"accepted", "body sent with other spacing and order", "no body", "unicode body"} {
		if want[name] != "ok" {
			t.Fatalf("Go refuses %q (%s): the case is wrong", name, want[name])
		}
	}

	s := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true), chromedp.Flag("disable-background-networking", true), chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx, chromedp.Navigate(s.origin+"/"), chromedp.WaitReady(chromedp.CSS("body[data-ready=true]"))); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(bctx, chromedp.Evaluate[map[string]string](`(async () => {
		const { checkPayload } = await import("/expect.js");
		const out = {};
		for (const c of `+string(js)+`) {
			try {
				await checkPayload(c.payload, { method: c.method, path: c.path, accountId: c.accountId, body: c.body ?? undefined, parameters: c.parameters });
				out[c.name] = "ok";
			} catch (e) {
				out[c.name] = e.check || ("not a Refusal: " + e);
			}
		}
		return out;
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if got[c.Name] != want[c.Name] {
			t.Errorf("%s: expect.js says %q, Go says %q", c.Name, got[c.Name], want[c.Name])
		}
	}
}
