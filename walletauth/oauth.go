package walletauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/authclient"
	"github.com/walletgate/walletgate/walletauth/oidc"
)

func (s *Service) oidcVerifier() (*oidc.Verifier, error) {
	if s.cfg.OIDC == nil {
		return nil, apierror.InvalidField("type", apierror.OneOf(string(storage.EmailOTP), string(storage.SMSOTP)),
			"credential type OAUTH is not enabled on this service")
	}
	return s.cfg.OIDC, nil
}

// oauthParams verifies the ID token of an add request and records in p the
// identity it asserts (iss, aud, sub), its email claim as the nickname and the
// token's SHA-256. The token is verified once, on the first call; a signed
// retry creates the credential from p.
func (s *Service) oauthParams(ctx context.Context, p *authclient.AddParams, req *AddCredentialRequest) error {
	v, err := s.oidcVerifier()
	if err != nil {
		return err
	}
	if req.OIDCToken == "" {
		return apierror.InvalidField("oidcToken", apierror.Length(1, -1), "is required for OAUTH")
	}
	id, err := v.Verify(ctx, req.OIDCToken, oidc.Expect{})
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(req.OIDCToken))
	p.Issuer, p.Audience, p.Subject = id.Issuer, id.Audience, id.Subject
	p.Nickname, p.OIDCTokenSHA256 = id.Email, hex.EncodeToString(sum[:])
	return nil
}

// verifyOAuth checks a fresh ID token against the credential's identity and
// the nonce bound to clientPublicKey, and creates a session whose key is
// sealed to clientPublicKey.
func (s *Service) verifyOAuth(ctx context.Context, credentialID string, req VerifyRequest) (*AuthSession, error) {
	v, err := s.oidcVerifier()
	if err != nil {
		return nil, err
	}
	var vErr apierror.Validation
	vErr.Check(req.OIDCToken != "", "oidcToken", apierror.Length(1, -1), "is required for OAUTH")
	vErr.Check(req.ClientPublicKey != "", "clientPublicKey", apierror.Length(66, 130), "is required for OAUTH")
	if err := vErr.Err(); err != nil {
		return nil, err
	}
	var cred storage.Credential
	err = s.atomic(ctx, func(tx storage.Tx) error {
		var err error
		cred, err = credentialOfType(ctx, tx, credentialID, storage.OAuth)
		return err
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	pub, essk, err := s.sessionKey(req.ClientPublicKey)
	if err != nil {
		return nil, err
	}
	expect := oidc.Expect{Identity: &oidc.Identity{Issuer: cred.OAuth.Issuer, Audience: cred.OAuth.Audience, Subject: cred.OAuth.Subject},
		Nonce: oidc.NonceFor(req.ClientPublicKey)}
	if _, err := v.Verify(ctx, req.OIDCToken, expect); err != nil {
		return nil, err
	}
	var out *AuthSession
	err = s.atomic(ctx, func(tx storage.Tx) error {
		c, err := tx.Credentials().Get(ctx, credentialID)
		if errors.Is(err, storage.ErrNotFound) {
			return notFound("credential", credentialID)
		}
		if err != nil {
			return err
		}
		out, err = s.createSession(ctx, tx, &c, pub)
		return err
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	out.EncryptedSessionSigningKey = essk
	return out, nil
}
