package walletauth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	cryptorand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/walletauth/envelope"
	"github.com/walletgate/walletgate/walletauth/secret"
)

// MinCodeMACKeyLen is the shortest [Keys].CodeMACKey New accepts, in bytes.
const MinCodeMACKeyLen = 32

// ErrKeysRequired is returned, wrapped with the name of the missing key, by
// [New] when [Config].Keys lacks one of its keys.
var ErrKeysRequired = errors.New("walletauth: Config.Keys is required " +
	"(keys from the host's secret manager, shared by every replica of the store; " +
	"EphemeralKeys makes keys for a single process)")

// Keys are the host's keys of a [Service]. All three are required, in
// sandbox mode too, and every replica sharing a store needs the same ones.
type Keys struct {
	// SigningKey signs OTP target bundles and wallet export bundles (their
	// enclaveQuorumPublic). Clients that check bundles pin its public half
	// ([Service.SigningPublicKey]).
	SigningKey *ecdsa.PrivateKey
	// Sealer seals the private key material the store keeps for a login in
	// progress (the HPKE target key of each OTP issuance), bound to its
	// issuance and credential ids, so the store holds only sealed bytes.
	// [secret.Keyring] is the standard implementation: AES-256-GCM under
	// host-provided keys that rotate without rewriting rows. New seals and
	// opens a test value with it and fails when that does not work.
	Sealer secret.Sealer
	// CodeMACKey keys the HMAC-SHA256 under which one-time codes are stored:
	// the store never sees a code, and its MACs cannot be checked against
	// guesses without this key. At least MinCodeMACKeyLen random bytes;
	// New copies it. Changing it invalidates the codes issued before (they
	// live OTP.TTL; a client asks for a new one).
	CodeMACKey []byte
}

// EphemeralKeys returns fresh [Keys] held only in this process's memory,
// drawn from rand (nil means crypto/rand). Nothing is stored in plaintext,
// but a bundle signed or a code issued by this process cannot be checked by
// another replica or after a restart, and clients cannot pin the signing
// key across restarts. It suits tests and a single process (a memory
// store); never use it for replicas sharing a database.
func EphemeralKeys(rand io.Reader) (Keys, error) {
	if rand == nil {
		rand = cryptorand.Reader
	}
	signing, err := ecdsa.GenerateKey(elliptic.P256(), rand)
	if err != nil {
		return Keys{}, err
	}
	k, err := secret.GenerateKey(rand, "ephemeral")
	if err != nil {
		return Keys{}, err
	}
	sealer, err := secret.NewKeyring(k)
	if err != nil {
		return Keys{}, err
	}
	mac := make([]byte, MinCodeMACKeyLen)
	if _, err := io.ReadFull(rand, mac); err != nil {
		return Keys{}, err
	}
	return Keys{SigningKey: signing, Sealer: sealer, CodeMACKey: mac}, nil
}

// Domain-separation labels of what the service keeps at rest. A change of
// format takes a new label, so values of the old format never verify.
const (
	codeMACLabel   = "walletgate/otp-code/v1"
	targetKeyLabel = "walletgate/otp-target-key/v1"
)

// check fails when a key is missing, when CodeMACKey is too short and when
// Sealer does not seal and open a test value.
func (k *Keys) check() error {
	switch {
	case k.SigningKey == nil:
		return fmt.Errorf("%w: Config.Keys.SigningKey is missing", ErrKeysRequired)
	case k.Sealer == nil:
		return fmt.Errorf("%w: Config.Keys.Sealer is missing", ErrKeysRequired)
	case k.CodeMACKey == nil:
		return fmt.Errorf("%w: Config.Keys.CodeMACKey is missing", ErrKeysRequired)
	case len(k.CodeMACKey) < MinCodeMACKeyLen:
		return fmt.Errorf("walletauth: Config.Keys.CodeMACKey is %d bytes, want at least %d", len(k.CodeMACKey), MinCodeMACKeyLen)
	}
	return selfTest(k.Sealer)
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
		return fmt.Errorf("walletauth: Config.Keys.Sealer does not work: %w", err)
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
	m := hmac.New(sha256.New, s.cfg.Keys.CodeMACKey)
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
	sealed, err := s.cfg.Keys.Sealer.Seal(scalar, targetKeyAAD(issuanceID, credentialID))
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
	scalar, err := s.cfg.Keys.Sealer.Open(iss.TargetKey, targetKeyAAD(iss.ID, iss.CredentialID))
	if err != nil {
		return envelope.OTPAttempt{}, apierror.Internal(fmt.Errorf("opening the target key of %s: %w", iss.ID, err))
	}
	defer clear(scalar)
	return envelope.OpenOTP(scalar, encryptedOtpBundle)
}
