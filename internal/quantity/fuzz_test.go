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
		strings.Repeat("0", 127) + "1", strings.Repeat("0", 128) + "1", "1n", "0.1n", "-0.5m",
		"1.0000000001Ki", "10Ei", "1e-12", "1000E", "1e27", "0.3333333333333333333333Mi",
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
			t.Fatalf("Parse(%q) = %s printed as %q, which does not parse: %v", s, exact(q), str, err)
		}
		if again.Cmp(q) != 0 {
			t.Fatalf("Parse(%q) = %s; re-parsed from %q = %s", s, exact(q), str, exact(again))
		}
		if again.String() != str {
			t.Fatalf("String not canonical: %q prints %q, which prints %q", s, str, again.String())
		}
		// Arithmetic stays in range or says so.
		if sum, err := q.Add(again); err == nil {
			if back, err := sum.Sub(again); err != nil || back.Cmp(q) != 0 {
				t.Fatalf("%s + %s = %s, minus %s = %s, %v", q, again, sum, again, back, err)
			}
		}
		if diff, err := q.Sub(again); err != nil || !diff.IsZero() {
			t.Fatalf("%s - %s = %s, %v", q, again, diff, err)
		}
	})
}
