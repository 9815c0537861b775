// Package client is a small Go client of the service's HTTP API, the kind a
// platform backend starts from: HTTP Basic platform credentials, JSON in and
// out, error bodies decoded into *apierror.Error, and the signed retry done
// for the caller (first call, check and stamp payloadToSign with a session
// key, retry the same request).
//
// It stamps nothing it has not checked. A stamp authorizes whatever
// operation the payload names, so a client that stamps what it is handed
// lets anyone between it and the service (a proxy, a compromised backend)
// answer a session refresh with the wallet export of their own key and read
// the mnemonic. Every signed call here states what it expects
// ([stamper.Expectation]: the operation type of the route, the account,
// the body sent, every parameter) and refuses any other payload before
// stamping; the bundles it seals codes to and opens exports from must be
// signed by the service's bundle signing key, pinned in [Client.BundleSigner].
//
// It talks to the walletgate sandbox (examples/server, or sandbox.Handler in
// a test) exactly as it would to the real service.
package client

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry/stamper"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/envelope"
)

// Client calls the API at BaseURL (which includes the version segment, e.g.
// http://127.0.0.1:8089/2025-10-13).
type Client struct {
	BaseURL      string
	ClientID     string
	ClientSecret string
	HTTP         *http.Client
	// BundleSigner is the service's bundle signing key, pinned: an OTP
	// target bundle ([Client.LoginOTP]) or a wallet export bundle
	// ([Client.ExportWallet]) signed by any other key is refused. Those
	// calls fail without it. examples/server logs it as bundle_signing_key;
	// in process it is the simulator's Auth().SigningPublicKey().
	BundleSigner *ecdsa.PublicKey
	// OrganizationID is the organization export bundles must name (the
	// sandbox's is sandbox.SandboxOrganizationID). Required by
	// [Client.ExportWallet].
	OrganizationID string
}

// New returns a client with http.DefaultClient.
func New(baseURL, clientID, clientSecret string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), ClientID: clientID, ClientSecret: clientSecret, HTTP: http.DefaultClient}
}

// Response is what a call returned.
type Response struct {
	Status int
	Body   []byte
	Header http.Header
}

// Do sends one request. body is marshalled as JSON unless it is nil or
// already []byte. A 4xx or 5xx answer is returned as the decoded
// *apierror.Error (with the response). On success, out (when not nil)
// receives the decoded body.
func (c *Client) Do(ctx context.Context, method, path string, body any, headers map[string]string, out any) (*Response, error) {
	var raw []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			return nil, err
		}
	}
	var r io.Reader
	if raw != nil {
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, r)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(c.ClientID, c.ClientSecret)
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	res := &Response{Status: resp.StatusCode, Body: data, Header: resp.Header}
	if resp.StatusCode >= 400 {
		var e apierror.Error
		if err := json.Unmarshal(data, &e); err != nil {
			return res, fmt.Errorf("%s %s: HTTP %d with a body that is not an error object: %q", method, path, resp.StatusCode, data)
		}
		return res, &e
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return res, fmt.Errorf("%s %s: decoding the answer: %w", method, path, err)
		}
	}
	return res, nil
}

// Signed runs a signed-retry operation: the first call and, when it answers
// 202, the same request again with the same body bytes, stamped by key.
// Before stamping, the payloadToSign is checked with want
// ([stamper.Expectation.Check]; want.Body is set to the bytes sent): a
// payload that is not the operation the caller expects is refused with the
// error naming the failed check, and nothing is stamped or sent. The retry
// carries the payload's requestId. It returns the final response; out
// receives its body.
func (c *Client) Signed(ctx context.Context, method, path string, body any, key *authclient.ClientKey,
	want stamper.Expectation, out any) (*Response, error) {
	raw, err := encode(body)
	if err != nil {
		return nil, err
	}
	var ch stamper.Challenge
	res, err := c.Do(ctx, method, path, raw, nil, &ch)
	if err != nil || res.Status != http.StatusAccepted {
		if err == nil && out != nil && len(res.Body) > 0 {
			err = json.Unmarshal(res.Body, out)
		}
		return res, err
	}
	if key == nil {
		return res, errors.New("client: a signed retry needs a session key")
	}
	want.Body = raw
	stamp, p, err := want.Stamp(key.PrivateKey(), ch.PayloadToSign)
	if err != nil {
		return res, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return c.Do(ctx, method, path, raw, map[string]string{
		stamper.HeaderSignature: stamp,
		stamper.HeaderRequestID: p.RequestID,
	}, out)
}

func encode(body any) ([]byte, error) {
	switch b := body.(type) {
	case nil:
		return nil, nil
	case []byte:
		return b, nil
	default:
		return json.Marshal(b)
	}
}

// LoginOTP logs in to accountID with its one-time-code credential the way a
// device does: it asks for a code, checks that the target bundle is signed by
// the pinned [Client.BundleSigner], seals code to it with a fresh key, sends
// leg 1, checks that the payload is the VERIFY_OTP of this credential bound
// to that key, stamps it and sends leg 2. The fresh key is the session key it
// returns. In the sandbox the code is "000000".
func (c *Client) LoginOTP(ctx context.Context, accountID, credentialID string, typ storage.CredentialType, code string) (*authclient.AuthSession, *authclient.ClientKey, error) {
	if c.BundleSigner == nil {
		return nil, nil, errors.New("client: LoginOTP needs Client.BundleSigner, the service's bundle signing key")
	}
	var m authclient.ChallengeResponse
	if _, err := c.Do(ctx, "POST", "/auth/credentials/"+credentialID+"/challenge", map[string]any{}, nil, &m); err != nil {
		return nil, nil, fmt.Errorf("challenge: %w", err)
	}
	key, err := authclient.NewClientKey()
	if err != nil {
		return nil, nil, err
	}
	bundle, err := key.SealOTP(m.OTPEncryptionTargetBundle, c.BundleSigner, code, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("sealing the code: %w", err)
	}
	var sess authclient.AuthSession
	_, err = c.Signed(ctx, "POST", "/auth/credentials/"+credentialID+"/verify",
		map[string]string{"type": string(typ), "encryptedOtpBundle": bundle}, key,
		stamper.Expectation{Type: authclient.OpVerifyOTP, AccountID: accountID,
			Parameters: map[string]string{"credentialId": credentialID, "publicKey": key.PublicKeyHex()}}, &sess)
	if err != nil {
		return nil, nil, fmt.Errorf("verify: %w", err)
	}
	return &sess, key, nil
}

// RefreshSession asks for a new session in place of sessionID, an active
// session of accountID stamped by its key; the new one is sealed to (or, with
// client-held keys, is) next. The payload must be the REFRESH_SESSION of that
// session for next.
func (c *Client) RefreshSession(ctx context.Context, accountID, sessionID string, key, next *authclient.ClientKey) (*authclient.AuthSession, error) {
	var fresh authclient.AuthSession
	_, err := c.Signed(ctx, "POST", "/auth/sessions/"+sessionID+"/refresh", map[string]string{"clientPublicKey": next.PublicKeyHex()}, key,
		stamper.Expectation{Type: authclient.OpRefreshSession, AccountID: accountID,
			Parameters: map[string]string{"sessionId": sessionID, "clientPublicKey": next.PublicKeyHex()}}, &fresh)
	if err != nil {
		return nil, err
	}
	return &fresh, nil
}

// RevokeSession revokes sessionID of accountID, stamped by key (an active
// session of the account). The payload must be the REVOKE_SESSION of that
// session.
func (c *Client) RevokeSession(ctx context.Context, accountID, sessionID string, key *authclient.ClientKey) (*Response, error) {
	return c.Signed(ctx, "DELETE", "/auth/sessions/"+sessionID, nil, key,
		stamper.Expectation{Type: authclient.OpRevokeSession, AccountID: accountID, Parameters: map[string]string{"sessionId": sessionID}}, nil)
}

// RevokeCredential revokes credentialID of accountID, stamped by key (an
// active session of another credential). The payload must be the
// REVOKE_CREDENTIAL of that credential.
func (c *Client) RevokeCredential(ctx context.Context, accountID, credentialID string, key *authclient.ClientKey) (*Response, error) {
	return c.Signed(ctx, "DELETE", "/auth/credentials/"+credentialID, nil, key,
		stamper.Expectation{Type: authclient.OpRevokeCredential, AccountID: accountID, Parameters: map[string]string{"credentialId": credentialID}}, nil)
}

// AddCredential adds a credential to req.AccountID, stamped by key (an
// active session of the account). params are the credential the client
// expects to be created ([PasskeyAddParams] and [OAuthAddParams] derive them
// from what the client sends); the payload must be the ADD_CREDENTIAL of
// exactly those. An account without a credential gets it at once, with no
// signature.
func (c *Client) AddCredential(ctx context.Context, req authclient.AddCredentialRequest, params *authclient.AddParams,
	key *authclient.ClientKey) (*authclient.AuthMethod, error) {
	if params == nil {
		return nil, errors.New("client: AddCredential needs the expected parameters")
	}
	var m authclient.AuthMethod
	if _, err := c.Signed(ctx, "POST", "/auth/credentials", req, key,
		stamper.Expectation{Type: authclient.OpAddCredential, AccountID: req.AccountID, Parameters: params}, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// ExportWallet exports the wallet accountID sealed to exportKey, stamped by
// key (an active session of the wallet), and returns the secret. The payload
// must be the EXPORT_WALLET of accountID for exportKey; the bundle must be
// signed by the pinned [Client.BundleSigner], name [Client.OrganizationID]
// and open with exportKey.
func (c *Client) ExportWallet(ctx context.Context, accountID string, key, exportKey *authclient.ClientKey) ([]byte, error) {
	if c.BundleSigner == nil || c.OrganizationID == "" {
		return nil, errors.New("client: ExportWallet needs Client.BundleSigner and Client.OrganizationID")
	}
	target := exportKey.PublicKeyHex()
	var out authclient.WalletExport
	if _, err := c.Signed(ctx, "POST", "/internal-accounts/"+accountID+"/export", authclient.ExportRequest{ClientPublicKey: target}, key,
		stamper.Expectation{Type: authclient.OpExportWallet, AccountID: accountID, Parameters: map[string]string{"clientPublicKey": target}}, &out); err != nil {
		return nil, err
	}
	priv, err := exportKey.PrivateKey().ECDH()
	if err != nil {
		return nil, err
	}
	secret, err := envelope.OpenExportBundle(priv, out.EncryptedWalletCredentials, c.BundleSigner, c.OrganizationID)
	if err != nil {
		return nil, fmt.Errorf("opening the export bundle: %w", err)
	}
	return secret, nil
}
