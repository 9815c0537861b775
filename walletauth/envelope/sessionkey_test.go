package envelope

import (
	"bytes"
	"crypto/ecdh"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/mr-tron/base58"
	"github.com/walletgate/walletgate/apierror"
)

func TestSessionKeyRoundTrip(t *testing.T) {
	client := testKey(t, "essk/client")
	clientECDH, _ := client.ECDH()
	for _, pub := range []string{compressedHex(t, client), uncompressedHex(t, client)} {
		essk, sessionPub, err := SealSessionKey(pub, nil)
		if err != nil {
			t.Fatal(err)
		}
		payload, problem := base58CheckDecode(essk)
		if problem != "" || len(payload) != 81 || (payload[0] != 2 && payload[0] != 3) {
			t.Fatalf("payload %x (%s)", payload, problem)
		}
		session, err := OpenSessionKey(clientECDH, essk)
		if err != nil {
			t.Fatal(err)
		}
		if !session.PublicKey.Equal(sessionPub) {
			t.Fatal("opened key does not match the returned public half")
		}
	}
}

func TestSealSessionKeyDeterministic(t *testing.T) {
	pub := compressedHex(t, testKey(t, "essk/client"))
	a, pa, err := SealSessionKey(pub, seeded("essk/det"))
	if err != nil {
		t.Fatal(err)
	}
	b, pb, _ := SealSessionKey(pub, seeded("essk/det"))
	c, pc, _ := SealSessionKey(pub, seeded("essk/other"))
	if a != b || !pa.Equal(pb) {
		t.Fatal("same seed gave different results")
	}
	if a == c || pa.Equal(pc) {
		t.Fatal("different seeds gave the same session key")
	}
}

func TestSealSessionKeyErrors(t *testing.T) {
	client := testKey(t, "essk/client")
	cases := map[string]struct{ in, reason string }{
		"empty":        {"", "clientPublicKey is required"},
		"not hex":      {strings.Repeat("q", 66), "clientPublicKey is not hex"},
		"wrong length": {compressedHex(t, client)[:64], "clientPublicKey must be 66 (compressed) or 130 (uncompressed) hex characters"},
		"off curve":    {"02" + noPointX(t), "clientPublicKey is not a point on P-256"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := SealSessionKey(c.in, nil)
			wantErr(t, err, apierror.InvalidInput, "clientPublicKey", c.reason)
		})
	}
	_, _, err := SealSessionKey(compressedHex(t, client), failingReader{})
	wantErr(t, err, apierror.InternalError, "", "")
}

// buildSessionKey seals scalar to client like SealSessionKey, so tests can
// put any plaintext in a well-formed encryptedSessionSigningKey.
func buildSessionKey(t testing.TB, client *ecdh.PublicKey, scalar []byte) string {
	t.Helper()
	enc, ct, err := Seal(client, scalar, nil)
	if err != nil {
		t.Fatal(err)
	}
	return base58CheckEncode(append(compressPoint(enc), ct...))
}

func TestOpenSessionKeyErrors(t *testing.T) {
	client := testECDH(t, "essk/client")
	other := testECDH(t, "essk/other")
	essk, _, err := SealSessionKey(hex.EncodeToString(client.PublicKey().Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := base58CheckDecode(essk)
	withPayload := func(f func([]byte) []byte) string {
		return base58CheckEncode(f(append([]byte{}, payload...)))
	}
	raw, _ := base58.Decode(essk)
	raw[len(raw)-1] ^= 1
	badChecksum := base58.Encode(raw)
	const F = "encryptedSessionSigningKey"
	bad, unauth := apierror.InvalidInput, apierror.Unauthorized
	cases := []struct {
		name   string
		key    *ecdh.PrivateKey
		in     string
		code   apierror.Code
		reason string
	}{
		{"empty", client, "", bad, "encryptedSessionSigningKey is required"},
		{"too long", client, strings.Repeat("2", MaxSessionKeyLen+1), bad, "encryptedSessionSigningKey exceeds 256 characters"},
		{"not base58", client, "0OIl" + essk, bad, "encryptedSessionSigningKey is not base58"},
		{"base64url", client, "abc-_", bad, "encryptedSessionSigningKey is not base58"},
		{"shorter than checksum", client, base58.Encode([]byte{1, 2, 3}), bad, "encryptedSessionSigningKey is shorter than its 4-byte base58check checksum"},
		{"checksum wrong", client, badChecksum, bad, "encryptedSessionSigningKey has a wrong base58check checksum"},
		{"payload short", client, withPayload(func(p []byte) []byte { return p[:80] }), bad, "encryptedSessionSigningKey payload must be 81 bytes: a 33-byte compressed key and a 48-byte ciphertext"},
		{"payload long", client, withPayload(func(p []byte) []byte { return append(p, 0) }), bad, "encryptedSessionSigningKey payload must be 81 bytes: a 33-byte compressed key and a 48-byte ciphertext"},
		{"empty payload", client, base58CheckEncode(nil), bad, "encryptedSessionSigningKey payload must be 81 bytes: a 33-byte compressed key and a 48-byte ciphertext"},
		{"enc prefix 04", client, withPayload(func(p []byte) []byte { p[0] = 4; return p }), bad, "encapsulated key is not a compressed P-256 point"},
		{"enc x not on curve", client, withPayload(func(p []byte) []byte { copy(p[:33], append([]byte{2}, mustHex(t, noPointX(t))...)); return p }), bad, "encapsulated key is not a compressed P-256 point"},
		{"other client", other, essk, unauth, reasonSessionKeyNotSealedToClient},
		{"enc parity flipped", client, withPayload(func(p []byte) []byte { p[0] ^= 1; return p }), unauth, reasonSessionKeyNotSealedToClient},
		{"ciphertext altered", client, withPayload(func(p []byte) []byte { p[40] ^= 1; return p }), unauth, reasonSessionKeyNotSealedToClient},
		{"scalar above order", client, buildSessionKey(t, client.PublicKey(), bytes.Repeat([]byte{0xff}, 32)), bad, "decrypted session key is not a valid P-256 private scalar"},
		{"scalar zero", client, buildSessionKey(t, client.PublicKey(), make([]byte, 32)), bad, "decrypted session key is not a valid P-256 private scalar"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := OpenSessionKey(c.key, c.in)
			field := ""
			if c.code == bad {
				field = F
			}
			wantErr(t, err, c.code, field, c.reason)
		})
	}
	_, err = OpenSessionKey(nil, essk)
	wantErr(t, err, apierror.InternalError, "", "")
}

// TestBase58CheckKnownVector is the Bitcoin wiki's address example: version
// byte 0x00 and a HASH160 give 16UwLL9Risc3QfPqBUvKofHmBQ7wMtjvM.
func TestBase58CheckKnownVector(t *testing.T) {
	payload := mustHex(t, "00010966776006953d5567439e5e39f86a0d273bee")
	const want = "16UwLL9Risc3QfPqBUvKofHmBQ7wMtjvM"
	if got := base58CheckEncode(payload); got != want {
		t.Fatalf("encode = %s, want %s", got, want)
	}
	got, problem := base58CheckDecode(want)
	if problem != "" || !bytes.Equal(got, payload) {
		t.Fatalf("decode = %x (%s)", got, problem)
	}
}
