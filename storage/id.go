package storage

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// NewID returns a fresh identifier "<prefix>:<uuid>" with a random (version 4)
// UUID read from r, or from crypto/rand when r is nil. Prefix is the record
// type as the wire format names it, for example "Request" or "Session".
func NewID(r io.Reader, prefix string) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	var u [16]byte
	if _, err := io.ReadFull(r, u[:]); err != nil {
		return "", fmt.Errorf("storage: reading randomness for an id: %w", err)
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	var b strings.Builder
	b.Grow(len(prefix) + 37)
	b.WriteString(prefix)
	b.WriteByte(':')
	var h [36]byte
	hex.Encode(h[0:8], u[0:4])
	h[8] = '-'
	hex.Encode(h[9:13], u[4:6])
	h[13] = '-'
	hex.Encode(h[14:18], u[6:8])
	h[18] = '-'
	hex.Encode(h[19:23], u[8:10])
	h[23] = '-'
	hex.Encode(h[24:36], u[10:16])
	b.Write(h[:])
	return b.String(), nil
}

// ValidID reports whether id is "<prefix>:<uuid>" with a UUID in canonical
// lowercase or uppercase hex form.
func ValidID(id, prefix string) bool {
	rest, ok := strings.CutPrefix(id, prefix+":")
	if !ok || len(rest) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := rest[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}
