package sandbox

import (
	"crypto/ecdsa"
	"encoding/hex"
	"encoding/json"
	"io"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/walletauth/envelope"
)

// SandboxMnemonic is the BIP-39 mnemonic every sandbox wallet exports: the
// well-known all-"abandon" test phrase, which holds no funds anywhere.
const SandboxMnemonic = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"

// SandboxOrganizationID is the organizationId written into export
// envelopes.
const SandboxOrganizationID = "org_sandbox"

// exportEnvelope seals SandboxMnemonic to the client's key in the export
// envelope format, without attestation (empty dataSignature and
// enclaveQuorumPublic, as the real sandbox sends).
func exportEnvelope(client *ecdsa.PublicKey, rand io.Reader) (string, error) {
	recipient, err := client.ECDH()
	if err != nil {
		return "", apierror.InvalidField("clientPublicKey", nil, "must be a P-256 public key")
	}
	enc, ct, err := envelope.Seal(recipient, []byte(SandboxMnemonic), rand)
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(map[string]string{
		"encappedPublic": hex.EncodeToString(enc),
		"ciphertext":     hex.EncodeToString(ct),
		"organizationId": SandboxOrganizationID,
	})
	if err != nil {
		return "", apierror.Internal(err)
	}
	out, err := json.Marshal(struct {
		Version             string `json:"version"`
		Data                string `json:"data"`
		DataSignature       string `json:"dataSignature"`
		EnclaveQuorumPublic string `json:"enclaveQuorumPublic"`
	}{"v1.0.0", hex.EncodeToString(data), "", ""})
	if err != nil {
		return "", apierror.Internal(err)
	}
	return string(out), nil
}
