package signedretry_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
)

// A host route that revokes a session through the signed retry: the first
// call answers 202 with a payload to sign, the signed retry answers 204.
func Example_httpRoute() {
	store := memory.New()
	mgr, err := signedretry.New(signedretry.Config{Store: store})
	if err != nil {
		panic(err)
	}
	account := "InternalAccount:0b5e1f3c-3a1e-4c4e-9d55-2f0c6b1f7a10"

	// The route: DELETE /auth/sessions/{id}, written as its two legs.
	route := func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		type params struct {
			SessionID string `json:"sessionId"`
		}
		_, _, c, err := signedretry.Run(r.Context(), mgr, signedretry.RequestFrom(r, body), signedretry.Steps[params, struct{}, struct{}]{
			Type: "REVOKE_SESSION",
			Bind: func(ctx context.Context, tx storage.Tx) (*signedretry.Operation[params], struct{}, error) {
				return &signedretry.Operation[params]{AccountID: account, Signer: signedretry.Signer{Rule: signedretry.AnySession},
					Parameters: params{SessionID: r.PathValue("id")}}, struct{}{}, nil
			},
			// The retry acts on the session the payload named.
			Effect: func(ctx context.Context, tx storage.Tx, a *signedretry.Authorization, p params, _ struct{}) (struct{}, error) {
				return struct{}{}, tx.Sessions().Revoke(ctx, p.SessionID, a.Now)
			},
		})
		signedretry.WriteAnswer(w, 0, nil, c, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("DELETE /auth/sessions/{id}", route)

	// A session the client holds the key of.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sessionID, _ := storage.NewID(nil, "Session")
	credentialID, _ := storage.NewID(nil, "AuthMethod")
	_ = store.Atomic(context.Background(), func(tx storage.Tx) error {
		_ = tx.Credentials().Create(context.Background(), &storage.Credential{ID: credentialID, AccountID: account,
			Type: storage.OAuth, OAuth: &storage.OAuthIdentity{Issuer: "https://issuer.example", Subject: "ada"}})
		return tx.Sessions().Create(context.Background(), &storage.Session{ID: sessionID, AccountID: account,
			CredentialID: credentialID, PublicKey: elliptic.MarshalCompressed(elliptic.P256(), key.X, key.Y),
			ExpiresAt: time.Now().Add(time.Hour)})
	})

	// First call.
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("DELETE", "/auth/sessions/"+sessionID, nil))
	var c signedretry.Challenge
	_ = json.Unmarshal(rec.Body.Bytes(), &c)
	fmt.Println(rec.Code)

	// Signed retry: stamp the payload byte for byte.
	header, _ := stamper.NewStamp(key, []byte(c.PayloadToSign))
	req := httptest.NewRequest("DELETE", "/auth/sessions/"+sessionID, nil)
	req.Header.Set(stamper.HeaderSignature, header)
	req.Header.Set(stamper.HeaderRequestID, c.RequestID)
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	fmt.Println(rec.Code)

	// The Request-Id is single use.
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Body.String())
	// Output:
	// 202
	// 204
	// 401 {"status":401,"code":"UNAUTHORIZED","message":"authentication failed: request id already used","details":{"reason":"request id already used"}}
}
