package sandbox_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"net/http"
	"testing"

	"github.com/walletgate/walletgate/sandbox"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

// serve sends one request to h in process (see call) and fails the
// benchmark on a body that does not decode.
func serve(b *testing.B, h http.Handler, method, path string, body any, out any, headers ...string) int {
	code, err := call(h, method, path, body, out, headers...)
	if err != nil {
		b.Fatal(err)
	}
	return code
}

// benchWallet creates a simulator and one customer's wallet.
func benchWallet(b *testing.B) (*sandbox.Simulator, string, string) {
	sim, err := sandbox.New(sandbox.Config{})
	if err != nil {
		b.Fatal(err)
	}
	c, err := sim.CreateCustomer(b.Context(), sandbox.CustomerCreate{CustomerType: "INDIVIDUAL", FullName: "Ben Ch", Email: "bench@example.com"})
	if err != nil {
		b.Fatal(err)
	}
	accts, _ := sim.ListInternalAccounts(b.Context(), c.ID, sandbox.ListOptions{})
	creds, _ := sim.Auth().ListCredentials(b.Context(), accts.Data[0].ID)
	return sim, accts.Data[0].ID, creds[0].ID
}

// BenchmarkHandlerOTPLogin is a full EMAIL_OTP login through the handler:
// challenge, leg 1 with the sealed code, leg 2 stamped by the new key.
func BenchmarkHandlerOTPLogin(b *testing.B) {
	sim, _, credID := benchWallet(b)
	h := sim.Handler()
	b.ReportAllocs()
	for b.Loop() {
		var m walletauth.AuthMethod
		serve(b, h, "POST", "/auth/credentials/"+credID+"/challenge", struct{}{}, &m)
		key, _ := authclient.NewClientKey()
		bundle, _ := key.SealOTP(m.OTPEncryptionTargetBundle, sim.Auth().SigningPublicKey(), walletauth.SandboxOTPCode, nil)
		body := map[string]string{"type": "EMAIL_OTP", "encryptedOtpBundle": bundle}
		var ch signedretry.Challenge
		serve(b, h, "POST", "/auth/credentials/"+credID+"/verify", body, &ch)
		sig, _ := key.Stamp(ch.PayloadToSign)
		if code := serve(b, h, "POST", "/auth/credentials/"+credID+"/verify", body, nil,
			stamper.HeaderSignature, sig, stamper.HeaderRequestID, ch.RequestID); code != 200 {
			b.Fatalf("login answered %d", code)
		}
		b.StopTimer()
		// Reset the re-issue rate limit of the credential's code.
		sim, _, credID = benchWallet(b)
		h = sim.Handler()
		b.StartTimer()
	}
}

// BenchmarkServiceOTPLogin is the same login through walletauth's Go API,
// the work the handler wraps.
func BenchmarkServiceOTPLogin(b *testing.B) {
	sim, _, credID := benchWallet(b)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		svc := sim.Auth()
		m, err := svc.Challenge(ctx, credID, walletauth.ChallengeRequest{})
		if err != nil {
			b.Fatal(err)
		}
		key, _ := authclient.NewClientKey()
		bundle, _ := key.SealOTP(m.OTPEncryptionTargetBundle, svc.SigningPublicKey(), walletauth.SandboxOTPCode, nil)
		req := walletauth.VerifyRequest{Type: storage.EmailOTP, EncryptedOTPBundle: bundle}
		call := signedretry.Request{Method: "POST", Path: "/auth/credentials/" + credID + "/verify", Body: []byte(`{}`)}
		_, ch, err := svc.Verify(ctx, credID, req, call)
		if err != nil {
			b.Fatal(err)
		}
		call.Signature, _ = key.Stamp(ch.PayloadToSign)
		call.RequestID = ch.RequestID
		if _, _, err := svc.Verify(ctx, credID, req, call); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		sim, _, credID = benchWallet(b)
		b.StartTimer()
	}
}

// BenchmarkHandlerSignedExport is a signed-retry wallet export through the
// handler (both legs, HPKE seal of the mnemonic included).
func BenchmarkHandlerSignedExport(b *testing.B) {
	sim, wallet, credID := benchWallet(b)
	h := sim.Handler()
	var m walletauth.AuthMethod
	serve(b, h, "POST", "/auth/credentials/"+credID+"/challenge", struct{}{}, &m)
	key, _ := authclient.NewClientKey()
	bundle, _ := key.SealOTP(m.OTPEncryptionTargetBundle, sim.Auth().SigningPublicKey(), walletauth.SandboxOTPCode, nil)
	verify := map[string]string{"type": "EMAIL_OTP", "encryptedOtpBundle": bundle}
	var ch signedretry.Challenge
	serve(b, h, "POST", "/auth/credentials/"+credID+"/verify", verify, &ch)
	sig, _ := key.Stamp(ch.PayloadToSign)
	serve(b, h, "POST", "/auth/credentials/"+credID+"/verify", verify, nil, stamper.HeaderSignature, sig, stamper.HeaderRequestID, ch.RequestID)
	exp, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pub, _ := exp.PublicKey.Bytes()
	body := map[string]string{"clientPublicKey": fmt.Sprintf("%x", pub)}
	path := "/internal-accounts/" + wallet + "/export"
	b.ReportAllocs()
	for b.Loop() {
		var ch signedretry.Challenge
		serve(b, h, "POST", path, body, &ch)
		sig, _ := key.Stamp(ch.PayloadToSign)
		if code := serve(b, h, "POST", path, body, nil, stamper.HeaderSignature, sig, stamper.HeaderRequestID, ch.RequestID); code != 200 {
			b.Fatalf("export answered %d", code)
		}
	}
}

// BenchmarkStampVerifyPrimitive is the raw P-256 verification a signed
// retry rests on: ECDSA over SHA-256 of a payload of the same size.
func BenchmarkStampVerifyPrimitive(b *testing.B) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	payload := bytes.Repeat([]byte("p"), 330)
	d := sha256.Sum256(payload)
	sig, _ := ecdsa.SignASN1(rand.Reader, k, d[:])
	b.ReportAllocs()
	for b.Loop() {
		d := sha256.Sum256(payload)
		if !ecdsa.VerifyASN1(&k.PublicKey, d[:], sig) {
			b.Fatal("invalid")
		}
	}
}

// BenchmarkHandlerGetCustomer is an authenticated read through the handler
// (Basic credentials, routing, JSON).
func BenchmarkHandlerGetCustomer(b *testing.B) {
	sim, _, _ := benchWallet(b)
	c, _ := sim.CreateCustomer(b.Context(), sandbox.CustomerCreate{CustomerType: "INDIVIDUAL", FullName: "Re Ad", Email: "read@example.com"})
	h := sim.Handler()
	b.ReportAllocs()
	for b.Loop() {
		if code := serve(b, h, "GET", "/customers/"+c.ID, nil, nil); code != 200 {
			b.Fatal(code)
		}
	}
}

// BenchmarkGetCustomer is the same read through the Go API.
func BenchmarkGetCustomer(b *testing.B) {
	sim, _, _ := benchWallet(b)
	c, _ := sim.CreateCustomer(b.Context(), sandbox.CustomerCreate{CustomerType: "INDIVIDUAL", FullName: "Re Ad", Email: "read@example.com"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sim.GetCustomer(b.Context(), c.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTransfer returns a simulator and a transfer-in of one cent from a
// customer's USD bank account to their wallet.
func benchTransfer(b *testing.B) (*sandbox.Simulator, sandbox.TransferRequest) {
	sim, wallet, _ := benchWallet(b)
	w, _ := sim.GetInternalAccount(b.Context(), wallet)
	info := []byte(`{"accountType":"USD_ACCOUNT","accountNumber":"61616101","routingNumber":"021000021",` +
		`"beneficiary":{"beneficiaryType":"INDIVIDUAL","fullName":"Ben Ch"}}`)
	ext, err := sim.CreateExternalAccount(b.Context(), sandbox.ExternalAccountCreate{CustomerID: w.CustomerID, Currency: "USD", AccountInfo: info})
	if err != nil {
		b.Fatal(err)
	}
	return sim, sandbox.TransferRequest{Source: sandbox.AccountRef{AccountID: ext.ID}, Destination: sandbox.AccountRef{AccountID: wallet}, Amount: 1}
}

// BenchmarkTransferIn is a transfer-in without an Idempotency-Key, the
// baseline of BenchmarkTransferInKeyed.
func BenchmarkTransferIn(b *testing.B) {
	sim, req := benchTransfer(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sim.TransferIn(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransferInKeyed is the same transfer-in under a fresh
// Idempotency-Key each time: the reservation, the stored answer and the key
// itself (a random UUID) on the memory store.
func BenchmarkTransferInKeyed(b *testing.B) {
	sim, req := benchTransfer(b)
	b.ReportAllocs()
	var k [16]byte
	for b.Loop() {
		_, _ = rand.Read(k[:])
		k[6], k[8] = k[6]&0x0f|0x40, k[8]&0x3f|0x80
		req.IdempotencyKey = fmt.Sprintf("%x-%x-%x-%x-%x", k[0:4], k[4:6], k[6:8], k[8:10], k[10:16])
		if _, err := sim.TransferIn(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}
