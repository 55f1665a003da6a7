package fields

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrInvalidSelector is the category of errors returned by Parse and
// Selector.Validate.
var ErrInvalidSelector = errors.New("invalid field selector")

// Operator is the relation a Requirement checks.
type Operator string

// The field selector operators. Parse reads "==" as Equals.
const (
	Equals    Operator = "="
	NotEquals Operator = "!="
)

// Requirement is one ANDed term of a Selector.
type Requirement struct {
	Field    string
	Operator Operator
	Value    string // unescaped
}

// String returns the requirement in selector syntax, escaping the value.
func (r Requirement) String() string {
	return r.Field + string(r.Operator) + EscapeValue(r.Value)
}

// matches reports whether a field value v satisfies r.
func (r Requirement) matches(v string) bool {
	if r.Operator == NotEquals {
		return v != r.Value
	}
	return v == r.Value
}

func compareRequirements(a, b Requirement) int {
	return cmp.Or(
		strings.Compare(a.Field, b.Field),
		strings.Compare(string(a.Operator), string(b.Operator)),
		strings.Compare(a.Value, b.Value),
	)
}

// Set is the field values of one object, by field name.
type Set map[string]string

// Selector is a set of ANDed requirements on fields. The zero value is
// Everything.
type Selector struct {
	reqs []Requirement // sorted by compareRequirements
}

// Everything returns the selector that matches every object.
func Everything() Selector { return Selector{} }

// SelectorFromSet returns the selector requiring field=value for every
// entry of set. A nil or empty set gives Everything. Field names are not
// checked; String round-trips through Parse only for valid ones.
func SelectorFromSet(set Set) Selector {
	reqs := make([]Requirement, 0, len(set))
	for f, v := range set {
		reqs = append(reqs, Requirement{Field: f, Operator: Equals, Value: v})
	}
	return newSelector(reqs)
}

// OneTermEqualSelector returns the selector field=value.
func OneTermEqualSelector(field, value string) Selector {
	return Selector{reqs: []Requirement{{Field: field, Operator: Equals, Value: value}}}
}

// newSelector takes ownership of reqs.
func newSelector(reqs []Requirement) Selector {
	if len(reqs) == 0 {
		return Selector{}
	}
	slices.SortFunc(reqs, compareRequirements)
	return Selector{reqs: slices.Clip(reqs)}
}

// Matches reports whether the field values in set satisfy every
// requirement. A field missing from set reads as "".
func (s Selector) Matches(set Set) bool {
	for _, r := range s.reqs {
		if !r.matches(set[r.Field]) {
			return false
		}
	}
	return true
}

// MatchesFunc is Matches for callers that read fields from an object on
// demand instead of building a Set. A field for which get reports false
// reads as "".
func (s Selector) MatchesFunc(get func(field string) (string, bool)) bool {
	for _, r := range s.reqs {
		v, _ := get(r.Field)
		if !r.matches(v) {
			return false
		}
	}
	return true
}

// Empty reports whether s has no requirements and so matches everything.
func (s Selector) Empty() bool { return len(s.reqs) == 0 }

// Requirements returns a copy of s's requirements sorted by field.
func (s Selector) Requirements() []Requirement { return slices.Clone(s.reqs) }

// RequiresExactMatch returns v when s requires field=v, so that a caller
// can use an index on field.
func (s Selector) RequiresExactMatch(field string) (string, bool) {
	for _, r := range s.reqs {
		if r.Field == field && r.Operator == Equals {
			return r.Value, true
		}
	}
	return "", false
}

// String returns s in canonical syntax: requirements sorted by field, "=="
// written as "=", values escaped. Parse(s.String()) gives back an equal
// selector when s came from Parse. Everything is "".
func (s Selector) String() string {
	var b strings.Builder
	for i, r := range s.reqs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(r.Field)
		b.WriteString(string(r.Operator))
		writeEscaped(&b, r.Value)
	}
	return b.String()
}

// Validate checks that s uses only fields in allowed, the fields resource
// (a plural name such as "pods", used in the message) supports. The error
// names the first unsupported field and lists the supported ones:
//
//	invalid field selector "spec.foo": field not supported for pods; supported: metadata.name, metadata.namespace
func (s Selector) Validate(resource string, allowed []string) error {
	for _, r := range s.reqs {
		if !slices.Contains(allowed, r.Field) {
			supported := "none"
			if len(allowed) > 0 {
				supported = strings.Join(slices.Sorted(slices.Values(allowed)), ", ")
			}
			return fmt.Errorf("%w %q: field not supported for %s; supported: %s",
				ErrInvalidSelector, r.Field, resource, supported)
		}
	}
	return nil
}

// EscapeValue escapes '\', ',' and '=' in a value for use in selector
// syntax.
func EscapeValue(v string) string {
	if !strings.ContainsAny(v, `\,=`) {
		return v
	}
	var b strings.Builder
	writeEscaped(&b, v)
	return b.String()
}

func writeEscaped(b *strings.Builder, v string) {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\', ',', '=':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
}
