package passkey_test

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/walletauth/passkey"
)

const fingerprint = "1F:C6:9A:3B:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:01:23:45:67:89:AB:CD:EF:10:32:2D:D7"

func fullRP() passkey.RelyingParty {
	return passkey.RelyingParty{
		ID: "example.com", Name: "Example Wallet",
		Origins:     []string{"https://example.com", "https://Wallet.Example.com:443", "https://example.co.uk"},
		AndroidApps: []passkey.AndroidApp{{Package: "com.example.wallet", CertFingerprints: []string{fingerprint, strings.ToLower(strings.ReplaceAll(fingerprint, ":", ""))}}},
		AppleAppIDs: []string{"ABCDE12345.com.example.wallet"},
	}
}

func TestNewRejectsBadConfiguration(t *testing.T) {
	cases := map[string]func(*passkey.RelyingParty){
		"empty RP id":       func(rp *passkey.RelyingParty) { rp.ID = "" },
		"IP RP id":          func(rp *passkey.RelyingParty) { rp.ID = "127.0.0.1" },
		"RP id with scheme": func(rp *passkey.RelyingParty) { rp.ID = "https://example.com" },
		"RP id with port":   func(rp *passkey.RelyingParty) { rp.ID = "example.com:443" },
		"uppercase RP id":   func(rp *passkey.RelyingParty) { rp.ID = "Example.com" },
		"no name":           func(rp *passkey.RelyingParty) { rp.Name = " " },
		"origin with path":  func(rp *passkey.RelyingParty) { rp.Origins = []string{"https://example.com/login"} },
		"origin with query": func(rp *passkey.RelyingParty) { rp.Origins = []string{"https://example.com?x=1"} },
		"plain http origin": func(rp *passkey.RelyingParty) { rp.Origins = []string{"http://example.com"} },
		"ftp origin":        func(rp *passkey.RelyingParty) { rp.Origins = []string{"ftp://example.com"} },
		"bare host origin":  func(rp *passkey.RelyingParty) { rp.Origins = []string{"example.com"} },
		"no client":         func(rp *passkey.RelyingParty) { rp.Origins, rp.AndroidApps, rp.AppleAppIDs = nil, nil, nil },
		"bad Apple id":      func(rp *passkey.RelyingParty) { rp.AppleAppIDs = []string{"com.example.wallet"} },
		"lowercase team id": func(rp *passkey.RelyingParty) { rp.AppleAppIDs = []string{"abcde12345.com.example"} },
		"bad package":       func(rp *passkey.RelyingParty) { rp.AndroidApps[0].Package = "wallet" },
		"no fingerprint":    func(rp *passkey.RelyingParty) { rp.AndroidApps[0].CertFingerprints = nil },
		"SHA-1 fingerprint": func(rp *passkey.RelyingParty) { rp.AndroidApps[0].CertFingerprints = []string{fingerprint[:59]} },
		"misplaced colons": func(rp *passkey.RelyingParty) {
			rp.AndroidApps[0].CertFingerprints = []string{"1FC6:" + strings.ReplaceAll(fingerprint, ":", "")[4:]}
		},
		"not hex": func(rp *passkey.RelyingParty) {
			rp.AndroidApps[0].CertFingerprints = []string{strings.Repeat("ZZ", 32)}
		},
		"six registrable names": func(rp *passkey.RelyingParty) {
			rp.Origins = []string{"https://a.com", "https://b.com", "https://c.com", "https://d.com", "https://e.com", "https://f.com"}
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			rp := fullRP()
			rp.AndroidApps = slices.Clone(rp.AndroidApps)
			mutate(&rp)
			if _, err := passkey.New(passkey.Config{RelyingParty: rp}); err == nil {
				t.Fatal("New accepted the configuration")
			}
		})
	}
	for _, ok := range []func(*passkey.RelyingParty){
		func(rp *passkey.RelyingParty) {},
		func(rp *passkey.RelyingParty) { rp.ID, rp.Origins = "localhost", []string{"http://localhost:8080"} },
		func(rp *passkey.RelyingParty) { rp.Origins, rp.AppleAppIDs = nil, nil },
	} {
		rp := fullRP()
		ok(&rp)
		if _, err := passkey.New(passkey.Config{RelyingParty: rp}); err != nil {
			t.Errorf("New(%+v): %v", rp, err)
		}
	}
}

func TestAllowedOrigins(t *testing.T) {
	v, err := passkey.New(passkey.Config{RelyingParty: fullRP()})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := hex.DecodeString(strings.ReplaceAll(fingerprint, ":", ""))
	want := []string{"https://example.com", "https://wallet.example.com", "https://example.co.uk",
		"android:apk-key-hash:" + base64.RawURLEncoding.EncodeToString(raw)}
	if got := v.AllowedOrigins(); !slices.Equal(got, want) {
		t.Errorf("AllowedOrigins\n got %v\nwant %v", got, want)
	}
	rp := v.RelyingParty()
	rp.Origins[0] = "mutated"
	rp.AndroidApps[0].CertFingerprints[0] = "mutated"
	if v.RelyingParty().Origins[0] != "https://example.com" || v.RelyingParty().AndroidApps[0].CertFingerprints[0] != fingerprint {
		t.Error("RelyingParty shares its slices")
	}
	// iOS native requests carry https://<RP id>, allowed once an Apple app is set.
	ios, err := passkey.New(passkey.Config{RelyingParty: passkey.RelyingParty{ID: "example.com", Name: "x", AppleAppIDs: []string{"ABCDE12345.com.example.wallet"}}})
	if err != nil || !slices.Equal(ios.AllowedOrigins(), []string{"https://example.com"}) {
		t.Errorf("iOS-only origins: %v %v", err, ios.AllowedOrigins())
	}
}

func TestWellKnownFiles(t *testing.T) {
	v, err := passkey.New(passkey.Config{RelyingParty: fullRP()})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(v.AppleAppSiteAssociation()), `{"webcredentials":{"apps":["ABCDE12345.com.example.wallet"]}}`; got != want {
		t.Errorf("AASA\n got %s\nwant %s", got, want)
	}
	if got, want := string(v.AssetLinks()), `[{"relation":["delegate_permission/common.handle_all_urls","delegate_permission/common.get_login_creds"],`+
		`"target":{"namespace":"android_app","package_name":"com.example.wallet","sha256_cert_fingerprints":["`+fingerprint+`"]}}]`; got != want {
		t.Errorf("assetlinks\n got %s\nwant %s", got, want)
	}
	if got, want := string(v.RelatedOrigins()), `{"origins":["https://example.com","https://wallet.example.com","https://example.co.uk"]}`; got != want {
		t.Errorf("related origins\n got %s\nwant %s", got, want)
	}

	empty, err := passkey.New(passkey.Config{RelyingParty: passkey.RelyingParty{ID: "example.com", Name: "x", AndroidApps: fullRP().AndroidApps}})
	if err != nil {
		t.Fatal(err)
	}
	if string(empty.AppleAppSiteAssociation()) != `{"webcredentials":{"apps":[]}}` || string(empty.RelatedOrigins()) != `{"origins":[]}` {
		t.Errorf("empty files: %s %s", empty.AppleAppSiteAssociation(), empty.RelatedOrigins())
	}
	web := newVerifier(t, nil)
	if string(web.AssetLinks()) != `[]` {
		t.Errorf("empty assetlinks: %s", web.AssetLinks())
	}
}

func TestHandler(t *testing.T) {
	v, err := passkey.New(passkey.Config{RelyingParty: fullRP()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(v.Handler())
	defer srv.Close()
	for path, body := range map[string][]byte{
		passkey.PathAppleAppSiteAssociation: v.AppleAppSiteAssociation(),
		passkey.PathAssetLinks:              v.AssetLinks(),
		passkey.PathRelatedOrigins:          v.RelatedOrigins(),
	} {
		rec := httptest.NewRecorder()
		v.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || rec.Body.String() != string(body) {
			t.Errorf("GET %s: %d %q %s", path, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
		rec = httptest.NewRecorder()
		v.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodHead, path, nil))
		if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") == "0" {
			t.Errorf("HEAD %s: %d %q", path, rec.Code, rec.Body)
		}
		rec = httptest.NewRecorder()
		v.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, nil))
		if rec.Code != 405 || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("POST %s: %d", path, rec.Code)
		}
	}
	for _, path := range []string{"/.well-known/", "/.well-known/webauthn/", "/.well-known/assetlinks", "/"} {
		rec := httptest.NewRecorder()
		v.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != 404 {
			t.Errorf("GET %s: %d", path, rec.Code)
		}
	}
	web := newVerifier(t, nil)
	for _, path := range []string{passkey.PathAppleAppSiteAssociation, passkey.PathAssetLinks} {
		rec := httptest.NewRecorder()
		web.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != 404 {
			t.Errorf("unconfigured %s: %d", path, rec.Code)
		}
	}
}
