package apierror

import (
	"strconv"
	"strings"
)

// FieldError describes one invalid field of a request: its dot path, the
// constraint it broke (when one can be named) and a human-readable message.
type FieldError struct {
	// Field is the dot path of the field, with array indexes in brackets:
	// "address.postalCode", "items[2].name".
	Field string `json:"field"`
	// Constraint is the rule the value broke, when it can be stated.
	Constraint *Constraint `json:"constraint,omitempty"`
	// Message explains the problem to a person.
	Message string `json:"message,omitempty"`
}

// Constraint is the rule a field must satisfy. Every member is optional; set
// the ones that describe the rule.
type Constraint struct {
	// Format names an input format: "email", "tel", "url", "date",
	// "iso3166-1-alpha-2", "e.164", ...
	Format string `json:"format,omitempty"`
	// Pattern is a regular expression the value must match.
	Pattern string `json:"pattern,omitempty"`
	// Enum lists the allowed values.
	Enum []string `json:"enum,omitempty"`
	// MinLength is the minimum length in characters.
	MinLength *int `json:"minLength,omitempty"`
	// MaxLength is the maximum length in characters.
	MaxLength *int `json:"maxLength,omitempty"`
}

// Length returns a constraint on the length of a value; a negative bound is
// omitted.
func Length(minLen, maxLen int) *Constraint {
	c := &Constraint{}
	if minLen >= 0 {
		c.MinLength = &minLen
	}
	if maxLen >= 0 {
		c.MaxLength = &maxLen
	}
	return c
}

// OneOf returns a constraint listing the allowed values.
func OneOf(values ...string) *Constraint { return &Constraint{Enum: values} }

// Format returns a constraint naming an input format.
func Format(name string) *Constraint { return &Constraint{Format: name} }

// Pattern returns a constraint naming a regular expression.
func Pattern(re string) *Constraint { return &Constraint{Pattern: re} }

// Path joins path elements into a field path: strings become dot-separated
// names and ints become bracketed indexes, so Path("items", 2, "name") is
// "items[2].name". Elements of other types are formatted with their String
// method or ignored.
func Path(elems ...any) string {
	var b strings.Builder
	for _, el := range elems {
		switch v := el.(type) {
		case int:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(v))
			b.WriteByte(']')
		case string:
			if b.Len() > 0 && v != "" {
				b.WriteByte('.')
			}
			b.WriteString(v)
		case interface{ String() string }:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(v.String())
		}
	}
	return b.String()
}

// Validation collects every invalid field of one request, so a client learns
// about all of them at once. The zero value is ready to use.
//
//	var v apierror.Validation
//	if req.FullName == "" {
//		v.Add("fullName", apierror.Length(1, 255), "is required")
//	}
//	return v.Err() // nil, or 400 INVALID_INPUT with details.errors
type Validation struct {
	errs []FieldError
}

// Add records that field broke constraint (which may be nil). Fields are
// reported in the order they were added.
func (v *Validation) Add(field string, constraint *Constraint, message string) {
	v.errs = append(v.errs, FieldError{Field: field, Constraint: constraint, Message: message})
}

// Check records the field as invalid when ok is false, and reports ok.
func (v *Validation) Check(ok bool, field string, constraint *Constraint, message string) bool {
	if !ok {
		v.Add(field, constraint, message)
	}
	return ok
}

// Len returns the number of invalid fields recorded so far.
func (v *Validation) Len() int { return len(v.errs) }

// Err returns nil when no field was recorded, otherwise 400 INVALID_INPUT whose
// details.errors lists every recorded field.
func (v *Validation) Err() error {
	if len(v.errs) == 0 {
		return nil
	}
	fields := make([]string, len(v.errs))
	for i, fe := range v.errs {
		fields[i] = fe.Field
	}
	msg := "invalid field " + fields[0]
	if len(fields) > 1 {
		msg = strconv.Itoa(len(fields)) + " invalid fields: " + strings.Join(fields, ", ")
	} else if v.errs[0].Message != "" {
		msg += ": " + v.errs[0].Message
	}
	errs := make([]FieldError, len(v.errs))
	copy(errs, v.errs)
	return &Error{Code: InvalidInput, Message: msg, Details: map[string]any{"errors": errs}}
}

// InvalidField returns 400 INVALID_INPUT for a single field, with details.errors
// naming it.
func InvalidField(field string, constraint *Constraint, message string) *Error {
	var v Validation
	v.Add(field, constraint, message)
	return v.Err().(*Error)
}
