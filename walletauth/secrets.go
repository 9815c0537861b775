package walletauth

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/envelope"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// MinCodeMACKeyLen is the shortest [Config].CodeMACKey New accepts, in bytes.
const MinCodeMACKeyLen = 32

// ErrSecretKeysRequired is returned by [New] when Config.Sealer or
// Config.CodeMACKey is missing outside sandbox mode and
// Config.EphemeralSecretKeys is not set.
var ErrSecretKeysRequired = errors.New("walletauth: Config.Sealer and Config.CodeMACKey are required " +
	"(keys from the host's secret manager, shared by every replica of the store), " +
	"unless Config.Sandbox or Config.EphemeralSecretKeys is set")

// Domain-separation labels of what the service keeps at rest. A change of
// format takes a new label, so values of the old format never verify.
const (
	codeMACLabel   = "walletgate/otp-code/v1"
	targetKeyLabel = "walletgate/otp-target-key/v1"
)

// secretKeys resolves the at-rest keys of cfg: the configured ones, or, in
// sandbox mode or with EphemeralSecretKeys, fresh ones for this process.
func secretKeys(cfg *Config) (secret.Sealer, []byte, error) {
	sealer, macKey := cfg.Sealer, cfg.CodeMACKey
	if macKey != nil && len(macKey) < MinCodeMACKeyLen {
		return nil, nil, fmt.Errorf("walletauth: Config.CodeMACKey is %d bytes, want at least %d", len(macKey), MinCodeMACKeyLen)
	}
	if sealer == nil || macKey == nil {
		if !cfg.Sandbox && !cfg.EphemeralSecretKeys {
			return nil, nil, ErrSecretKeysRequired
		}
	}
	if sealer == nil {
		k, err := secret.GenerateKey(nil, "ephemeral")
		if err != nil {
			return nil, nil, err
		}
		if sealer, err = secret.NewKeyring(k); err != nil {
			return nil, nil, err
		}
	}
	if macKey == nil {
		macKey = make([]byte, MinCodeMACKeyLen)
		_, _ = rand.Read(macKey) // crypto/rand.Read never fails
	}
	if err := selfTest(sealer); err != nil {
		return nil, nil, err
	}
	return sealer, append([]byte(nil), macKey...), nil
}

// selfTest seals and opens a value with sealer, so that a Sealer that cannot
// work (a nil *secret.Keyring, an unreachable key service) fails New rather
// than the first login.
func selfTest(sealer secret.Sealer) error {
	msg, aad := []byte("walletauth self-test"), []byte("walletgate/self-test/v1")
	sealed, err := sealer.Seal(msg, aad)
	if err == nil {
		var got []byte
		if got, err = sealer.Open(sealed, aad); err == nil && !bytes.Equal(got, msg) {
			err = errors.New("Open did not return what Seal sealed")
		}
	}
	if err != nil {
		return fmt.Errorf("walletauth: Config.Sealer does not work: %w", err)
	}
	return nil
}

// codeMAC is the stored form of code for one issuance: lowercase hex of
// HMAC-SHA256 under the code key over the label, the issuance id, the
// credential id and the code, each length-prefixed. Binding both ids means a
// MAC copied into another issuance's row never matches a code there.
func (s *Service) codeMAC(issuanceID, credentialID, code string) string {
	return hex.EncodeToString(s.codeMACBytes(issuanceID, credentialID, code))
}

func (s *Service) codeMACBytes(issuanceID, credentialID, code string) []byte {
	m := hmac.New(sha256.New, s.codeKey)
	m.Write(lengthPrefixed(codeMACLabel, issuanceID, credentialID, code))
	return m.Sum(nil)
}

// lengthPrefixed concatenates fields, each after its length (4 bytes, big
// endian), so that no two lists of fields encode alike.
func lengthPrefixed(fields ...string) []byte {
	n := 0
	for _, f := range fields {
		n += 4 + len(f)
	}
	b := make([]byte, 0, n)
	for _, f := range fields {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

// codeMatches reports, in time independent of where the two differ, whether
// code is the code iss was issued with.
func (s *Service) codeMatches(iss *storage.OTPIssuance, code string) bool {
	stored, err := hex.DecodeString(iss.Code)
	if err != nil {
		return false
	}
	return hmac.Equal(s.codeMACBytes(iss.ID, iss.CredentialID, code), stored)
}

// targetKeyAAD binds a sealed target key to its issuance and credential, so
// sealed bytes moved to another row do not open.
func targetKeyAAD(issuanceID, credentialID string) []byte {
	return lengthPrefixed(targetKeyLabel, issuanceID, credentialID)
}

// sealTargetKey seals the private scalar of an issuance's target key for the
// store. A failure is 500 INTERNAL_ERROR.
func (s *Service) sealTargetKey(issuanceID, credentialID string, scalar []byte) ([]byte, error) {
	sealed, err := s.sealer.Seal(scalar, targetKeyAAD(issuanceID, credentialID))
	if err != nil {
		return nil, apierror.Internal(fmt.Errorf("sealing the target key of %s: %w", issuanceID, err))
	}
	return sealed, nil
}

// openOTP opens the sealed target key of iss and, with it, the client's
// encryptedOtpBundle (see [envelope.OpenOTP] for its errors). A target key
// that does not open (sealed under a key the Sealer lacks, altered, or moved
// from another row) is 500 INTERNAL_ERROR: the stored state is at fault, not
// the client, and no attempt of the client's is charged for it.
func (s *Service) openOTP(iss *storage.OTPIssuance, encryptedOtpBundle string) (envelope.OTPAttempt, error) {
	scalar, err := s.sealer.Open(iss.TargetKey, targetKeyAAD(iss.ID, iss.CredentialID))
	if err != nil {
		return envelope.OTPAttempt{}, apierror.Internal(fmt.Errorf("opening the target key of %s: %w", iss.ID, err))
	}
	defer clear(scalar)
	return envelope.OpenOTP(scalar, encryptedOtpBundle)
}
