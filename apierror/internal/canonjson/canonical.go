// Package canonjson is the one reading of JSON request bodies: the
// canonicalizer every signed body is hashed and decoded through, the
// case-sensitive member-name check, and [DecodeFlat], the same reading of a
// flat object in one pass. apierror wraps it and turns its errors into 400
// INVALID_INPUT.
package canonjson

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Limits of [Canonicalize]. They bound its cost and the cost of whatever later
// decodes the same body; no payments request comes near them.
const (
	// MaxCanonicalDepth is the deepest nesting of arrays and objects accepted;
	// the top-level container is depth 1.
	MaxCanonicalDepth = 64
	// MaxNumberLength is the longest number literal accepted, in bytes.
	MaxNumberLength = 512
	// MaxNumberExponent bounds the magnitude of numbers: written in
	// scientific notation d.ddd×10^x, a non-zero number needs |x| at most
	// this. Zero may be written with any exponent up to this plus
	// MaxNumberLength.
	MaxNumberExponent = 9999
)

// Canonicalize returns the canonical form of a JSON request body, or a
// *[SyntaxError] naming why the body is not acceptable. The form, the
// rejections and the limits are documented where walletgate exports them, on
// apierror.Canonicalize; an empty body, or one of only whitespace,
// canonicalizes to empty output.
func Canonicalize(body []byte) ([]byte, error) {
	if !utf8.Valid(body) {
		return nil, canonicalError(invalidUTF8Offset(body), "invalid UTF-8")
	}
	c := canonicalizer{in: body}
	c.skipSpace()
	if c.pos == len(body) {
		return []byte{}, nil
	}
	c.out = make([]byte, 0, len(body))
	if err := c.value(0); err != nil {
		return nil, err
	}
	c.skipSpace()
	if c.pos != len(body) {
		return nil, canonicalError(c.pos, "data after the JSON value")
	}
	return c.out, nil
}

// SyntaxError is a body Canonicalize refuses: Reason is a fixed phrase
// naming the problem, Offset its byte offset in the body, and Found, when
// not empty, what was found there. Member is, for a duplicate member name
// or two names that differ only in case, the later of the two (unescaped),
// and empty for every other refusal.
type SyntaxError struct {
	Offset int
	Reason string
	Found  string
	Member string
}

func (e *SyntaxError) Error() string {
	msg := e.Reason
	if e.Found != "" {
		msg += " " + e.Found
	}
	return msg + " at offset " + strconv.Itoa(e.Offset)
}

func canonicalError(offset int, reason string, found ...string) *SyntaxError {
	e := &SyntaxError{Offset: offset, Reason: reason}
	if len(found) > 0 {
		e.Found = found[0]
	}
	return e
}

func invalidUTF8Offset(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// canonicalizer parses in and appends the canonical form to out. Values are
// written in place; an object whose members arrive out of order is rewritten
// once in sorted order.
type canonicalizer struct {
	in  []byte
	pos int
	out []byte
	// scratch holds an unescaped string while it is parsed; escaped reports
	// whether the last string parsed needed it.
	scratch []byte
	escaped bool
	// digits holds the digits of the number being parsed.
	digits []byte
}

// member locates one object member already written to out: its name
// (unescaped) and the span of `"name":value` in out.
type member struct {
	name       []byte // a slice of the input, or a copy when it had escapes
	offset     int    // of the name in the input
	start, end int    // in out
}

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicalizer) value(depth int) error {
	if c.pos >= len(c.in) {
		return canonicalError(c.pos, "unexpected end of input")
	}
	switch b := c.in[c.pos]; {
	case b == '{':
		return c.object(depth + 1)
	case b == '[':
		return c.array(depth + 1)
	case b == '"':
		s, err := c.str()
		if err != nil {
			return err
		}
		c.out = appendString(c.out, s)
		return nil
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || '0' <= b && b <= '9':
		return c.number()
	default:
		r, _ := utf8.DecodeRune(c.in[c.pos:])
		return canonicalError(c.pos, "unexpected character", strconv.QuoteRune(r))
	}
}

func (c *canonicalizer) literal(word string) error {
	if len(c.in)-c.pos < len(word) || string(c.in[c.pos:c.pos+len(word)]) != word {
		return canonicalError(c.pos, "invalid literal (expected "+word+")")
	}
	c.pos += len(word)
	c.out = append(c.out, word...)
	return nil
}

func (c *canonicalizer) array(depth int) error {
	if depth > MaxCanonicalDepth {
		return canonicalError(c.pos, "nesting deeper than "+strconv.Itoa(MaxCanonicalDepth))
	}
	c.pos++ // [
	c.out = append(c.out, '[')
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return nil
	}
	for {
		c.skipSpace()
		if err := c.value(depth); err != nil {
			return err
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			return canonicalError(c.pos, "unexpected end of input in array")
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
			c.out = append(c.out, ',')
		case ']':
			c.pos++
			c.out = append(c.out, ']')
			return nil
		default:
			return canonicalError(c.pos, "expected , or ] in array")
		}
	}
}

func (c *canonicalizer) object(depth int) error {
	if depth > MaxCanonicalDepth {
		return canonicalError(c.pos, "nesting deeper than "+strconv.Itoa(MaxCanonicalDepth))
	}
	c.pos++ // {
	c.out = append(c.out, '{')
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		return nil
	}
	// Most objects have a few members: their list starts on the stack.
	var local [8]member
	members := local[:0]
	sorted := true
	for {
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return canonicalError(c.pos, "expected a member name in object")
		}
		m := member{offset: c.pos, start: len(c.out)}
		name, err := c.str()
		if err != nil {
			return err
		}
		m.name = name
		if c.escaped {
			m.name = bytes.Clone(name)
		}
		c.out = appendString(c.out, name)
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return canonicalError(c.pos, "expected : after member name")
		}
		c.pos++
		c.out = append(c.out, ':')
		c.skipSpace()
		if err := c.value(depth); err != nil {
			return err
		}
		m.end = len(c.out)
		if n := len(members); n > 0 {
			switch cmp := compareUTF16(members[n-1].name, m.name); {
			case cmp == 0:
				return duplicateError(m)
			case cmp > 0:
				sorted = false
			}
		}
		members = append(members, m)
		c.skipSpace()
		if c.pos >= len(c.in) {
			return canonicalError(c.pos, "unexpected end of input in object")
		}
		if c.in[c.pos] == ',' {
			c.pos++
			c.out = append(c.out, ',')
			continue
		}
		if c.in[c.pos] != '}' {
			return canonicalError(c.pos, "expected , or } in object")
		}
		c.pos++
		break
	}
	if !sorted {
		if err := c.reorder(members); err != nil {
			return err
		}
	}
	if err := caseCollision(members); err != nil {
		return err
	}
	c.out = append(c.out, '}')
	return nil
}

// duplicateError refuses m, a member whose name an earlier member has.
func duplicateError(m member) *SyntaxError {
	e := canonicalError(m.offset, "duplicate member name", strconv.Quote(string(m.name)))
	e.Member = string(m.name)
	return e
}

// caseCollision rejects an object two of whose member names are equal under
// Unicode case folding (as [strings.EqualFold] compares them) without being
// equal: encoding/json matches a member to a field case-insensitively, so
// such an object has no single reading. Exact duplicates are rejected before.
func caseCollision(members []member) error {
	report := func(a, b member) error {
		if a.offset > b.offset {
			a, b = b, a
		}
		e := canonicalError(b.offset, "member names differ only in case",
			strconv.Quote(string(a.name))+" and "+strconv.Quote(string(b.name)))
		e.Member = string(b.name)
		return e
	}
	if len(members) <= 8 {
		for i := range members {
			for j := i + 1; j < len(members); j++ {
				if bytes.EqualFold(members[i].name, members[j].name) {
					return report(members[i], members[j])
				}
			}
		}
		return nil
	}
	seen := make(map[string]int, len(members))
	var key []byte
	for i, m := range members {
		key = appendFolded(key[:0], m.name)
		if j, ok := seen[string(key)]; ok {
			return report(members[j], m)
		}
		seen[string(key)] = i
	}
	return nil
}

// appendFolded appends name with every character replaced by the smallest
// member of its case-folding orbit, so that two names are equal under
// strings.EqualFold exactly when their folded forms are equal.
func appendFolded(out, name []byte) []byte {
	for _, r := range string(name) {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			out = append(out, byte(r))
			continue
		}
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		out = utf8.AppendRune(out, least)
	}
	return out
}

// reorder rewrites the members of the object just written (the tail of out,
// from the first member's start) in sorted order, rejecting duplicate names.
func (c *canonicalizer) reorder(members []member) error {
	var local [8]member
	byName := append(local[:0], members...)
	slices.SortStableFunc(byName, func(a, b member) int { return compareUTF16(a.name, b.name) })
	for i := 1; i < len(byName); i++ {
		if bytes.Equal(byName[i-1].name, byName[i].name) {
			later := byName[i]
			if byName[i-1].offset > later.offset {
				later = byName[i-1]
			}
			return duplicateError(later)
		}
	}
	base := members[0].start
	var buf [512]byte
	written := append(buf[:0], c.out[base:]...)
	c.out = c.out[:base]
	for i, m := range byName {
		if i > 0 {
			c.out = append(c.out, ',')
		}
		c.out = append(c.out, written[m.start-base:m.end-base]...)
	}
	return nil
}

// compareUTF16 orders strings by their UTF-16 code units (RFC 8785, 3.2.3).
// UTF-8 byte order equals code point order, which differs from UTF-16 order
// only between a supplementary character (a surrogate pair, 0xD800-0xDFFF
// first unit) and a character in U+E000-U+FFFF.
func compareUTF16(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb {
			ua, ub := firstUnit(ra), firstUnit(rb)
			if ua != ub {
				return cmpInt(int(ua), int(ub))
			}
			return cmpInt(int(ra), int(rb))
		}
		a, b = a[na:], b[nb:]
	}
	return cmpInt(len(a), len(b))
}

func firstUnit(r rune) rune {
	if r >= 0x10000 {
		hi, _ := utf16.EncodeRune(r)
		return hi
	}
	return r
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// str parses the string at c.pos (an opening quote) and returns its unescaped
// UTF-8 bytes, valid until the next call.
func (c *canonicalizer) str() ([]byte, error) {
	start := c.pos
	c.pos++ // "
	c.escaped = false
	// Fast path: no escapes, the bytes are the value (UTF-8 was validated).
	// Eight bytes at a time up to the first word holding a quote, a
	// backslash or a control character, then byte by byte.
	i := c.pos
	for ; i+8 <= len(c.in); i += 8 {
		if plainWord(binary.LittleEndian.Uint64(c.in[i:])) != 0 {
			break
		}
	}
	for ; i < len(c.in); i++ {
		b := c.in[i]
		if b == '"' {
			c.pos = i + 1
			return c.in[start+1 : i], nil
		}
		if b == '\\' || b < 0x20 {
			break
		}
	}
	c.scratch = c.scratch[:0]
	c.escaped = true
	for c.pos < len(c.in) {
		b := c.in[c.pos]
		switch {
		case b == '"':
			c.pos++
			return c.scratch, nil
		case b < 0x20:
			return nil, canonicalError(c.pos, "control character in string")
		case b != '\\':
			c.scratch = append(c.scratch, b)
			c.pos++
			continue
		}
		if c.pos+1 >= len(c.in) {
			break
		}
		esc := c.in[c.pos+1]
		switch esc {
		case '"', '\\', '/':
			c.scratch = append(c.scratch, esc)
		case 'b':
			c.scratch = append(c.scratch, '\b')
		case 'f':
			c.scratch = append(c.scratch, '\f')
		case 'n':
			c.scratch = append(c.scratch, '\n')
		case 'r':
			c.scratch = append(c.scratch, '\r')
		case 't':
			c.scratch = append(c.scratch, '\t')
		case 'u':
			r, err := c.unicodeEscape()
			if err != nil {
				return nil, err
			}
			c.scratch = utf8.AppendRune(c.scratch, r)
			continue
		default:
			return nil, canonicalError(c.pos, "invalid escape in string")
		}
		c.pos += 2
	}
	return nil, canonicalError(start, "unterminated string")
}

// plainWord is zero exactly when none of the eight bytes of w is a quote,
// a backslash or below 0x20: each term is the exact test for a zero byte
// (of w with the byte to find cleared, or of w less 0x20 in each byte),
// whose flags above the first match may be false but never all of them.
func plainWord(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	return zero(w^(ones*'"')) | zero(w^(ones*'\\')) | (w-ones*0x20)&^w&highs
}

// unicodeEscape reads \uXXXX at c.pos, and a second one when the first is a
// high surrogate, and returns the character.
func (c *canonicalizer) unicodeEscape() (rune, error) {
	start := c.pos
	u, ok := c.hex4(c.pos + 2)
	if !ok {
		return 0, canonicalError(start, "invalid \\u escape in string")
	}
	c.pos += 6
	switch {
	case u >= 0xDC00 && u <= 0xDFFF:
		return 0, canonicalError(start, "unpaired surrogate escape in string")
	case u < 0xD800 || u > 0xDBFF:
		return u, nil
	}
	if c.pos+1 >= len(c.in) || c.in[c.pos] != '\\' || c.in[c.pos+1] != 'u' {
		return 0, canonicalError(start, "unpaired surrogate escape in string")
	}
	lo, ok := c.hex4(c.pos + 2)
	if !ok {
		return 0, canonicalError(c.pos, "invalid \\u escape in string")
	}
	if lo < 0xDC00 || lo > 0xDFFF {
		return 0, canonicalError(start, "unpaired surrogate escape in string")
	}
	c.pos += 6
	return utf16.DecodeRune(u, lo), nil
}

func (c *canonicalizer) hex4(at int) (rune, bool) {
	if at+4 > len(c.in) {
		return 0, false
	}
	var r rune
	for _, b := range c.in[at : at+4] {
		var d byte
		switch {
		case '0' <= b && b <= '9':
			d = b - '0'
		case 'a' <= b && b <= 'f':
			d = b - 'a' + 10
		case 'A' <= b && b <= 'F':
			d = b - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// appendString writes s (valid UTF-8) as an RFC 8785 JSON string.
func appendString(out, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	out = append(out, '"')
	for _, b := range s {
		switch {
		case b == '"':
			out = append(out, '\\', '"')
		case b == '\\':
			out = append(out, '\\', '\\')
		case b >= 0x20:
			out = append(out, b)
		case b == '\b':
			out = append(out, '\\', 'b')
		case b == '\f':
			out = append(out, '\\', 'f')
		case b == '\n':
			out = append(out, '\\', 'n')
		case b == '\r':
			out = append(out, '\\', 'r')
		case b == '\t':
			out = append(out, '\\', 't')
		default:
			out = append(out, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
		}
	}
	return append(out, '"')
}

// number parses the RFC 8259 number at c.pos and writes its canonical form:
// the exact decimal value as digits d (no leading or trailing zeros) times
// 10^e, laid out like ECMAScript's Number::toString.
func (c *canonicalizer) number() error {
	start := c.pos
	in := c.in
	i := c.pos
	neg := false
	if in[i] == '-' {
		neg = true
		i++
	}
	intStart := i
	switch {
	case i < len(in) && in[i] == '0':
		i++
	case i < len(in) && '1' <= in[i] && in[i] <= '9':
		for i < len(in) && '0' <= in[i] && in[i] <= '9' {
			i++
		}
	default:
		return canonicalError(i, "invalid number: expected a digit")
	}
	intDigits := in[intStart:i]
	var fracDigits []byte
	if i < len(in) && in[i] == '.' {
		i++
		fracStart := i
		for i < len(in) && '0' <= in[i] && in[i] <= '9' {
			i++
		}
		if i == fracStart {
			return canonicalError(i, "invalid number: expected a digit after the decimal point")
		}
		fracDigits = in[fracStart:i]
	}
	// The written exponent only needs to be read up to the point where no
	// mantissa of at most MaxNumberLength digits can bring the value back
	// into range; beyond that it saturates.
	const expSaturate = MaxNumberExponent + MaxNumberLength + 1
	exp := 0
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		i++
		expNeg := false
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			expNeg = in[i] == '-'
			i++
		}
		expStart := i
		for i < len(in) && '0' <= in[i] && in[i] <= '9' {
			exp = min(exp*10+int(in[i]-'0'), expSaturate)
			i++
		}
		if i == expStart {
			return canonicalError(i, "invalid number: expected a digit in the exponent")
		}
		if expNeg {
			exp = -exp
		}
	}
	if i-start > MaxNumberLength {
		return canonicalError(start, "number longer than "+strconv.Itoa(MaxNumberLength)+" bytes")
	}
	c.pos = i

	// value = digits × 10^e, digits without leading or trailing zeros.
	c.digits = append(append(c.digits[:0], intDigits...), fracDigits...)
	digits := c.digits
	e := exp - len(fracDigits)
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		e++
	}
	if exp == expSaturate || exp == -expSaturate {
		return canonicalError(start, "number exponent out of range")
	}
	if len(digits) == 0 {
		c.out = append(c.out, '0') // 0, -0, 0.000e5 ...
		return nil
	}
	// The exponent of the value in scientific notation, d.ddd × 10^x, is
	// the one the canonical form writes when it does not use plain digits;
	// bounding it (not the written one) keeps the output acceptable input.
	if x := len(digits) + e - 1; x > MaxNumberExponent || x < -MaxNumberExponent {
		return canonicalError(start, "number exponent out of range")
	}
	if neg {
		c.out = append(c.out, '-')
	}
	c.out = appendDecimal(c.out, digits, e)
	return nil
}

// appendDecimal writes digits × 10^e following ECMAScript Number::toString
// (ECMA-262, 6.1.6.1.20) with k = len(digits) and n = k + e.
func appendDecimal(out, digits []byte, e int) []byte {
	k := len(digits)
	n := k + e
	switch {
	case k <= n && n <= 21:
		out = append(out, digits...)
		for range n - k {
			out = append(out, '0')
		}
	case 0 < n && n <= 21:
		out = append(out, digits[:n]...)
		out = append(out, '.')
		out = append(out, digits[n:]...)
	case -6 < n && n <= 0:
		out = append(out, '0', '.')
		for range -n {
			out = append(out, '0')
		}
		out = append(out, digits...)
	default:
		out = append(out, digits[0])
		if k > 1 {
			out = append(out, '.')
			out = append(out, digits[1:]...)
		}
		out = append(out, 'e')
		if n-1 >= 0 {
			out = append(out, '+')
		}
		out = strconv.AppendInt(out, int64(n-1), 10)
	}
	return out
}
