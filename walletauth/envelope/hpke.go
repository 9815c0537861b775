package envelope

import (
	"crypto/ecdh"
	"crypto/rand"
	"errors"
	"io"

	"github.com/cloudflare/circl/hpke"
	"github.com/cloudflare/circl/kem"
	"github.com/walletgate/walletgate/apierror"
)

// HPKEInfo is the RFC 9180 info string of the profile: the 12 ASCII bytes
// "turnkey_hpke".
const HPKEInfo = "turnkey_hpke"

// tagLen is the AES-256-GCM tag length; every ciphertext is at least this long.
const tagLen = 16

// Field names of the generic [Open] errors.
const (
	fieldEncappedPublic = "encappedPublic"
	fieldCiphertext     = "ciphertext"
)

// errNotSealedToKey reports that the AEAD tag did not verify: the ciphertext
// was sealed to another key or altered.
var errNotSealedToKey = errors.New("envelope: ciphertext does not decrypt under the recipient key")

// suite is the one HPKE suite of the profile: DHKEM(P-256, HKDF-SHA256),
// HKDF-SHA256, AES-256-GCM.
func suite() hpke.Suite {
	return hpke.NewSuite(hpke.KEM_P256_HKDF_SHA256, hpke.KDF_HKDF_SHA256, hpke.AEAD_AES256GCM)
}

// aad builds the profile's associated data: enc (65 bytes) || pkR (65 bytes).
func aad(enc, recipient []byte) []byte {
	out := make([]byte, 0, len(enc)+len(recipient))
	return append(append(out, enc...), recipient...)
}

// Seal encrypts plaintext to recipient with the profile (base mode, info
// [HPKEInfo], AAD = enc || recipient, both 65-byte uncompressed) in one
// single-shot context. It returns the 65-byte uncompressed encapsulated key
// and the ciphertext with its 16-byte tag appended. The ephemeral key is
// derived from 32 bytes read from rand (crypto/rand when nil), so a
// deterministic rand gives a deterministic result. A nil or non-P-256
// recipient, or a failing rand, is 500 INTERNAL_ERROR.
func Seal(recipient *ecdh.PublicKey, plaintext []byte, rand io.Reader) (enc, ciphertext []byte, err error) {
	if recipient == nil || recipient.Curve() != ecdh.P256() {
		return nil, nil, internal("Seal needs a P-256 recipient key", nil)
	}
	return seal(recipient, plaintext, rand)
}

func seal(recipient *ecdh.PublicKey, plaintext []byte, rnd io.Reader) (enc, ciphertext []byte, err error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	pkRm := recipient.Bytes()
	pkR, err := hpke.KEM_P256_HKDF_SHA256.Scheme().UnmarshalBinaryPublicKey(pkRm)
	if err != nil {
		return nil, nil, internal("loading the HPKE recipient key", err)
	}
	sender, err := suite().NewSender(pkR, []byte(HPKEInfo))
	if err != nil {
		return nil, nil, internal("setting up the HPKE sender", err)
	}
	enc, sealer, err := sender.Setup(rnd)
	if err != nil {
		return nil, nil, internal("making the HPKE ephemeral key", err)
	}
	ciphertext, err = sealer.Seal(plaintext, aad(enc, pkRm))
	if err != nil {
		return nil, nil, internal("HPKE seal", err)
	}
	return enc, ciphertext, nil
}

// Open decrypts a ciphertext sealed with [Seal] (or by any client of the
// profile) to recipient. enc must be the 65-byte uncompressed encapsulated
// key. A malformed enc or a ciphertext shorter than the tag is 400
// INVALID_INPUT; a ciphertext whose tag does not verify under recipient's
// key is 401 UNAUTHORIZED; a nil or non-P-256 recipient is 500
// INTERNAL_ERROR.
func Open(recipient *ecdh.PrivateKey, enc, ciphertext []byte) ([]byte, error) {
	if recipient == nil || recipient.Curve() != ecdh.P256() {
		return nil, internal("Open needs a P-256 recipient key", nil)
	}
	encKey, problem := parseUncompressedPoint(enc)
	if problem != "" {
		return nil, invalid(fieldEncappedPublic, fieldEncappedPublic+" "+problem)
	}
	if len(ciphertext) < tagLen {
		return nil, invalid(fieldCiphertext, fieldCiphertext+" is shorter than the 16-byte AES-GCM tag")
	}
	pt, err := open(recipient, encKey, ciphertext)
	if errors.Is(err, errNotSealedToKey) {
		return nil, apierror.Unauthenticated("ciphertext does not decrypt under the recipient key")
	}
	return pt, err
}

// open runs the profile's receiver side. It returns errNotSealedToKey when
// the tag does not verify and an *apierror.Error for internal faults.
func open(recipient *ecdh.PrivateKey, enc *ecdh.PublicKey, ciphertext []byte) ([]byte, error) {
	skR, err := recipientKey(recipient.Bytes())
	if err != nil {
		return nil, err
	}
	return openWith(skR, enc.Bytes(), ciphertext)
}

// recipientKey loads a 32-byte P-256 scalar as an HPKE recipient key.
func recipientKey(scalar []byte) (kem.PrivateKey, error) {
	skR, err := hpke.KEM_P256_HKDF_SHA256.Scheme().UnmarshalBinaryPrivateKey(scalar)
	if err != nil {
		return nil, internal("loading the HPKE recipient key", err)
	}
	return skR, nil
}

// openWith is open with the recipient key already loaded and encm the
// 65-byte encoding of the encapsulated key. The decapsulation parses encm
// with crypto/ecdh: a point off the curve fails it with an internal error,
// which a caller that has not validated encm answers itself.
func openWith(skR kem.PrivateKey, encm, ciphertext []byte) ([]byte, error) {
	pkR, err := skR.Public().MarshalBinary()
	if err != nil {
		return nil, internal("encoding the HPKE recipient key", err)
	}
	receiver, err := suite().NewReceiver(skR, []byte(HPKEInfo))
	if err != nil {
		return nil, internal("setting up the HPKE receiver", err)
	}
	opener, err := receiver.Setup(encm)
	if err != nil {
		// On a point on the curve, decapsulation cannot fail.
		return nil, internal("HPKE decapsulation", err)
	}
	pt, err := opener.Open(ciphertext, aad(encm, pkR))
	if err != nil {
		return nil, errNotSealedToKey
	}
	return pt, nil
}
