package sandbox

import (
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/walletgate/walletgate/apierror"
)

// object reads the members of one decoded JSON object and records every
// field that is missing or of the wrong type in a shared Validation, so one
// pass reports every invalid field of a request with its dot path.
type object struct {
	m    map[string]any
	path string
	v    *apierror.Validation
}

func newObject(m map[string]any, path string, v *apierror.Validation) object {
	return object{m: m, path: path, v: v}
}

func (o object) field(name string) string { return apierror.Path(o.path, name) }

// has reports whether the member is present and not null.
func (o object) has(name string) bool {
	v, ok := o.m[name]
	return ok && v != nil
}

// str returns a string member with its leading and trailing white space
// trimmed. A missing or null member is "" and is recorded when required; a
// member of another type is always recorded.
func (o object) str(name string, required bool) string {
	s := strings.TrimSpace(o.verbatim(name, required))
	if s == "" && required && o.has(name) {
		if _, ok := o.m[name].(string); ok {
			o.v.Add(o.field(name), apierror.Length(1, -1), "must not be empty")
		}
	}
	return s
}

// verbatim is str without the trimming: the member exactly as sent, for a
// value matched exactly against a list. It records only a missing required
// member and a member of another type.
func (o object) verbatim(name string, required bool) string {
	raw, ok := o.m[name]
	if !ok || raw == nil {
		if required {
			o.v.Add(o.field(name), nil, "is required")
		}
		return ""
	}
	s, ok := raw.(string)
	if !ok {
		o.v.Add(o.field(name), nil, "must be a string")
		return ""
	}
	return s
}

// text is str with a length bound in characters and no control
// characters.
func (o object) text(name string, required bool, maxLen int) string {
	return o.bounded(name, o.str(name, required), maxLen)
}

// exactText is text without the trimming (see verbatim).
func (o object) exactText(name string, required bool, maxLen int) string {
	return o.bounded(name, o.verbatim(name, required), maxLen)
}

// bounded returns s, the value of member name, when it has at most maxLen
// characters and no control character, and records the member and returns
// "" otherwise.
func (o object) bounded(name, s string, maxLen int) string {
	if utf8.RuneCountInString(s) > maxLen {
		o.v.Add(o.field(name), apierror.Length(-1, maxLen), "is too long")
		return ""
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			o.v.Add(o.field(name), nil, "must not contain control characters")
			return ""
		}
	}
	return s
}

// enum is str restricted to values.
func (o object) enum(name string, required bool, values ...string) string {
	s := o.str(name, required)
	if s == "" {
		return ""
	}
	for _, v := range values {
		if s == v {
			return s
		}
	}
	o.v.Add(o.field(name), apierror.OneOf(values...), "is not one of the allowed values")
	return ""
}

// match is str that must match re (described by pattern for the client).
func (o object) match(name string, required bool, re *regexp.Regexp, c *apierror.Constraint, msg string) string {
	s := o.str(name, required)
	if s != "" && !re.MatchString(s) {
		o.v.Add(o.field(name), c, msg)
		return ""
	}
	return s
}

// boolean returns a boolean member; a wrong type is recorded.
func (o object) boolean(name string) (value, set bool) {
	raw, ok := o.m[name]
	if !ok || raw == nil {
		return false, false
	}
	b, ok := raw.(bool)
	if !ok {
		o.v.Add(o.field(name), nil, "must be a boolean")
		return false, false
	}
	return b, true
}

// obj returns a nested object member; ok is false when it is absent (and
// recorded when required) or of the wrong type (always recorded).
func (o object) obj(name string, required bool) (object, bool) {
	raw, ok := o.m[name]
	if !ok || raw == nil {
		if required {
			o.v.Add(o.field(name), nil, "is required")
		}
		return object{}, false
	}
	m, ok := raw.(map[string]any)
	if !ok {
		o.v.Add(o.field(name), nil, "must be an object")
		return object{}, false
	}
	return newObject(m, o.field(name), o.v), true
}

// array returns an array member; ok is false when absent or of the wrong
// type (recorded).
func (o object) array(name string, maxLen int) ([]any, bool) {
	raw, ok := o.m[name]
	if !ok || raw == nil {
		return nil, false
	}
	a, ok := raw.([]any)
	if !ok {
		o.v.Add(o.field(name), nil, "must be an array")
		return nil, false
	}
	if len(a) > maxLen {
		o.v.Add(o.field(name), nil, "has too many elements")
		return nil, false
	}
	return a, true
}

// elem returns element i of an array member as an object.
func (o object) elem(name string, i int, raw any) (object, bool) {
	m, ok := raw.(map[string]any)
	if !ok {
		o.v.Add(apierror.Path(o.path, name, i), nil, "must be an object")
		return object{}, false
	}
	return newObject(m, apierror.Path(o.path, name, i), o.v), true
}

// Field formats.
var (
	countryRe  = regexp.MustCompile(`^[A-Z]{2}$`)
	currencyRe = regexp.MustCompile(`^[A-Z]{3,5}$`)
	phoneRe    = regexp.MustCompile(`^\+[1-9][0-9]{7,14}$`)
	emailRe    = regexp.MustCompile(`^[^@\s]{1,64}@[^@\s]+\.[^@\s.]+$`)
	umaRe      = regexp.MustCompile(`^\$[a-z0-9._-]{1,64}@[a-z0-9.-]+\.[a-z]{2,}$`)
)

// country is an ISO 3166-1 alpha-2 member.
func (o object) country(name string, required bool) string {
	return o.match(name, required, countryRe, apierror.Format("iso3166-1-alpha-2"), "must be an ISO 3166-1 alpha-2 country code")
}

// date is a YYYY-MM-DD member, a real calendar date not after today.
func (o object) date(name string, required bool, today time.Time) string {
	s := o.str(name, required)
	if s == "" {
		return ""
	}
	d, err := time.Parse(time.DateOnly, s)
	if err != nil || d.After(today) || d.Year() < 1900 {
		o.v.Add(o.field(name), apierror.Format("date"), "must be a past date as YYYY-MM-DD")
		return ""
	}
	return s
}

// email is an email address member, returned lowercased.
func (o object) email(name string, required bool) string {
	s := strings.ToLower(o.str(name, required))
	if s != "" && (len(s) > 254 || !emailRe.MatchString(s)) {
		o.v.Add(o.field(name), apierror.Format("email"), "must be an email address")
		return ""
	}
	return s
}

// Address is a postal address.
type Address struct {
	Line1      string `json:"line1"`
	Line2      string `json:"line2,omitempty"`
	City       string `json:"city"`
	State      string `json:"state,omitempty"`
	PostalCode string `json:"postalCode"`
	Country    string `json:"country"`
}

// address reads an Address member.
func (o object) address(name string, required bool) *Address {
	a, ok := o.obj(name, required)
	if !ok {
		return nil
	}
	return &Address{
		Line1: a.text("line1", true, 255), Line2: a.text("line2", false, 255), City: a.text("city", true, 100),
		State: a.text("state", false, 100), PostalCode: a.text("postalCode", true, 20), Country: a.country("country", true),
	}
}
