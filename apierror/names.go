package apierror

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// checkMemberNames walks canon (the output of Canonicalize, so valid compact
// JSON with only the escapes Canonicalize writes) beside the Go type it will
// be decoded into and rejects a member whose name matches a struct field only
// under case folding. encoding/json would fill the field from it; walletgate
// reads member names case-sensitively, so that "clientPublicKey" and
// "ClientPublicKey" are never the same member.
func checkMemberNames(canon []byte, t reflect.Type) error {
	w := nameWalker{in: canon}
	return w.value(t)
}

type nameWalker struct {
	in  []byte
	pos int
	// path holds the raw names of the members being walked, for the
	// error that names one.
	path [][]byte
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// value reads the value at w.pos; t is the type it decodes into, nil when it
// is not decoded (an unknown member) or decoded by the type's own code.
func (w *nameWalker) value(t reflect.Type) error {
	switch w.in[w.pos] {
	case '{':
		return w.object(plainType(t))
	case '[':
		var elem reflect.Type
		if t = plainType(t); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		w.pos++ // [
		for w.in[w.pos] != ']' {
			if err := w.value(elem); err != nil {
				return err
			}
			if w.in[w.pos] == ',' {
				w.pos++
			}
		}
		w.pos++ // ]
	case '"':
		w.str()
	default: // a number or a literal: compact, so it ends at , ] } or the end
		for w.pos < len(w.in) && w.in[w.pos] != ',' && w.in[w.pos] != ']' && w.in[w.pos] != '}' {
			w.pos++
		}
	}
	return nil
}

func (w *nameWalker) object(t reflect.Type) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		fields = structFields(t)
	} else if t != nil && t.Kind() == reflect.Map {
		elem = t.Elem()
	}
	w.pos++ // {
	for w.in[w.pos] != '}' {
		raw, escaped := w.str()
		w.pos++ // :
		next := elem
		if fields != nil {
			var known bool
			if escaped {
				next, known = fields[unquote(raw)]
			} else {
				next, known = fields[string(raw)] // no copy is made for a lookup
			}
			if !known {
				name := string(raw)
				if escaped {
					name = unquote(raw)
				}
				if want := foldedField(fields, name); want != "" {
					return InvalidField(w.pathTo(raw), nil, "unknown member: member names are case-sensitive; the field is "+want)
				}
			}
		}
		w.path = append(w.path, raw)
		if err := w.value(next); err != nil {
			return err
		}
		w.path = w.path[:len(w.path)-1]
		if w.in[w.pos] == ',' {
			w.pos++
		}
	}
	w.pos++ // }
	return nil
}

// str skips the string at w.pos and returns its bytes: the contents between
// the quotes when it has no escape, or the whole quoted string when it has.
func (w *nameWalker) str() (raw []byte, escaped bool) {
	start := w.pos
	w.pos++ // "
	for w.in[w.pos] != '"' {
		if w.in[w.pos] == '\\' {
			escaped = true
			w.pos++
		}
		w.pos++
	}
	w.pos++ // "
	if escaped {
		return w.in[start:w.pos], true
	}
	return w.in[start+1 : w.pos-1], false
}

// pathTo is the dotted path of the member named raw in the object being
// walked, as field errors write it.
func (w *nameWalker) pathTo(raw []byte) string {
	var b strings.Builder
	for _, n := range append(w.path, raw) {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		if len(n) > 0 && n[0] == '"' {
			b.WriteString(unquote(n))
		} else {
			b.Write(n)
		}
	}
	return b.String()
}

// unquote decodes a quoted JSON string of canonical input.
func unquote(quoted []byte) string {
	var s string
	_ = json.Unmarshal(quoted, &s) // canonical input: cannot fail
	return s
}

// plainType strips pointers and returns nil for types that decode themselves
// (their members are theirs to judge) and for interfaces (decoded into maps
// with the exact names).
func plainType(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface {
		return nil
	}
	if pt := reflect.PointerTo(t); pt.Implements(jsonUnmarshaler) || pt.Implements(textUnmarshaler) {
		return nil
	}
	return t
}

func foldedField(fields map[string]reflect.Type, name string) string {
	for f := range fields {
		if strings.EqualFold(f, name) {
			return f
		}
	}
	return ""
}

var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// structFields returns the JSON member names of a struct type and the type
// each decodes into, as encoding/json names them: the tag name, or the Go
// name without one; "-" skipped; the fields of untagged embedded structs
// promoted (the shallower name wins).
func structFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	addFields(m, t, 0)
	fieldCache.Store(t, m)
	return m
}

func addFields(m map[string]reflect.Type, t reflect.Type, depth int) {
	if depth > 8 {
		return
	}
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, taken := m[name]; !taken {
			m[name] = f.Type
		}
	}
	for _, e := range embedded {
		addFields(m, e, depth+1)
	}
}

// decodeFast fills dst from canon exactly as json.Unmarshal(canon, dst)
// would, without reflection per member, for the two shapes the verify paths
// decode: a pointer to a map of string to json.RawMessage, and a pointer to a
// struct whose JSON members are all plain strings. canon must be the output
// of Canonicalize already accepted by checkMemberNames for dst's type, so it
// is valid compact JSON with no duplicate or case-colliding names, and every
// member either names a field exactly or no field under case folding. It
// reports false, having written nothing, for any other dst or for a value
// it does not handle (a non-object body, a field set to a non-string); the
// caller then decodes with json.Unmarshal.
func decodeFast(canon []byte, dst any) bool {
	if len(canon) < 2 || canon[0] != '{' {
		return false
	}
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	p := fastPlanOf(rv.Type())
	switch {
	case p.rawMap:
		return decodeRawMap(canon, rv.Convert(rawMapPointer).Interface().(*map[string]json.RawMessage))
	case p.fields != nil:
		return decodeStringStruct(canon, rv.Elem(), p.fields)
	}
	return false
}

var (
	stringType    = reflect.TypeFor[string]()
	rawMessage    = reflect.TypeFor[json.RawMessage]()
	rawMapPointer = reflect.TypeFor[*map[string]json.RawMessage]()
)

// fastPlan says how decodeFast handles a pointer type: rawMap for a map of
// string to json.RawMessage, fields (member name to field index) for a
// struct of plain string fields; neither for anything else.
type fastPlan struct {
	rawMap bool
	fields map[string]int
}

var planCache sync.Map // reflect.Type (a pointer type) -> *fastPlan

func fastPlanOf(pt reflect.Type) *fastPlan {
	if p, ok := planCache.Load(pt); ok {
		return p.(*fastPlan)
	}
	p := &fastPlan{}
	t := pt.Elem()
	switch {
	case decodesItself(t):
	case t.Kind() == reflect.Map:
		p.rawMap = t.Key() == stringType && t.Elem() == rawMessage && pt.ConvertibleTo(rawMapPointer)
	case t.Kind() == reflect.Struct:
		p.fields = stringFields(t)
	}
	planCache.Store(pt, p)
	return p
}

// decodesItself reports whether encoding/json would hand t (or *t) its own
// bytes rather than decode it member by member.
func decodesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) ||
		pt.Implements(jsonUnmarshaler) || pt.Implements(textUnmarshaler)
}

// stringFields returns the member names of t and their field indexes when
// every exported field of t is a plain string (kind string, decoding itself
// in no way) named by a simple tag or its Go name, with no embedded fields,
// no ",string" option and no two fields of the same name: the structs whose
// encoding/json names are exactly the ones structFields gives. It returns
// nil for any other struct.
func stringFields(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		for _, o := range strings.Split(opts, ",") {
			if o != "" && o != "omitempty" && o != "omitzero" {
				return nil
			}
		}
		if !simpleName(name) || f.Type.Kind() != reflect.String || decodesItself(f.Type) {
			return nil
		}
		if name == "" {
			name = f.Name
		}
		if _, taken := m[name]; taken {
			return nil
		}
		m[name] = i
	}
	return m
}

// simpleName reports whether a tag name uses only letters, digits, '_' and
// '-', all of which encoding/json accepts as a member name.
func simpleName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// decodeRawMap fills *dst as json.Unmarshal fills a map[string]json.RawMessage:
// a new map when *dst is nil (else the existing one), each member's value
// its JSON text. The values are slices of canon capped at their end, so an
// append to one reallocates instead of overwriting the next: canon must be
// a buffer no one else holds (DecodeBytes' canonical copy).
func decodeRawMap(canon []byte, dst *map[string]json.RawMessage) bool {
	w := nameWalker{in: canon, pos: 1}
	if *dst == nil {
		*dst = map[string]json.RawMessage{}
	}
	m := *dst
	for w.in[w.pos] != '}' {
		raw, escaped := w.str()
		w.pos++ // :
		start := w.pos
		_ = w.value(nil)
		name := string(raw)
		if escaped {
			name = unquote(raw)
		}
		m[name] = json.RawMessage(canon[start:w.pos:w.pos])
		if w.in[w.pos] == ',' {
			w.pos++
		}
	}
	return true
}

// decodeStringStruct fills the string fields of v named in fields as
// json.Unmarshal does: a string member sets its field, null leaves it, an
// unknown member is skipped. Any other value for a field makes it report
// false before anything is written.
func decodeStringStruct(canon []byte, v reflect.Value, fields map[string]int) bool {
	type assignment struct {
		field   int
		raw     []byte
		escaped bool
	}
	var buf [8]assignment
	set := buf[:0]
	w := nameWalker{in: canon, pos: 1}
	for w.in[w.pos] != '}' {
		raw, escaped := w.str()
		w.pos++ // :
		var i int
		var known bool
		if escaped {
			i, known = fields[unquote(raw)]
		} else {
			i, known = fields[string(raw)]
		}
		switch {
		case !known:
			_ = w.value(nil)
		case w.in[w.pos] == '"':
			s, esc := w.str()
			set = append(set, assignment{i, s, esc})
		case w.in[w.pos] == 'n': // null: the field keeps its value
			_ = w.value(nil)
		default:
			return false
		}
		if w.in[w.pos] == ',' {
			w.pos++
		}
	}
	for _, a := range set {
		s := string(a.raw)
		if a.escaped {
			s = unquote(a.raw)
		}
		v.Field(a.field).SetString(s)
	}
	return true
}
