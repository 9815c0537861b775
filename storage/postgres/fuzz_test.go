package postgres_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/postgres"
)

// FuzzRoundTrip stores arbitrary strings and bytes in a pending request and a
// credential: either the store refuses them with ErrUnstorable (and then
// PostgreSQL could not have stored them), or they come back exactly. No
// input may surface as a database error.
func FuzzRoundTrip(f *testing.F) {
	ctx := f.Context()
	f.Add("REVOKE_CREDENTIAL", "/auth/credentials/AuthMethod:1", []byte(`{"credentialId":"AuthMethod:1"}`))
	f.Add("", "", []byte(nil))
	f.Add("a\x00b", "/", []byte{0})
	f.Add("\xff\xfe", "\xc3\x28", []byte{0xff})
	f.Add("ünïcödé ✓ 𝄞", "/p?q=1&r=%00", []byte("{ \"b\":1,\n \"a\":2 }"))
	f.Add(strings.Repeat("k", postgres.MaxKeyBytes+1), "/", []byte("x"))
	f.Add("\\x00", "E'\\\\'", []byte(`\x00`))
	s := newStore(f, newPool(f, 4))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, str, path string, raw []byte) {
		storable := func(v string, key bool) bool {
			return utf8.ValidString(v) && !strings.ContainsRune(v, 0) && (!key || len(v) <= postgres.MaxKeyBytes)
		}
		p := storage.PendingRequest{ID: newID(t, "Request"), Kind: str, AccountID: str, Method: "POST", Path: path,
			BodyDigest: raw, Payload: raw, SignerRef: str, Data: json.RawMessage(raw), CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
		c := storage.Credential{ID: newID(t, "AuthMethod"), AccountID: newID(t, "InternalAccount"), Type: storage.Passkey,
			Nickname: str, CreatedAt: now, UpdatedAt: now,
			WebAuthn: &storage.WebAuthnCredential{CredentialID: append([]byte(p.ID), raw...), PublicKey: raw,
				AttestationType: path, Transports: []string{str, path}}}
		wantP := storable(str, true) && storable(path, false)
		wantC := storable(str, false) && storable(path, false) && len(c.WebAuthn.CredentialID) <= postgres.MaxWebAuthnIDBytes
		err := s.Atomic(ctx, func(tx storage.Tx) error {
			if err := tx.PendingRequests().Create(ctx, &p, storage.Quota{Limit: 1000}); wantP != (err == nil) || err != nil && !errors.Is(err, postgres.ErrUnstorable) {
				t.Fatalf("Create pending request (storable %v): %v", wantP, err)
			}
			if err := tx.Credentials().Create(ctx, &c); wantC != (err == nil) || err != nil && !errors.Is(err, postgres.ErrUnstorable) {
				t.Fatalf("Create credential (storable %v): %v", wantC, err)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Atomic: %v", err)
		}
		mustAtomic(t, s, func(tx storage.Tx) error {
			gotP, err := tx.PendingRequests().Get(ctx, p.ID)
			if wantP && (err != nil || gotP.Kind != str || gotP.Path != path || !bytes.Equal(gotP.Payload, raw) ||
				!bytes.Equal(gotP.Data, raw) || !bytes.Equal(gotP.BodyDigest, raw)) {
				t.Fatalf("pending request came back as %+v, %v", gotP, err)
			}
			gotC, err := tx.Credentials().FindByWebAuthnID(ctx, c.Tenant, c.WebAuthn.CredentialID)
			if wantC && (err != nil || gotC.Nickname != str || gotC.WebAuthn.AttestationType != path ||
				!bytes.Equal(gotC.WebAuthn.PublicKey, raw) || len(gotC.WebAuthn.Transports) != 2 ||
				gotC.WebAuthn.Transports[0] != str || gotC.WebAuthn.Transports[1] != path) {
				t.Fatalf("credential came back as %+v, %v", gotC, err)
			}
			return nil
		})
	})
}
