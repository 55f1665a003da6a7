package labels

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ErrInvalidSelector is the category of errors returned by Parse, FromProto,
// NewRequirement and ValidatedSelectorFromSet.
var ErrInvalidSelector = errors.New("invalid label selector")

// Operator is the relation a Requirement checks between a label and its
// values.
type Operator string

// The operators of the selector syntax. The API's matchExpressions use
// In, NotIn, Exists and DoesNotExist under their proto spellings.
const (
	Equals       Operator = "="
	DoubleEquals Operator = "==" // accepted by NewRequirement, stored as Equals
	NotEquals    Operator = "!="
	In           Operator = "in"
	NotIn        Operator = "notin"
	Exists       Operator = "exists"
	DoesNotExist Operator = "!"
)

// Requirement is one ANDed term of a Selector: a key, an operator and, for
// all operators but Exists and DoesNotExist, a non-empty set of values.
// The values are kept sorted and without duplicates.
type Requirement struct {
	key    string
	op     Operator
	values []string
}

// NewRequirement validates and builds a Requirement. Equals, DoubleEquals
// and NotEquals take exactly one value; In and NotIn at least one;
// Exists and DoesNotExist none (see Operator.ValueCount).
func NewRequirement(key string, op Operator, values []string) (Requirement, error) {
	r, err := checkedRequirement(key, string(op), op, values)
	if err != nil {
		return Requirement{}, fmt.Errorf("%w: %w", ErrInvalidSelector, err)
	}
	return r, nil
}

// checkedRequirement validates and builds a requirement whose operator
// its caller spelled as spelling (the API's "In" is In). Its errors name
// the key but not the category.
func checkedRequirement(key, spelling string, op Operator, values []string) (Requirement, error) {
	if err := ValidateKey(key); err != nil {
		return Requirement{}, err
	}
	if why := valuesProblem(spelling, op, len(values)); why != "" {
		return Requirement{}, fmt.Errorf("key %q: %s", key, why)
	}
	for _, v := range values {
		if err := ValidateValue(v); err != nil {
			return Requirement{}, fmt.Errorf("key %q: %w", key, err)
		}
	}
	return newRequirement(key, op, values), nil
}

// ValueCount returns how many values op takes: at least min and, unless
// max is negative, at most max. ok is false for an unknown operator. It is
// the one statement of the rule, for NewRequirement, Parse, FromProto and
// callers that report a violation in their own words.
func (op Operator) ValueCount() (min, max int, ok bool) {
	switch op {
	case Equals, DoubleEquals, NotEquals:
		return 1, 1, true
	case In, NotIn:
		return 1, -1, true
	case Exists, DoesNotExist:
		return 0, 0, true
	}
	return 0, 0, false
}

// valuesProblem checks that op, spelled as its caller wrote it, is known
// and takes n values; it returns why not, or "".
func valuesProblem(spelling string, op Operator, n int) string {
	lo, hi, ok := op.ValueCount()
	switch {
	case !ok:
		return fmt.Sprintf("unknown operator %q", spelling)
	case lo == 1 && hi == 1 && n != 1:
		return fmt.Sprintf("operator '%s' takes exactly one value, got %d", spelling, n)
	case n < lo:
		return fmt.Sprintf("operator '%s' needs a non-empty set of values", spelling)
	case hi == 0 && n > 0:
		return fmt.Sprintf("operator '%s' takes no values, got %d", spelling, n)
	}
	return ""
}

// newRequirement builds an already validated requirement, normalizing the
// operator and copying, sorting and deduplicating the values.
func newRequirement(key string, op Operator, values []string) Requirement {
	if op == DoubleEquals {
		op = Equals
	}
	var vs []string
	if len(values) > 0 {
		vs = slices.Compact(slices.Sorted(slices.Values(values)))
		vs = slices.Clip(vs)
	}
	return Requirement{key: key, op: op, values: vs}
}

// Key returns the label key the requirement tests.
func (r Requirement) Key() string { return r.key }

// Operator returns the requirement's operator; never DoubleEquals.
func (r Requirement) Operator() Operator { return r.op }

// Values returns a sorted copy of the requirement's values.
func (r Requirement) Values() []string { return slices.Clone(r.values) }

// Matches reports whether labels satisfy the requirement. It does not
// allocate.
func (r Requirement) Matches(labels map[string]string) bool {
	v, ok := labels[r.key]
	switch r.op {
	case Equals:
		return ok && v == r.values[0]
	case In:
		return ok && r.has(v)
	case NotEquals:
		return !ok || v != r.values[0]
	case NotIn:
		return !ok || !r.has(v)
	case Exists:
		return ok
	case DoesNotExist:
		return !ok
	}
	return false
}

// has reports whether v is one of the requirement's values. Small sets are
// scanned; larger ones are binary searched. Neither allocates.
func (r Requirement) has(v string) bool {
	if len(r.values) <= 8 {
		return slices.Contains(r.values, v)
	}
	_, found := slices.BinarySearch(r.values, v)
	return found
}

// String returns the requirement in selector syntax.
func (r Requirement) String() string {
	var b strings.Builder
	r.write(&b)
	return b.String()
}

func (r Requirement) write(b *strings.Builder) {
	switch r.op {
	case Exists:
		b.WriteString(r.key)
	case DoesNotExist:
		b.WriteString("!")
		b.WriteString(r.key)
	case Equals, NotEquals:
		b.WriteString(r.key)
		b.WriteString(string(r.op))
		b.WriteString(r.values[0])
	case In, NotIn:
		b.WriteString(r.key)
		b.WriteString(" ")
		b.WriteString(string(r.op))
		b.WriteString(" (")
		if len(r.values) == 1 && r.values[0] == "" {
			// "()" would read back as an empty set; "(,)" is {""}.
			b.WriteString(",")
		}
		for i, v := range r.values {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(v)
		}
		b.WriteString(")")
	}
}

// compareRequirements orders requirements canonically: by key, then by
// operator, then by values.
func compareRequirements(a, b Requirement) int {
	return cmp.Or(
		strings.Compare(a.key, b.key),
		strings.Compare(string(a.op), string(b.op)),
		slices.Compare(a.values, b.values),
	)
}

// Selector is a set of ANDed requirements on labels. The zero value is
// Everything.
type Selector struct {
	reqs    []Requirement // sorted by compareRequirements
	nothing bool
}

// Everything returns the selector that matches all labels, including none.
func Everything() Selector { return Selector{} }

// Nothing returns the selector that matches no labels. It is what a nil
// metav1.LabelSelector means (see FromProto). Its String form is
// "<nothing>", which Parse rejects, so it can never widen to Everything by
// a round trip through a string.
func Nothing() Selector { return Selector{nothing: true} }

// NewSelector returns a selector of the given requirements.
func NewSelector(reqs ...Requirement) Selector {
	return newSelector(slices.Clone(reqs))
}

// newSelector takes ownership of reqs.
func newSelector(reqs []Requirement) Selector {
	if len(reqs) == 0 {
		return Selector{}
	}
	slices.SortFunc(reqs, compareRequirements)
	return Selector{reqs: slices.Clip(reqs)}
}

// Add returns a selector with reqs ANDed to s's requirements. Adding to
// Nothing gives Nothing.
func (s Selector) Add(reqs ...Requirement) Selector {
	if s.nothing {
		return s
	}
	return newSelector(append(slices.Clone(s.reqs), reqs...))
}

// SelectorFromSet returns the selector requiring every key=value of set.
// It does not validate; a nil or empty set gives Everything. Use
// ValidatedSelectorFromSet for input from users.
func SelectorFromSet(set map[string]string) Selector {
	reqs := make([]Requirement, 0, len(set))
	for k, v := range set {
		reqs = append(reqs, Requirement{key: k, op: Equals, values: []string{v}})
	}
	return newSelector(reqs)
}

// ValidatedSelectorFromSet is SelectorFromSet for untrusted input: it
// checks every key and value.
func ValidatedSelectorFromSet(set map[string]string) (Selector, error) {
	reqs := make([]Requirement, 0, len(set))
	for _, k := range slices.Sorted(maps.Keys(set)) {
		r, err := NewRequirement(k, Equals, []string{set[k]})
		if err != nil {
			return Selector{}, err
		}
		reqs = append(reqs, r)
	}
	return newSelector(reqs), nil
}

// Matches reports whether labels satisfy every requirement of s. It does
// not allocate.
func (s Selector) Matches(labels map[string]string) bool {
	if s.nothing {
		return false
	}
	for i := range s.reqs {
		if !s.reqs[i].Matches(labels) {
			return false
		}
	}
	return true
}

// Empty reports whether s has no requirements and so matches everything.
// Nothing is not empty.
func (s Selector) Empty() bool { return !s.nothing && len(s.reqs) == 0 }

// IsNothing reports whether s is Nothing.
func (s Selector) IsNothing() bool { return s.nothing }

// Requirements returns a copy of s's requirements in canonical order
// (sorted by key). It is nil for Everything and Nothing.
func (s Selector) Requirements() []Requirement { return slices.Clone(s.reqs) }

// RequiresExactMatch returns the value v when s requires key=v (through
// "=" or an "in" with a single value), so that a caller can look the key
// up in an index instead of scanning.
func (s Selector) RequiresExactMatch(key string) (string, bool) {
	for _, r := range s.reqs {
		if r.key == key && (r.op == Equals || r.op == In && len(r.values) == 1) {
			return r.values[0], true
		}
	}
	return "", false
}

// String returns s in canonical selector syntax: requirements sorted by
// key, "==" written as "=", set values sorted. Parse(s.String()) gives back
// an equal selector. Everything is "" and Nothing is "<nothing>".
func (s Selector) String() string {
	if s.nothing {
		return "<nothing>"
	}
	var b strings.Builder
	for i, r := range s.reqs {
		if i > 0 {
			b.WriteString(",")
		}
		r.write(&b)
	}
	return b.String()
}
