package envelope

import (
	"bytes"
	"encoding/json"

	"github.com/walletgate/walletgate/apierror"
)

// marshalCompact encodes v as compact JSON in struct field order, without
// escaping <, > and & and without a trailing newline: the bytes
// JavaScript's JSON.stringify gives for the same object, except that
// encoding/json always escapes U+2028 and U+2029 (JSON.parse reads both
// forms the same).
func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// decodeObject decodes data, which must be one JSON object, into dst the
// one way every outside input is read ([apierror.DecodeBytes]: member names
// matched case-sensitively, duplicate or case-colliding names refused,
// unknown members ignored). It reports false for anything else, including
// a JSON null and a value preceded by anything but JSON whitespace.
func decodeObject(data []byte, dst any) bool {
	i := bytes.IndexFunc(data, func(r rune) bool { return r != ' ' && r != '\t' && r != '\n' && r != '\r' })
	if i < 0 || data[i] != '{' {
		return false
	}
	return apierror.DecodeBytes(data, dst) == nil
}
