package passkey_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"testing"
	"time"

	"github.com/descope/virtualwebauthn"
	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/passkey"
)

const (
	testRPID   = "wallet.example.com"
	testOrigin = "https://wallet.example.com"
	account1   = "InternalAccount:11111111-1111-4111-8111-111111111111"
	account2   = "InternalAccount:22222222-2222-4222-8222-222222222222"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

var virtualRP = virtualwebauthn.RelyingParty{ID: testRPID, Name: "Wallet", Origin: testOrigin}

func testRP() passkey.RelyingParty {
	return passkey.RelyingParty{ID: testRPID, Name: "Wallet", Origins: []string{testOrigin}}
}

func newVerifier(t testing.TB, mutate func(*passkey.RelyingParty), mods ...func(*passkey.Config)) *passkey.Verifier {
	t.Helper()
	rp := testRP()
	if mutate != nil {
		mutate(&rp)
	}
	cfg := passkey.Config{RelyingParty: rp}
	for _, m := range mods {
		m(&cfg)
	}
	v, err := passkey.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return v
}

// atomic runs fn in a transaction of s and returns its error.
func atomic(t testing.TB, s storage.Store, fn func(tx storage.Tx) error) error {
	t.Helper()
	return s.Atomic(context.Background(), fn)
}

func issue(t testing.TB, v *passkey.Verifier, s storage.Store, accountID string, now time.Time) *passkey.RegistrationChallenge {
	t.Helper()
	var rc *passkey.RegistrationChallenge
	if err := atomic(t, s, func(tx storage.Tx) error {
		var err error
		rc, err = v.IssueRegistrationChallenge(context.Background(), tx, accountID, now)
		return err
	}); err != nil {
		t.Fatalf("IssueRegistrationChallenge: %v", err)
	}
	return rc
}

func register(v *passkey.Verifier, s storage.Store, req passkey.RegistrationRequest, now time.Time) (*passkey.Registration, error) {
	var reg *passkey.Registration
	err := s.Atomic(context.Background(), func(tx storage.Tx) error {
		var err error
		reg, err = v.VerifyRegistration(context.Background(), tx, req, now)
		return err
	})
	return reg, err
}

// store saves a registration as a PASSKEY credential.
func store(t testing.TB, s storage.Store, reg *passkey.Registration) {
	t.Helper()
	if err := atomic(t, s, func(tx storage.Tx) error {
		return tx.Credentials().Create(context.Background(), &storage.Credential{
			ID: "AuthMethod:" + base64.RawURLEncoding.EncodeToString(reg.Credential.CredentialID)[:8], AccountID: reg.AccountID,
			Type: storage.Passkey, Nickname: reg.Nickname, WebAuthn: reg.Credential, CreatedAt: t0, UpdatedAt: t0})
	}); err != nil {
		t.Fatalf("storing credential: %v", err)
	}
}

func mustB64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("decoding %q: %v", s, err)
	}
	return b
}

// newCredential returns a virtualwebauthn credential. virtualwebauthn
// encodes EC2 coordinates with big.Int.Bytes, so about one key in 64 has a
// coordinate shorter than 32 bytes, which go-webauthn (rightly) rejects; such
// keys are not drawn here.
func newCredential(t testing.TB, kt virtualwebauthn.KeyType) virtualwebauthn.Credential {
	t.Helper()
	if kt != virtualwebauthn.KeyTypeEC2 {
		return virtualwebauthn.NewCredential(kt)
	}
	for {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if len(k.X.Bytes()) != 32 || len(k.Y.Bytes()) != 32 {
			continue
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return virtualwebauthn.NewCredentialWithImportedKey(kt, der)
	}
}

// virtualAttestation runs a registration ceremony on a virtualwebauthn
// authenticator.
func virtualAttestation(t testing.TB, rp virtualwebauthn.RelyingParty, auth virtualwebauthn.Authenticator, cred virtualwebauthn.Credential, challenge, accountID string) passkey.Attestation {
	t.Helper()
	resp := virtualwebauthn.CreateAttestationResponse(rp, auth, cred, virtualwebauthn.AttestationOptions{
		Challenge: mustB64(t, challenge), RelyingPartyID: rp.ID, RelyingPartyName: rp.Name, UserID: accountID, UserName: "jane"})
	var r struct {
		RawID    string `json:"rawId"`
		Response struct {
			ClientDataJSON    string `json:"clientDataJSON"`
			AttestationObject string `json:"attestationObject"`
		} `json:"response"`
	}
	if err := json.Unmarshal([]byte(resp), &r); err != nil {
		t.Fatal(err)
	}
	return passkey.Attestation{CredentialID: r.RawID, ClientDataJSON: r.Response.ClientDataJSON,
		AttestationObject: r.Response.AttestationObject, Transports: []string{"internal", "hybrid"}}
}

// virtualAssertion runs an authentication ceremony on a virtualwebauthn
// authenticator for a hex challenge.
func virtualAssertion(t testing.TB, rp virtualwebauthn.RelyingParty, auth virtualwebauthn.Authenticator, cred virtualwebauthn.Credential, challengeHex string) passkey.Assertion {
	t.Helper()
	resp := virtualwebauthn.CreateAssertionResponse(rp, auth, cred, virtualwebauthn.AssertionOptions{
		Challenge: []byte(challengeHex), RelyingPartyID: rp.ID,
		AllowCredentials: []string{base64.RawURLEncoding.EncodeToString(cred.ID)}})
	var r struct {
		RawID    string `json:"rawId"`
		Response struct {
			ClientDataJSON    string `json:"clientDataJSON"`
			AuthenticatorData string `json:"authenticatorData"`
			Signature         string `json:"signature"`
			UserHandle        string `json:"userHandle"`
		} `json:"response"`
	}
	if err := json.Unmarshal([]byte(resp), &r); err != nil {
		t.Fatal(err)
	}
	return passkey.Assertion{CredentialID: r.RawID, ClientDataJSON: r.Response.ClientDataJSON,
		AuthenticatorData: r.Response.AuthenticatorData, Signature: r.Response.Signature, UserHandle: r.Response.UserHandle}
}

// edAuthenticator is a software Ed25519 authenticator producing "none"
// attestations, with every client-data and flag member under the test's
// control (virtualwebauthn has no EdDSA and no "none" format).
type edAuthenticator struct {
	key     ed25519.PrivateKey
	id      []byte
	rpID    string
	origin  string
	flags   byte
	counter uint32
	// typ overrides the client data type when set.
	typ string
	// crossOrigin sets clientData.crossOrigin.
	crossOrigin bool
}

const (
	flagUP = 0x01
	flagUV = 0x04
	flagBE = 0x08
	flagBS = 0x10
	flagAT = 0x40
)

func newEdAuthenticator(t testing.TB) *edAuthenticator {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	return &edAuthenticator{key: k, id: id, rpID: testRPID, origin: testOrigin, flags: flagUP | flagUV}
}

func (a *edAuthenticator) clientData(typ, challenge string) []byte {
	if a.typ != "" {
		typ = a.typ
	}
	cd := map[string]any{"type": typ, "challenge": challenge, "origin": a.origin}
	if a.crossOrigin {
		cd["crossOrigin"] = true
	}
	b, _ := json.Marshal(cd)
	return b
}

func (a *edAuthenticator) authData(attested bool) []byte {
	h := sha256.Sum256([]byte(a.rpID))
	out := append([]byte{}, h[:]...)
	flags := a.flags
	if attested {
		flags |= flagAT
	}
	out = append(out, flags)
	out = binary.BigEndian.AppendUint32(out, a.counter)
	if attested {
		pub := a.key.Public().(ed25519.PublicKey)
		cose, err := webauthncbor.Marshal(webauthncose.OKPPublicKeyData{
			PublicKeyData: webauthncose.PublicKeyData{KeyType: int64(webauthncose.OctetKey), Algorithm: int64(webauthncose.AlgEdDSA)},
			Curve:         int64(webauthncose.Ed25519), XCoord: pub})
		if err != nil {
			panic(err)
		}
		out = append(out, make([]byte, 16)...) // AAGUID
		out = binary.BigEndian.AppendUint16(out, uint16(len(a.id)))
		out = append(out, a.id...)
		out = append(out, cose...)
	}
	return out
}

func (a *edAuthenticator) attest(challenge string) passkey.Attestation {
	cd := a.clientData("webauthn.create", challenge)
	obj, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": a.authData(true)})
	if err != nil {
		panic(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return passkey.Attestation{CredentialID: enc(a.id), ClientDataJSON: enc(cd), AttestationObject: enc(obj)}
}

func (a *edAuthenticator) assert(challengeHex string) passkey.Assertion {
	cd := a.clientData("webauthn.get", authclient.ClientDataChallenge(challengeHex))
	ad := a.authData(false)
	h := sha256.Sum256(cd)
	sig := ed25519.Sign(a.key, append(append([]byte{}, ad...), h[:]...))
	enc := base64.RawURLEncoding.EncodeToString
	return passkey.Assertion{CredentialID: enc(a.id), ClientDataJSON: enc(cd), AuthenticatorData: enc(ad), Signature: enc(sig)}
}

// wantFields checks a 400 INVALID_INPUT listing exactly these fields.
func wantFields(t testing.TB, err error, fields ...string) {
	t.Helper()
	apierrortest.Want(t, err, apierror.InvalidInput, "")
	got := []string{}
	for _, fe := range apierror.As(err).FieldErrors() {
		got = append(got, fe.Field)
	}
	if len(got) != len(fields) {
		t.Fatalf("fields %v, want %v", got, fields)
	}
	for i := range fields {
		if got[i] != fields[i] {
			t.Fatalf("fields %v, want %v", got, fields)
		}
	}
}

func newStore() storage.Store { return memory.New() }
