package canonjson

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// CheckNames walks canon (the output of [Canonicalize], so valid compact
// JSON with only the escapes Canonicalize writes) beside the Go type t it
// will be decoded into and rejects, with a *[NameError], a member whose name
// matches a struct field only under case folding. encoding/json would fill
// the field from it; walletgate reads member names case-sensitively, so that
// "clientPublicKey" and "ClientPublicKey" are never the same member.
func CheckNames(canon []byte, t reflect.Type) error {
	w := nameWalker{in: canon}
	if err := w.value(t); err != nil {
		return err
	}
	return nil
}

// CheckKnownNames is [CheckNames] that also rejects, with a
// *[UnknownMemberError], a member of an object decoded into a struct that
// has no field of its name, at any depth. Members of maps, of interfaces
// and of types that decode themselves are not judged, nor is anything
// inside a member already rejected. A case-folded name is a *[NameError],
// as for CheckNames.
func CheckKnownNames(canon []byte, t reflect.Type) error {
	w := nameWalker{in: canon, known: true}
	if err := w.value(t); err != nil {
		return err
	}
	return nil
}

// UnknownMemberError is a member of an object decoded into a struct that
// has no field of its name.
type UnknownMemberError struct {
	// Path is the dotted path of the member, as field errors write it.
	Path string
}

func (e *UnknownMemberError) Error() string { return e.Path + ": unknown member" }

// NameError is a member whose name equals a struct field's only under case
// folding.
type NameError struct {
	// Path is the dotted path of the member, as field errors write it.
	Path string
	// Field is the field's JSON name, spelled as the type spells it.
	Field string
}

func (e *NameError) Error() string {
	return e.Path + ": unknown member: member names are case-sensitive; the field is " + e.Field
}

type nameWalker struct {
	in  []byte
	pos int
	// path holds the raw names of the members being walked, for the
	// error that names one.
	path [][]byte
	// known rejects members of a struct that has no field of their name.
	known bool
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
					return &NameError{Path: w.pathTo(raw), Field: want}
				}
				if w.known {
					return &UnknownMemberError{Path: w.pathTo(raw)}
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
// name without one or with a tag name encoding/json does not accept; "-"
// skipped; the fields of untagged embedded structs promoted (the shallower
// name wins).
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
		if !validTagName(name) {
			name = "" // encoding/json names the field as if untagged
		}
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
