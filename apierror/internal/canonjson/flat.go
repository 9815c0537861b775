package canonjson

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// MaxFlatMembers is the most members an object [DecodeFlat] decodes may
// have; a longer object is left to the full reading.
const MaxFlatMembers = 32

// DecodeFlat decodes a flat object in one pass. When it reports true, dst
// holds exactly what the full reading gives on success: [Canonicalize],
// then [CheckNames] ([CheckKnownNames] when known) of the canonical form
// against dst's type, then json.Unmarshal of the canonical form into dst.
// When it reports false it has changed nothing, and the full reading
// decides, errors included: DecodeFlat accepts only what the full reading
// accepts, and refuses nothing itself.
//
// It reports true only when body is valid UTF-8 holding one JSON object
// (whitespace around it and its tokens allowed) of at most
// [MaxFlatMembers] members whose values are strings, numbers, true, false
// or null, no two names equal under Unicode case folding, and dst is a
// non-nil pointer to one of:
//
//   - a struct without embedded fields whose JSON names are valid tag
//     names, none two equal under case folding, and none with the string
//     option, that does not decode itself. Fields of kind string, bool,
//     int, uint or float (json.Number and types that decode themselves
//     excepted) are filled from members of their exact name; a member
//     naming another field, a member naming a field only under case
//     folding, and with known a member naming no field leave the body to
//     the full reading. A value json.Unmarshal would refuse for its field
//     (a string for a number, 1.5 or 300 for an int8) does too.
//   - a map with string keys and json.RawMessage values: each member
//     becomes an entry whose value is the member's canonical text.
func DecodeFlat(body []byte, dst any, known bool) bool {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return false
	}
	p := planFor(v.Type())
	if p == nil {
		return false
	}
	d := flatDecoders.Get().(*flatDecoder)
	defer d.release()
	d.c = canonicalizer{in: body, scratch: d.c.scratch[:0], digits: d.c.digits[:0]}
	d.plan, d.known = p, known
	if !d.object() {
		return false
	}
	if p.isMap {
		d.commitMap(v.Elem())
	} else {
		d.commitStruct(v.Elem())
	}
	return true
}

// flatDecoders keeps the buffers of a decoding for the next one; release
// clears what a decoding read before a decoder goes back.
var flatDecoders = sync.Pool{New: func() any { return new(flatDecoder) }}

// maxKeptBuffer bounds the scratch space a pooled decoder keeps.
const maxKeptBuffer = 512

func (d *flatDecoder) release() {
	d.members = d.members[:0]
	d.c = canonicalizer{scratch: kept(d.c.scratch), digits: kept(d.c.digits)}
	d.names, d.values, d.number = kept(d.names), kept(d.values), kept(d.number)
	d.plan, d.arena = nil, nil
	flatDecoders.Put(d)
}

// kept returns b emptied, its bytes zeroed, or nil when it is too large to
// keep.
func kept(b []byte) []byte {
	if cap(b) > maxKeptBuffer {
		return nil
	}
	b = b[:cap(b)]
	clear(b)
	return b[:0]
}

// flatKind is what a field of a flat struct takes.
type flatKind uint8

const (
	// kindOther is a field DecodeFlat does not fill: a member naming it
	// leaves the body to the full reading.
	kindOther flatKind = iota
	kindString
	kindBool
	kindInt
	kindUint
	kindFloat
)

type flatField struct {
	name  string
	index int
	kind  flatKind
	bits  int // of int, uint and float kinds
}

// flatPlan is how DecodeFlat fills one type: a map of raw values, or the
// fields of a struct.
type flatPlan struct {
	isMap  bool
	fields []flatField
}

var (
	flatPlans  sync.Map // pointer reflect.Type -> *flatPlan, nil when not flat
	rawMessage = reflect.TypeFor[json.RawMessage]()
	rawMap     = reflect.TypeFor[map[string]json.RawMessage]()
	jsonNumber = reflect.TypeFor[json.Number]()
)

func planFor(pt reflect.Type) *flatPlan {
	if p, ok := flatPlans.Load(pt); ok {
		return p.(*flatPlan)
	}
	p := newPlan(pt.Elem())
	flatPlans.Store(pt, p)
	return p
}

// decodesItself reports whether json.Unmarshal hands values of t to t's own
// code.
func decodesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return pt.Implements(jsonUnmarshaler) || pt.Implements(textUnmarshaler)
}

func newPlan(t reflect.Type) *flatPlan {
	if decodesItself(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Map:
		if t.Key() == reflect.TypeFor[string]() && t.Elem() == rawMessage {
			return &flatPlan{isMap: true}
		}
		return nil
	case reflect.Struct:
	default:
		return nil
	}
	p := &flatPlan{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil // promoted fields: the full reading resolves them
		}
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		} else if !validTagName(name) {
			return nil // encoding/json would use the Go name; CheckNames the tag
		}
		for _, o := range strings.Split(opts, ",") {
			if o == "string" {
				return nil
			}
		}
		for _, g := range p.fields {
			if strings.EqualFold(g.name, name) {
				return nil
			}
		}
		p.fields = append(p.fields, fieldPlan(name, i, f.Type))
	}
	return p
}

func fieldPlan(name string, index int, t reflect.Type) flatField {
	f := flatField{name: name, index: index}
	if t == jsonNumber || decodesItself(t) {
		return f
	}
	switch t.Kind() {
	case reflect.String:
		f.kind = kindString
	case reflect.Bool:
		f.kind = kindBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f.kind, f.bits = kindInt, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f.kind, f.bits = kindUint, t.Bits()
	case reflect.Float32, reflect.Float64:
		f.kind, f.bits = kindFloat, t.Bits()
	}
	return f
}

// validTagName is encoding/json's test of a tag name: letters, digits and
// punctuation other than quotes and backslash.
func validTagName(s string) bool {
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// flatMember is one member read, kept until the whole object is known to
// be accepted. It holds no pointers: its name and string value are spans
// of the input, or of the decoder's copies when they had escapes.
type flatMember struct {
	name  span
	value span // a string value of a struct field; in the arena for a map
	num   uint64
	field int  // index in plan.fields; -1 for an unknown member
	kind  byte // '"', '0' (number), 't', 'f' or 'n'
}

// span locates bytes in the input or, when copied, in a buffer of the
// decoder.
type span struct {
	lo, hi int
	copied bool
}

type flatDecoder struct {
	c       canonicalizer
	plan    *flatPlan
	known   bool
	members []flatMember
	// names and values hold the unescaped names and struct string values
	// that had escapes.
	names, values []byte
	// arena holds the canonical text of a map's values, sliced into the
	// entries once the object is accepted.
	arena []byte
	// number holds the canonical text of a struct member's number.
	number []byte
}

func (d *flatDecoder) name(m *flatMember) []byte {
	if m.name.copied {
		return d.names[m.name.lo:m.name.hi]
	}
	return d.c.in[m.name.lo:m.name.hi]
}

func (d *flatDecoder) value(m *flatMember) []byte {
	if m.value.copied {
		return d.values[m.value.lo:m.value.hi]
	}
	return d.c.in[m.value.lo:m.value.hi]
}

// str reads the string at c.pos into a span: of the input when it has no
// escape, else of the unescaped copy appended to *buf.
func (d *flatDecoder) str(buf *[]byte) (span, bool) {
	c := &d.c
	start := c.pos + 1
	s, err := c.str()
	if err != nil {
		return span{}, false
	}
	if !c.escaped {
		return span{lo: start, hi: start + len(s)}, true
	}
	lo := len(*buf)
	*buf = append(*buf, s...)
	return span{lo: lo, hi: len(*buf), copied: true}, true
}

// object reads the whole body; false leaves it to the full reading.
func (d *flatDecoder) object() bool {
	c := &d.c
	if !utf8.Valid(c.in) {
		return false
	}
	c.skipSpace()
	if c.pos >= len(c.in) || c.in[c.pos] != '{' {
		return false
	}
	c.pos++
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		return d.end()
	}
	if d.plan.isMap {
		d.arena = make([]byte, 0, len(c.in))
	}
	for {
		if c.pos >= len(c.in) || c.in[c.pos] != '"' || len(d.members) == MaxFlatMembers {
			return false
		}
		name, ok := d.str(&d.names)
		if !ok {
			return false
		}
		m := flatMember{name: name, field: -1}
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return false
		}
		c.pos++
		c.skipSpace()
		if !d.member(&m) {
			return false
		}
		d.members = append(d.members, m)
		c.skipSpace()
		if c.pos >= len(c.in) {
			return false
		}
		if c.in[c.pos] == '}' {
			c.pos++
			break
		}
		if c.in[c.pos] != ',' {
			return false
		}
		c.pos++
		c.skipSpace()
	}
	// Two names equal under case folding, exactly equal included, are
	// refused by the full reading.
	for i := range d.members {
		a := d.name(&d.members[i])
		for j := i + 1; j < len(d.members); j++ {
			if foldEqual(a, d.name(&d.members[j])) {
				return false
			}
		}
	}
	return d.end()
}

// end accepts the body when nothing but whitespace follows the object.
func (d *flatDecoder) end() bool {
	d.c.skipSpace()
	return d.c.pos == len(d.c.in)
}

// foldEqual is bytes.EqualFold, which names of different lengths can
// satisfy only when one of them is not ASCII.
func foldEqual(a, b []byte) bool {
	if len(a) != len(b) && isASCII(a) && isASCII(b) {
		return false
	}
	return bytes.EqualFold(a, b)
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// member matches m's name to its field and reads its value at c.pos.
func (d *flatDecoder) member(m *flatMember) bool {
	kind := kindOther
	if !d.plan.isMap {
		name := d.name(m)
		m.field = d.lookup(name)
		switch {
		case m.field >= 0:
			kind = d.plan.fields[m.field].kind
			if kind == kindOther {
				return false
			}
		case d.known:
			return false // DecodeStored refuses a member with no field
		case d.folded(name):
			return false // a field's name only under case folding: refused
		}
	}
	c := &d.c
	if c.pos >= len(c.in) {
		return false
	}
	switch b := c.in[c.pos]; {
	case b == '"':
		m.kind = '"'
		if !d.plan.isMap {
			if m.field >= 0 && kind != kindString {
				return false
			}
			v, ok := d.str(&d.values)
			m.value = v
			return ok
		}
		start := c.pos
		s, err := c.str()
		if err != nil {
			return false
		}
		m.value.lo = len(d.arena)
		if c.escaped {
			d.arena = appendString(d.arena, s)
		} else {
			d.arena = append(d.arena, c.in[start:c.pos]...)
		}
		m.value.hi = len(d.arena)
		return true
	case b == '-' || '0' <= b && b <= '9':
		m.kind = '0'
		return d.readNumber(m, kind)
	case b == 't' || b == 'f' || b == 'n':
		word := "null"
		switch b {
		case 't':
			word = "true"
		case 'f':
			word = "false"
		}
		if !bytes.HasPrefix(c.in[c.pos:], []byte(word)) {
			return false
		}
		c.pos += len(word)
		m.kind = b
		if d.plan.isMap {
			m.value.lo = len(d.arena)
			d.arena = append(d.arena, word...)
			m.value.hi = len(d.arena)
		} else if m.field >= 0 && b != 'n' && kind != kindBool {
			return false // null leaves a field of these kinds as it was
		}
		return true
	}
	return false // an object, an array or no value: the full reading's
}

// readNumber reads the number at c.pos, canonicalized, and parses it as
// encoding/json parses the canonical text for a field of kind.
func (d *flatDecoder) readNumber(m *flatMember, kind flatKind) bool {
	c := &d.c
	if d.plan.isMap {
		c.out = d.arena
		if c.number() != nil {
			return false
		}
		m.value.lo, m.value.hi = len(d.arena), len(c.out)
		d.arena = c.out
		return true
	}
	c.out = d.number[:0]
	err := c.number()
	d.number = c.out
	if err != nil {
		return false
	}
	if m.field < 0 {
		return true
	}
	text := string(d.number)
	f := d.plan.fields[m.field]
	switch kind {
	case kindInt:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || f.bits < 64 && (n < -1<<(f.bits-1) || n >= 1<<(f.bits-1)) {
			return false
		}
		m.num = uint64(n)
	case kindUint:
		n, err := strconv.ParseUint(text, 10, 64)
		if err != nil || f.bits < 64 && n >= 1<<f.bits {
			return false
		}
		m.num = n
	case kindFloat:
		n, err := strconv.ParseFloat(text, f.bits)
		if err != nil || f.bits == 32 && math.Abs(n) > math.MaxFloat32 {
			return false
		}
		m.num = math.Float64bits(n)
	default:
		return false
	}
	return true
}

// lookup returns the index of the field named exactly name, or -1.
func (d *flatDecoder) lookup(name []byte) int {
	for i := range d.plan.fields {
		if d.plan.fields[i].name == string(name) {
			return i
		}
	}
	return -1
}

// folded reports whether name equals a field's name under case folding.
func (d *flatDecoder) folded(name []byte) bool {
	for i := range d.plan.fields {
		if foldEqual([]byte(d.plan.fields[i].name), name) {
			return true
		}
	}
	return false
}

func (d *flatDecoder) commitStruct(v reflect.Value) {
	for i := range d.members {
		m := &d.members[i]
		if m.field < 0 || m.kind == 'n' {
			continue
		}
		f := d.plan.fields[m.field]
		fv := v.Field(f.index)
		switch f.kind {
		case kindString:
			fv.SetString(string(d.value(m)))
		case kindBool:
			fv.SetBool(m.kind == 't')
		case kindInt:
			fv.SetInt(int64(m.num))
		case kindUint:
			fv.SetUint(m.num)
		case kindFloat:
			fv.SetFloat(math.Float64frombits(m.num))
		}
	}
}

func (d *flatDecoder) commitMap(v reflect.Value) {
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(v.Type(), len(d.members)))
	}
	entries := v.Convert(rawMap).Interface().(map[string]json.RawMessage)
	for i := range d.members {
		m := &d.members[i]
		entries[string(d.name(m))] = json.RawMessage(d.arena[m.value.lo:m.value.hi:m.value.hi])
	}
}
