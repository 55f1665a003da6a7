package quantity

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, that every error is
// categorized, and that whatever it accepts prints in a canonical form
// that parses back to an equal quantity with the same canonical form.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"0", "-0", "1", "+1", "-1.5", ".5", "5.", "500m", "1000000n", "1k", "1.5Gi", "0.5Ki",
		"1e3", "1E3", "1e-3", "5e-1", "1E", "1Ei", "8Pi", "12Zi", "1e", "1e+", "0.1m",
		"9223372036854775807m", "9223372036854775808m", "0.0009765625Ki", "1e99999999999",
		strings.Repeat("0", 127) + "1", strings.Repeat("0", 128) + "1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		str := q.String()
		again, err := Parse(str)
		if err != nil {
			t.Fatalf("Parse(%q) = %d milli printed as %q, which does not parse: %v", s, q.MilliValue(), str, err)
		}
		if again.Cmp(q) != 0 {
			t.Fatalf("Parse(%q) = %dm; re-parsed from %q = %dm", s, q.MilliValue(), str, again.MilliValue())
		}
		if again.String() != str {
			t.Fatalf("String not canonical: %q prints %q, which prints %q", s, str, again.String())
		}
		// Arithmetic stays in range or says so.
		if sum, err := q.Add(again); err == nil && sum.MilliValue() != 2*q.MilliValue() {
			t.Fatalf("%s + %s = %s", q, again, sum)
		}
		if diff, err := q.Sub(again); err != nil || !diff.IsZero() {
			t.Fatalf("%s - %s = %s, %v", q, again, diff, err)
		}
	})
}
