package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/walletgate/walletgate/examples/client"
	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/storage/postgres/pgtest"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// genKeys runs -gen-keys and returns the at-rest values it prints, after
// checking the bundle signing key it prints too.
func genKeys(t *testing.T) (seal, mac string) {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-gen-keys"}, &out); err != nil {
		t.Fatal(err)
	}
	vals := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		k, v, _ := strings.Cut(line, "=")
		vals[k] = v
	}
	if len(vals) != 3 {
		t.Fatalf("-gen-keys printed %q", out.String())
	}
	t.Setenv(envSigningKey, vals[envSigningKey])
	if k, err := signingKey(); err != nil || k == nil {
		t.Fatalf("%s: %v", envSigningKey, err)
	}
	t.Setenv(envSigningKey, "")
	return vals[envSealKeys], vals[envCodeMACKey]
}

func TestServerGenKeys(t *testing.T) {
	seal, mac := genKeys(t)
	if k, err := secret.ParseKey(seal); err != nil || k.ID() != "k1" {
		t.Fatalf("%s=%s: %v", envSealKeys, seal, err)
	}
	if b, err := base64.StdEncoding.DecodeString(mac); err != nil || len(b) != walletauth.MinCodeMACKeyLen {
		t.Fatalf("%s=%s: %d bytes, %v", envCodeMACKey, mac, len(b), err)
	}
	if seal2, mac2 := genKeys(t); seal2 == seal || mac2 == mac {
		t.Fatal("-gen-keys printed the same keys twice")
	}
	t.Setenv(envSealKeys, seal)
	t.Setenv(envCodeMACKey, mac)
	serve(t)
}

// TestServerKeyErrors: incomplete or malformed keys stop the server before
// it listens, with an error that names the variable and hides its value.
func TestServerKeyErrors(t *testing.T) {
	seal, mac := genKeys(t)
	old, _ := secret.GenerateKey(nil, "k0")
	for _, tc := range []struct{ seal, mac, want string }{
		{seal, "", "set both"},
		{"", mac, "set both"},
		{"k1:not-base64!", mac, envSealKeys},
		{"k1", mac, envSealKeys},
		{seal + ",k1:" + base64.StdEncoding.EncodeToString(make([]byte, 32)), mac, "two different secrets"},
		{seal, "%%%" + mac, envCodeMACKey},
		{seal, base64.StdEncoding.EncodeToString(make([]byte, 16)), envCodeMACKey},
	} {
		t.Setenv(envSealKeys, tc.seal)
		t.Setenv(envCodeMACKey, tc.mac)
		// A run that wrongly accepts the keys serves until the timeout.
		runCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := run(runCtx, []string{"-addr", "127.0.0.1:0"}, io.Discard)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("seal %q, mac %q: %v, want an error about %q", tc.seal, tc.mac, err, tc.want)
			continue
		}
		_, secretPart, _ := strings.Cut(seal, ":")
		if strings.Contains(err.Error(), secretPart) || strings.Contains(err.Error(), mac) {
			t.Errorf("the error %q shows a key", err)
		}
	}
	// A retired key listed after the current one is accepted.
	t.Setenv(envSealKeys, seal+","+old.Encode())
	t.Setenv(envCodeMACKey, mac)
	serve(t)
}

// TestServerPostgresSharedKeys: two servers on one database with the same
// keys verify each other's codes; a server with generated keys cannot (500).
func TestServerPostgresSharedKeys(t *testing.T) {
	dsn := pgtest.DSN(t)
	seal, mac := genKeys(t)
	t.Setenv(envSealKeys, seal)
	t.Setenv(envCodeMACKey, mac)
	a, b := serve(t, "-postgres", dsn), serve(t, "-postgres", dsn)
	t.Setenv(envSealKeys, "")
	t.Setenv(envCodeMACKey, "")
	other := serve(t, "-postgres", dsn)

	ctx := context.Background()
	ca := client.New(a, sandbox.DefaultClientID, sandbox.DefaultClientSecret)
	var cust sandbox.Customer
	email := fmt.Sprintf("keys+%d@example.com", time.Now().UnixNano())
	if _, err := ca.Do(ctx, "POST", "/customers", map[string]any{"customerType": "INDIVIDUAL", "fullName": "Ada Lovelace", "email": email}, nil, &cust); err != nil {
		t.Fatal(err)
	}
	var wallets struct{ Data []sandbox.InternalAccount }
	if _, err := ca.Do(ctx, "GET", "/internal-accounts?customerId="+cust.ID, nil, nil, &wallets); err != nil || len(wallets.Data) != 1 {
		t.Fatalf("wallets: %v", err)
	}
	var creds struct{ Data []walletauth.AuthMethod }
	if _, err := ca.Do(ctx, "GET", "/auth/credentials?accountId="+wallets.Data[0].ID, nil, nil, &creds); err != nil || len(creds.Data) != 1 {
		t.Fatalf("credentials: %v", err)
	}
	cred := creds.Data[0].ID
	leg1 := func(verifier string) (int, string) {
		var m walletauth.ChallengeResponse
		if _, err := ca.Do(ctx, "POST", "/auth/credentials/"+cred+"/challenge", map[string]any{}, nil, &m); err != nil {
			t.Fatal(err)
		}
		key, _ := authclient.NewClientKey()
		bundle, err := key.SealOTP(m.OTPEncryptionTargetBundle, nil, walletauth.SandboxOTPCode, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := client.New(verifier, sandbox.DefaultClientID, sandbox.DefaultClientSecret).Do(ctx, "POST",
			"/auth/credentials/"+cred+"/verify", map[string]string{"type": "EMAIL_OTP", "encryptedOtpBundle": bundle}, nil, nil)
		if res == nil {
			t.Fatalf("verify: %v", err)
		}
		return res.Status, string(res.Body)
	}
	if status, body := leg1(b); status != 202 {
		t.Fatalf("a code issued by one server, verified by another with the same keys: %d %s", status, body)
	}
	if status, body := leg1(other); status != 500 || !strings.Contains(body, `"INTERNAL_ERROR"`) {
		t.Fatalf("verified by a server with other keys: %d %s, want 500 INTERNAL_ERROR", status, body)
	}
}
