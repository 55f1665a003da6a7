package labels

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestValidateKey(t *testing.T) {
	for _, tc := range []struct {
		name, key, err string // err "" means valid
	}{
		{"simple", "app", ""},
		{"one char", "a", ""},
		{"mixed case and symbols", "My_App-1.x", ""},
		{"prefixed", "app.kubernetes.io/name", ""},
		{"prefix with dashes", "my-co.example/x", ""},
		{"63 char name", strings.Repeat("n", 63), ""},
		{"253 char prefix", strings.Repeat(strings.Repeat("p", 62)+".", 4)[:252] + "p/x", ""},
		{"empty", "", "name part must not be empty"},
		{"64 char name", strings.Repeat("n", 64), "name part must be no more than 63 characters"},
		{"254 char prefix", strings.Repeat("p", 254) + "/x", "prefix part must be no more than 253 characters"},
		{"ends with dot", "app.", "name part must consist of"},
		{"starts with underscore", "_app", "name part must consist of"},
		{"space", "a b", "name part must consist of"},
		{"non ascii", "äpp", "name part must consist of"},
		{"empty prefix", "/a", "prefix part must not be empty"},
		{"empty name", "a/", "name part must not be empty"},
		{"uppercase prefix", "A.io/a", "prefix part must be a lowercase RFC 1123 subdomain"},
		{"prefix with empty part", "a..io/a", "prefix part must be a lowercase"},
		{"prefix part ends with dash", "a-.io/a", "prefix part must be a lowercase"},
		{"underscore in prefix", "a_b.io/a", "prefix part must be a lowercase"},
		{"two slashes", "a/b/c", "must be a name with an optional prefix and one '/'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateKey(tc.key)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("ValidateKey(%q) = %v, want nil", tc.key, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("ValidateKey(%q) = %v, want error containing %q", tc.key, err, tc.err)
			}
			if !errors.Is(err, ErrInvalidLabel) || !strings.HasPrefix(err.Error(), "invalid label key ") {
				t.Fatalf("ValidateKey(%q) = %v, want an ErrInvalidLabel naming the key", tc.key, err)
			}
		})
	}
}

func TestValidateValue(t *testing.T) {
	for _, tc := range []struct {
		name, value, err string
	}{
		{"empty", "", ""},
		{"simple", "web", ""},
		{"symbols inside", "1.2_3-rc", ""},
		{"63 chars", strings.Repeat("v", 63), ""},
		{"64 chars", strings.Repeat("v", 64), "must be no more than 63 characters"},
		{"slash", "a/b", "must be empty or consist of"},
		{"starts with dash", "-a", "must be empty or consist of"},
		{"ends with dot", "a.", "must be empty or consist of"},
		{"space", "a b", "must be empty or consist of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateValue(tc.value)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("ValidateValue(%q) = %v, want nil", tc.value, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrInvalidLabel) {
				t.Fatalf("ValidateValue(%q) = %v, want ErrInvalidLabel containing %q", tc.value, err, tc.err)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	long := strings.Repeat("-", 64)
	for _, tc := range []struct {
		name  string
		check func(string) []Fault
		in    string
		want  []Fault
	}{
		{"valid key", KeyFaults, "app.kubernetes.io/name", nil},
		{"empty key", KeyFaults, "", []Fault{NameEmpty}},
		{"empty prefix", KeyFaults, "/a", []Fault{PrefixEmpty}},
		{"both parts empty", KeyFaults, "/", []Fault{PrefixEmpty, NameEmpty}},
		{"two slashes only", KeyFaults, "A/b/-c", []Fault{KeySlashes}},
		{"name long and malformed", KeyFaults, long, []Fault{NameTooLong, NameChars}},
		{"prefix and name malformed", KeyFaults, "A.io/-a", []Fault{PrefixChars, NameChars}},
		{"prefix long and malformed", KeyFaults, strings.Repeat("P", 254) + "/x", []Fault{PrefixTooLong, PrefixChars}},
		{"empty value", ValueFaults, "", nil},
		{"value long and malformed", ValueFaults, long, []Fault{ValueTooLong, ValueChars}},
		{"value malformed", ValueFaults, "a b", []Fault{ValueChars}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.check(tc.in); !slices.Equal(got, tc.want) {
				t.Fatalf("faults of %q = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestValidateKeyNamesEveryFault(t *testing.T) {
	err := ValidateKey("/")
	want := `invalid label key "/": prefix part must not be empty; name part must not be empty`
	if err == nil || err.Error() != want {
		t.Fatalf("ValidateKey(%q) = %v, want %s", "/", err, want)
	}
}

func TestFaultsOfValidInputDoNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() {
		KeyFaults("app.kubernetes.io/name")
		ValueFaults("web-1.2")
	}); n != 0 {
		t.Fatalf("KeyFaults and ValueFaults allocate %v times for valid input, want 0", n)
	}
}
