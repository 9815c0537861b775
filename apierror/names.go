package apierror

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// checkMemberNames walks canon (the output of Canonicalize, so valid compact
// JSON) beside the Go type it will be decoded into and rejects a member whose
// name matches a struct field only under case folding. encoding/json would
// fill the field from it; walletgate reads member names case-sensitively, so
// that "clientPublicKey" and "ClientPublicKey" are never the same member.
func checkMemberNames(canon []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(canon))
	dec.UseNumber() // numbers are skipped, never converted
	w := nameWalker{dec: dec}
	return w.value(t, "")
}

type nameWalker struct {
	dec *json.Decoder
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// value reads one value; t is the type it decodes into, nil when it is not
// decoded (an unknown member) or decoded by the type's own code.
func (w *nameWalker) value(t reflect.Type, path string) error {
	tok, err := w.dec.Token()
	if err != nil {
		return Internal(err) // canon is valid JSON; this does not happen
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	t = plainType(t)
	switch delim {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for w.dec.More() {
			if err := w.value(elem, path); err != nil {
				return err
			}
		}
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = structFields(t)
		} else if t != nil && t.Kind() == reflect.Map {
			elem = t.Elem()
		}
		for w.dec.More() {
			tok, err := w.dec.Token()
			if err != nil {
				return Internal(err)
			}
			name, _ := tok.(string)
			next := elem
			if fields != nil {
				var known bool
				if next, known = fields[name]; !known {
					if want := foldedField(fields, name); want != "" {
						return InvalidField(joinPath(path, name), nil,
							"unknown member: member names are case-sensitive; the field is "+want)
					}
				}
			}
			if err := w.value(next, joinPath(path, name)); err != nil {
				return err
			}
		}
	}
	_, err = w.dec.Token() // the closing delimiter
	if err != nil {
		return Internal(err)
	}
	return nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
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
