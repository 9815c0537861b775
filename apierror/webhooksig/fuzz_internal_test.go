package webhooksig

import (
	"bytes"
	"testing"
)

// FuzzParseSignatureHeader checks that the header parser never panics, that
// whatever it accepts is short and carries one canonical DER signature, and
// that the header the Signer writes for that signature parses to the same
// bytes.
func FuzzParseSignatureHeader(f *testing.F) {
	der := []byte{0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01}
	f.Add(formatHeader(der))
	f.Add(`{"version":1,"signature":"MEUCIQDr8c3Kx1m9kQq3Z2rB8d8Yc9b1R2bC4b7C0jv5kVq1DwIgDq0e6r9bT3k0h5b4n8f0XQm7hZ1QfC4rZ9t3bLQ3x0k="}`)
	f.Add(`{"signature":"MAYCAQECAQE=","version":1}`)
	f.Add(`{"version":1.0,"signature":"MAYCAQECAQE="}`)
	f.Add(`{"version":2,"signature":"MAYCAQECAQE="}`)
	f.Add(`{"version":1,"signature":"MAYCAQECAQE=","x":1}`)
	f.Add(`{"version":1,"version":1,"signature":"MAYCAQECAQE="}`)
	f.Add(`{"version":1,"signature":"MAYCAQECAQE"}`)
	f.Add(`{"version":1,"signature":"MAcCAgABAgEB"}`)
	f.Add(`{"version":1,"signature":"MIEGAgEBAgEB"}`)
	f.Add(`{"version":1,"signature":"\u004dAYCAQECAQE="}`)
	f.Add(`null`)
	f.Add(``)
	f.Fuzz(func(t *testing.T, value string) {
		got, err := parseHeader(value)
		if err != nil {
			if got != nil || err.Reason.Status() != 400 {
				t.Fatalf("rejected %q with %v and %x", value, err, got)
			}
			return
		}
		if len(value) > maxHeaderLen {
			t.Fatalf("accepted %d bytes", len(value))
		}
		if _, _, err := parseDER(got); err != nil {
			t.Fatalf("accepted DER %x that does not parse: %v", got, err)
		}
		again, verr := parseHeader(formatHeader(got))
		if verr != nil || !bytes.Equal(again, got) {
			t.Fatalf("formatHeader(%x) = %s parses to %x, %v", got, formatHeader(got), again, verr)
		}
	})
}
