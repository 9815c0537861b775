package authclient_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/walletauth/authclient"
)

func TestNormalizeNickname(t *testing.T) {
	for in, want := range map[string]string{
		"  iPhone Face-ID ":      "iPhone Face-ID",
		"Jane's YubiKey (5C)":    "Jane's YubiKey (5C)",
		"a":                      "a",
		"laptop_2.work":          "laptop_2.work",
		"Ключ":                   "Ключ",
		"手机":                     "手机",
		"Cafe\u0301":             "Cafe\u0301",
		"हिन्दी":                 "हिन्दी",
		"\t\nPixel 9\u00a0":      "Pixel 9",
		strings.Repeat("x", 100): strings.Repeat("x", 100),
		strings.Repeat("é", 100): strings.Repeat("é", 100),
	} {
		got, err := authclient.NormalizeNickname(in)
		if err != nil || got != want || !authclient.ValidNickname(in) {
			t.Errorf("NormalizeNickname(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "   ", strings.Repeat("x", 101), "key!", "a/b", "emoji 🔑", "tab\tinside", "new\nline",
		"iPhone’s", "\u0301accent first", "1\u0301", "a\x00b", "\xff\xfe", "<script>", "a,b", "a@b"} {
		_, err := authclient.NormalizeNickname(in)
		if e := apierror.As(err); e == nil || e.Code != apierror.InvalidInput || len(e.FieldErrors()) != 1 || e.FieldErrors()[0].Field != "nickname" {
			t.Errorf("NormalizeNickname(%q): %v, want 400 INVALID_INPUT naming nickname", in, err)
		}
		if authclient.ValidNickname(in) {
			t.Errorf("ValidNickname(%q) is true", in)
		}
	}
	_, err := authclient.NormalizeNickname(strings.Repeat("x", 101))
	if c := apierror.As(err).FieldErrors()[0].Constraint; c == nil || *c.MaxLength != 100 || *c.MinLength != 1 {
		t.Errorf("length constraint %+v", c)
	}
}

func FuzzNormalizeNickname(f *testing.F) {
	for _, s := range []string{"iPhone Face-ID", " a ", "", "Cafe\u0301", "\u0301", "\xff", "手机 (2)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := authclient.NormalizeNickname(s)
		if err != nil && apierror.CodeOf(err) != apierror.InvalidInput {
			t.Fatalf("NormalizeNickname(%q): %v", s, err)
		}
		if err == nil && (got == "" || got != string(bytes.TrimSpace([]byte(got)))) {
			t.Fatalf("NormalizeNickname(%q) = %q", s, got)
		}
	})
}

func TestClientDataChallenge(t *testing.T) {
	if got := authclient.ClientDataChallenge("ab"); got != "YWI" {
		t.Errorf("ClientDataChallenge = %q", got)
	}
}
