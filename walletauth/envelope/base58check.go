package envelope

import (
	"bytes"
	"crypto/sha256"

	"github.com/mr-tron/base58"
)

// checksumLen is the length of the base58check checksum.
const checksumLen = 4

// base58CheckEncode returns base58(payload || first 4 bytes of
// SHA-256(SHA-256(payload))) in the Bitcoin alphabet, with no version byte.
func base58CheckEncode(payload []byte) string {
	sum := checksum(payload)
	buf := make([]byte, 0, len(payload)+checksumLen)
	return base58.Encode(append(append(buf, payload...), sum[:]...))
}

// base58CheckDecode reverses base58CheckEncode. It returns the payload, or a
// problem phrase naming the failed check.
func base58CheckDecode(s string) ([]byte, string) {
	raw, err := base58.Decode(s)
	if err != nil {
		return nil, "is not base58"
	}
	if len(raw) < checksumLen {
		return nil, "is shorter than its 4-byte base58check checksum"
	}
	payload, sum := raw[:len(raw)-checksumLen], raw[len(raw)-checksumLen:]
	want := checksum(payload)
	if !bytes.Equal(sum, want[:]) {
		return nil, "has a wrong base58check checksum"
	}
	return payload, ""
}

func checksum(payload []byte) [checksumLen]byte {
	first := sha256.Sum256(payload)
	second := sha256.Sum256(first[:])
	return [checksumLen]byte(second[:checksumLen])
}
