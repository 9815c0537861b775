package canonjson

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

// The refusals carry what apierror writes: the fixed reason, the offset and
// what was found; the member path and the field a case-folded name matches.
// The canonical form itself and every refusal are tested through
// apierror.Canonicalize and apierror.DecodeBytes, the exported contract.
func TestErrors(t *testing.T) {
	_, err := Canonicalize([]byte(`{"a":1,"a":2}`))
	var se *SyntaxError
	if !errors.As(err, &se) || *se != (SyntaxError{Offset: 7, Reason: "duplicate member name", Found: `"a"`, Member: "a"}) {
		t.Fatalf("duplicate: %#v", err)
	}
	if se.Error() != `duplicate member name "a" at offset 7` {
		t.Fatalf("message %q", se.Error())
	}

	type inner struct {
		Kind string `json:"kind"`
	}
	type outer struct {
		Nested inner `json:"nested"`
	}
	canon, err := Canonicalize([]byte(`{"nested":{"Kind":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckNames(canon, reflect.TypeFor[*outer]())
	var ne *NameError
	if !errors.As(err, &ne) || *ne != (NameError{Path: "nested.Kind", Field: "kind"}) {
		t.Fatalf("case-folded name: %#v", err)
	}
	if err := CheckNames([]byte(`{"nested":{"kind":"x"}}`), reflect.TypeFor[*outer]()); err != nil {
		t.Fatalf("exact names refused: %v", err)
	}

	// An unknown member: ignored by CheckNames, refused with its path by
	// CheckKnownNames; a case-folded name stays a NameError.
	unknown := []byte(`{"nested":{"kind":"x","colour":"y"}}`)
	if err := CheckNames(unknown, reflect.TypeFor[*outer]()); err != nil {
		t.Fatalf("CheckNames refused an unknown member: %v", err)
	}
	var ue *UnknownMemberError
	if err := CheckKnownNames(unknown, reflect.TypeFor[*outer]()); !errors.As(err, &ue) || *ue != (UnknownMemberError{Path: "nested.colour"}) {
		t.Fatalf("unknown member: %#v", err)
	}
	if ue.Error() != "nested.colour: unknown member" {
		t.Fatalf("message %q", ue.Error())
	}
	if err := CheckKnownNames(canon, reflect.TypeFor[*outer]()); !errors.As(err, &ne) || ne.Path != "nested.Kind" {
		t.Fatalf("case-folded name under CheckKnownNames: %#v", err)
	}
}

// plainWord flags a word exactly when one of its bytes ends the plain run
// of a string: a quote, a backslash or a control character, wherever it
// sits and whatever surrounds it.
func TestPlainWord(t *testing.T) {
	special := func(b byte) bool { return b == '"' || b == '\\' || b < 0x20 }
	check := func(w [8]byte) {
		want := false
		for _, b := range w {
			want = want || special(b)
		}
		if got := plainWord(binary.LittleEndian.Uint64(w[:])) != 0; got != want {
			t.Fatalf("plainWord(%q) flagged %v, want %v", w[:], got, want)
		}
	}
	for _, fill := range []byte{'a', 0x00, 0x1f, 0x20, '"', '\\', 0x7f, 0x80, 0xff} {
		for pos := range 8 {
			for b := range 256 {
				var w [8]byte
				for i := range w {
					w[i] = fill
				}
				w[pos] = byte(b)
				check(w)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 16 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], r.Uint64())
		check(w)
	}
}
