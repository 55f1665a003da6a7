package validation

import (
	"regexp"
	"testing"
)

// FuzzNameChecksMatchTheirPatterns keeps the byte loops equal to the
// Kubernetes patterns they replace.
func FuzzNameChecksMatchTheirPatterns(f *testing.F) {
	for _, s := range []string{"", "a", "a-b", "-a", "a-", "a.b", "a..b", ".a", "a.", "A", "a_b", "key.name", "KEY_NAME", "x.-y", "1.2.3"} {
		f.Add(s)
	}
	label := regexp.MustCompile("^" + dns1123LabelFmt + "$")
	subdomain := regexp.MustCompile("^" + dns1123SubdomainFmt + "$")
	key := regexp.MustCompile("^" + configMapKeyFmt + "$")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isLabelChars(s), label.MatchString(s); got != want {
			t.Errorf("isLabelChars(%q) = %v, pattern says %v", s, got, want)
		}
		if got, want := isSubdomainChars(s), subdomain.MatchString(s); got != want {
			t.Errorf("isSubdomainChars(%q) = %v, pattern says %v", s, got, want)
		}
		if got, want := isConfigKeyChars(s), key.MatchString(s); got != want {
			t.Errorf("isConfigKeyChars(%q) = %v, pattern says %v", s, got, want)
		}
	})
}
