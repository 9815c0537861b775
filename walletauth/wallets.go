package walletauth

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"strings"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/signedretry"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/envelope"
)

// WalletSecrets gives [Service.ExportWallet] the secret of an embedded
// wallet (its mnemonic, for instance). The host implements it: the custody
// of wallet keys is the host's, the service only seals what it is given to
// the client's key. Secret is called on an authorized retry, inside the
// transaction that consumes the request; an error leaves the request
// unconsumed and is returned (an *apierror.Error unchanged, anything else as
// 500 INTERNAL_ERROR). It may be called more than once for one retry (the
// store reruns a transaction that lost a lock conflict or a serialization
// check), so it must only read.
type WalletSecrets interface {
	Secret(ctx context.Context, accountID string) ([]byte, error)
}

// ExportRequest is the body of a wallet export.
type ExportRequest struct {
	// ClientPublicKey is the P-256 key, compressed (66 hex characters) or
	// uncompressed (130), the wallet's secret is sealed to.
	ClientPublicKey string `json:"clientPublicKey"`
}

// WalletExport is the result of a completed export.
type WalletExport struct {
	ID string `json:"id"`
	// EncryptedWalletCredentials is the export bundle
	// ([envelope.NewExportBundle]): a JSON string
	// {"version","data","dataSignature","enclaveQuorumPublic"} whose data is
	// hex of {"encappedPublic","ciphertext","organizationId"}; the
	// ciphertext is the wallet's secret sealed (HPKE) to the signed
	// clientPublicKey. dataSignature is hex DER ECDSA-P256-SHA256 over the
	// data bytes by [Config].SigningKey and enclaveQuorumPublic the hex of
	// its uncompressed public key ([Service.SigningPublicKey]), the same key
	// that signs OTP target bundles. @turnkey/crypto's decryptExportBundle
	// opens it when given that key as dangerouslyOverrideSignerPublicKey.
	EncryptedWalletCredentials string `json:"encryptedWalletCredentials"`
}

// exportParams are the parameters of an EXPORT_WALLET payload.
type exportParams struct {
	ClientPublicKey string `json:"clientPublicKey"`
}

const clientKeyPattern = `^(0[23][0-9a-fA-F]{64}|04[0-9a-fA-F]{128})$`

// exportKey parses the key an export is sealed to.
func exportKey(key string) (*ecdsa.PublicKey, error) {
	pub, err := signedretry.ParsePublicKey(key)
	if err != nil {
		return nil, apierror.InvalidField("clientPublicKey", apierror.Pattern(clientKeyPattern), apierror.As(err).Message)
	}
	return pub, nil
}

// ExportWallet exports an embedded wallet's secret ([Config].WalletSecrets)
// sealed to the client's key, through the signed retry: the first call binds
// clientPublicKey into the payload and answers the challenge, which any
// active session of the wallet stamps; the retry seals the secret to the
// clientPublicKey of the payload. On the retry, req is not read.
//
// Errors: 400 INVALID_INPUT (clientPublicKey not a P-256 key, compressed or
// uncompressed), 404 REFERENCE_NOT_FOUND (no such wallet), the 401s of
// signedretry, 500 INTERNAL_ERROR (no WalletSecrets, or its failure).
func (s *Service) ExportWallet(ctx context.Context, accountID string, req ExportRequest, call signedretry.Retry) (*WalletExport, *signedretry.Challenge, error) {
	op := HostOperation{Type: OpExportWallet, AccountID: accountID}
	if !isRetry(call) {
		key := strings.TrimSpace(req.ClientPublicKey)
		if _, err := exportKey(key); err != nil {
			return nil, nil, err
		}
		op.Parameters = exportParams{ClientPublicKey: key}
		_, ch, err := s.authorize(ctx, op, call)
		return nil, ch, err
	}
	var out string
	op.Effect = func(_ storage.Tx, params json.RawMessage) error {
		var p exportParams
		if err := (&Authorized{Parameters: params}).DecodeParameters(&p); err != nil {
			return err
		}
		if _, err := exportKey(p.ClientPublicKey); err != nil {
			return apierror.Internal(err)
		}
		if s.secrets == nil {
			return apierror.Internal(errors.New("walletauth: Config.WalletSecrets is not set"))
		}
		secret, err := s.secrets.Secret(ctx, accountID)
		if err != nil {
			return storeErr(err)
		}
		out, err = envelope.NewExportBundle(s.signer, s.org, p.ClientPublicKey, secret, s.rand)
		if err != nil {
			// The key was checked when the payload was bound, so any
			// failure here is the service's.
			return apierror.Internal(err)
		}
		return nil
	}
	if _, _, err := s.authorize(ctx, op, call); err != nil {
		return nil, nil, err
	}
	return &WalletExport{ID: accountID, EncryptedWalletCredentials: out}, nil, nil
}

// PrivacyRequest is the body of a wallet privacy update.
type PrivacyRequest struct {
	PrivateEnabled *bool `json:"privateEnabled"`
}

// WalletPrivacy is the result of a completed privacy update: the value the
// user signed, which the host persists.
type WalletPrivacy struct {
	AccountID      string `json:"accountId"`
	PrivateEnabled bool   `json:"privateEnabled"`
}

// privacyParams are the parameters of an UPDATE_WALLET_PRIVACY payload.
type privacyParams struct {
	PrivateEnabled *bool `json:"privateEnabled"`
}

// UpdateWalletPrivacy authorizes a change of an embedded wallet's privacy
// setting through the signed retry (any active session of the wallet
// signs). The service does not keep the setting: the host persists the
// returned [WalletPrivacy.PrivateEnabled], the value the user signed, and
// never the retry's own. apply, when not nil, runs inside the transaction
// that consumes the request with that value, so a host that keeps the
// setting in the same store commits it together with the consumption. apply
// may run more than once for one retry (the store reruns a transaction that
// lost a lock conflict or a serialization check, and rolls back every run
// but the last), so it must write only through tx and have no effect
// outside it: a change of another system or of process memory belongs after
// UpdateWalletPrivacy returns. On the retry, req is not read.
//
// Errors: 400 INVALID_INPUT (privateEnabled missing), 404
// REFERENCE_NOT_FOUND (no such wallet), the 401s of signedretry, errors of
// apply unchanged.
func (s *Service) UpdateWalletPrivacy(ctx context.Context, accountID string, req PrivacyRequest, call signedretry.Retry,
	apply func(tx storage.Tx, privateEnabled bool) error) (*WalletPrivacy, *signedretry.Challenge, error) {
	op := HostOperation{Type: OpWalletPrivacy, AccountID: accountID}
	if !isRetry(call) {
		if req.PrivateEnabled == nil {
			return nil, nil, apierror.InvalidField("privateEnabled", nil, "is required")
		}
		op.Parameters = privacyParams{PrivateEnabled: req.PrivateEnabled}
		_, ch, err := s.authorize(ctx, op, call)
		return nil, ch, err
	}
	var out WalletPrivacy
	op.Effect = func(tx storage.Tx, params json.RawMessage) error {
		var p privacyParams
		if err := (&Authorized{Parameters: params}).DecodeParameters(&p); err != nil {
			return err
		}
		if p.PrivateEnabled == nil {
			return apierror.Internal(errors.New("walletauth: signed privacy update without privateEnabled"))
		}
		out = WalletPrivacy{AccountID: accountID, PrivateEnabled: *p.PrivateEnabled}
		if apply != nil {
			return apply(tx, out.PrivateEnabled)
		}
		return nil
	}
	if _, _, err := s.authorize(ctx, op, call); err != nil {
		return nil, nil, err
	}
	return &out, nil, nil
}
