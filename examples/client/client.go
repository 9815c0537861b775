// Package client is a small Go client of the service's HTTP API, the kind a
// platform backend starts from: HTTP Basic platform credentials, JSON in and
// out, error bodies decoded into *apierror.Error, and the signed retry done
// for the caller (first call, stamp payloadToSign with a session key, retry
// the same request).
//
// It talks to the walletgate sandbox (examples/server, or sandbox.Handler in
// a test) exactly as it would to the real service.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth"
)

// Client calls the API at BaseURL (which includes the version segment, e.g.
// http://127.0.0.1:8089/2025-10-13).
type Client struct {
	BaseURL      string
	ClientID     string
	ClientSecret string
	HTTP         *http.Client
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

// Signed runs a signed-retry operation: the first call, and when it answers
// 202, the same request again stamped by key with the challenge's
// Request-Id. The first call's body bytes are sent again unchanged. It
// returns the final response; out receives its body.
func (c *Client) Signed(ctx context.Context, method, path string, body any, key *walletauth.ClientKey, out any) (*Response, error) {
	raw, err := encode(body)
	if err != nil {
		return nil, err
	}
	var ch signedretry.Challenge
	res, err := c.Do(ctx, method, path, raw, nil, &ch)
	if err != nil || res.Status != http.StatusAccepted {
		if err == nil && out != nil && len(res.Body) > 0 {
			err = json.Unmarshal(res.Body, out)
		}
		return res, err
	}
	stamp, err := key.Stamp(ch.PayloadToSign)
	if err != nil {
		return nil, err
	}
	return c.Do(ctx, method, path, raw, map[string]string{
		signedretry.HeaderSignature: stamp,
		signedretry.HeaderRequestID: ch.RequestID,
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

// LoginOTP logs in with a one-time-code credential the way a device does: it
// asks for a code, seals code to the target bundle with a fresh key, sends
// leg 1, stamps the answer with that key and sends leg 2. The fresh key is
// the session key it returns. In the sandbox the code is "000000".
func (c *Client) LoginOTP(ctx context.Context, credentialID string, typ storage.CredentialType, code string) (*walletauth.AuthSession, *walletauth.ClientKey, error) {
	var m walletauth.ChallengeResponse
	if _, err := c.Do(ctx, "POST", "/auth/credentials/"+credentialID+"/challenge", map[string]any{}, nil, &m); err != nil {
		return nil, nil, fmt.Errorf("challenge: %w", err)
	}
	key, err := walletauth.NewClientKey()
	if err != nil {
		return nil, nil, err
	}
	// A production client pins the service's bundle signing key here.
	bundle, err := key.SealOTP(m.OTPEncryptionTargetBundle, nil, code, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("sealing the code: %w", err)
	}
	var sess walletauth.AuthSession
	_, err = c.Signed(ctx, "POST", "/auth/credentials/"+credentialID+"/verify",
		map[string]string{"type": string(typ), "encryptedOtpBundle": bundle}, key, &sess)
	if err != nil {
		return nil, nil, fmt.Errorf("verify: %w", err)
	}
	return &sess, key, nil
}
