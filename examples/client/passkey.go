package client

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"

	"github.com/walletgate/walletgate/walletauth/authclient"
)

// SoftwarePasskey is a passkey held in memory: an Ed25519 key that answers
// WebAuthn registrations (with a "none" attestation) and assertions the way a
// browser and an authenticator would, for demos and backend tests that have
// no browser. It is not a security device: anyone with the process memory
// holds the key.
type SoftwarePasskey struct {
	RPID    string
	Origin  string
	id      []byte
	key     ed25519.PrivateKey
	counter uint32
}

// NewSoftwarePasskey creates a passkey for the relying party rpID used from
// origin (for example "localhost" and "http://localhost").
func NewSoftwarePasskey(rpID, origin string) (*SoftwarePasskey, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	return &SoftwarePasskey{RPID: rpID, Origin: origin, id: id, key: key}, nil
}

// flags of authenticator data: user present, user verified, attested data.
const (
	flagUP = 0x01
	flagUV = 0x04
	flagAT = 0x40
)

func (p *SoftwarePasskey) clientData(typ, challenge string) []byte {
	b, _ := json.Marshal(map[string]any{"type": typ, "challenge": challenge, "origin": p.Origin, "crossOrigin": false})
	return b
}

func (p *SoftwarePasskey) authData(attested bool) ([]byte, error) {
	h := sha256.Sum256([]byte(p.RPID))
	out := append([]byte{}, h[:]...)
	flags := byte(flagUP | flagUV)
	if attested {
		flags |= flagAT
	}
	out = append(out, flags)
	out = binary.BigEndian.AppendUint32(out, p.counter)
	if attested {
		cose, err := webauthncbor.Marshal(webauthncose.OKPPublicKeyData{
			PublicKeyData: webauthncose.PublicKeyData{KeyType: int64(webauthncose.OctetKey), Algorithm: int64(webauthncose.AlgEdDSA)},
			Curve:         int64(webauthncose.Ed25519), XCoord: p.key.Public().(ed25519.PublicKey)})
		if err != nil {
			return nil, err
		}
		out = append(out, make([]byte, 16)...) // AAGUID: none
		out = binary.BigEndian.AppendUint16(out, uint16(len(p.id)))
		out = append(out, p.id...)
		out = append(out, cose...)
	}
	return out, nil
}

// Attest answers a registration challenge (base64url, as the platform issued
// it) with the attestation the add-credential request carries.
func (p *SoftwarePasskey) Attest(challenge string) (*authclient.Attestation, error) {
	ad, err := p.authData(true)
	if err != nil {
		return nil, err
	}
	obj, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": ad})
	if err != nil {
		return nil, err
	}
	enc := base64.RawURLEncoding.EncodeToString
	return &authclient.Attestation{CredentialID: enc(p.id), ClientDataJSON: enc(p.clientData("webauthn.create", challenge)),
		AttestationObject: enc(obj), Transports: []string{"internal"}}, nil
}

// Assert answers an authentication challenge (the lowercase hex string the
// service returned; its UTF-8 bytes are the WebAuthn challenge). Each
// assertion advances the signature counter.
func (p *SoftwarePasskey) Assert(challengeHex string) (*authclient.Assertion, error) {
	p.counter++
	cd := p.clientData("webauthn.get", authclient.ClientDataChallenge(challengeHex))
	ad, err := p.authData(false)
	if err != nil {
		return nil, err
	}
	h := sha256.Sum256(cd)
	sig := ed25519.Sign(p.key, append(append([]byte{}, ad...), h[:]...))
	enc := base64.RawURLEncoding.EncodeToString
	return &authclient.Assertion{CredentialID: enc(p.id), ClientDataJSON: enc(cd), AuthenticatorData: enc(ad), Signature: enc(sig)}, nil
}
