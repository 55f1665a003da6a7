package labels

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string // want is the canonical String
	}{
		{"empty is everything", "", ""},
		{"blank is everything", " \t\n", ""},
		{"equals", "app=web", "app=web"},
		{"double equals prints as equals", "app==web", "app=web"},
		{"not equals", "app!=web", "app!=web"},
		{"empty value", "app=", "app="},
		{"empty value before comma", "app=,tier=fe", "app=,tier=fe"},
		{"empty not-equals value", "app!=", "app!="},
		{"in", "env in (prod,dev)", "env in (dev,prod)"},
		{"in without spaces", "env in(prod)", "env in (prod)"},
		{"notin", "env notin (prod, dev)", "env notin (dev,prod)"},
		{"in with duplicates", "env in (a,b,a)", "env in (a,b)"},
		{"in with empty value", "env in (a,)", "env in (,a)"},
		{"in with only empty value", "env in (,)", "env in (,)"},
		{"exists", "canary", "canary"},
		{"does not exist", "!canary", "!canary"},
		{"does not exist with space", "! canary", "!canary"},
		{"prefixed key", "app.kubernetes.io/name=web", "app.kubernetes.io/name=web"},
		{"sorted by key", "z=1,a=2,m", "a=2,m,z=1"},
		{"same key sorted by operator", "a!=x,a=y", "a!=x,a=y"},
		{"whitespace everywhere", "  a = b ,  c  in  ( d , e ) , ! f ", "a=b,c in (d,e),!f"},
		{"in and notin as keys", "in in (notin),notin", "in in (notin),notin"},
		{"in as value", "a=in", "a=in"},
		{"value with dots dashes underscores", "v=1.2_3-rc", "v=1.2_3-rc"},
		{"63 char value", "a=" + strings.Repeat("x", 63), "a=" + strings.Repeat("x", 63)},
		{"all operators", "a=1,b!=2,c in (3),d notin (4),e,!f", "a=1,b!=2,c in (3),d notin (4),e,!f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if got := sel.String(); got != tc.want {
				t.Fatalf("Parse(%q).String() = %q, want %q", tc.in, got, tc.want)
			}
			again, err := Parse(sel.String())
			if err != nil {
				t.Fatalf("re-Parse(%q): %v", sel.String(), err)
			}
			if again.String() != tc.want {
				t.Fatalf("round trip = %q, want %q", again.String(), tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"open paren first", "(a)", `invalid label selector "(a)": at offset 0: found '(', expected a label key`},
		{"operator first", "=a", `at offset 0: found '=', expected a label key`},
		{"leading comma", ",a", `at offset 0: found ',', expected a label key`},
		{"trailing comma", "a=b,", `at offset 4: found end of input, expected a label key`},
		{"double comma", "a,,b", `at offset 2: found ',', expected a label key`},
		{"bang alone", "!", `at offset 1: found end of input, expected a label key`},
		{"bang bang", "!!a", `at offset 1: found '!', expected a label key`},
		{"bang with operator", "!a=b", `at offset 2: found '=', expected ',' or end of input`},
		{"two words", "a b", `at offset 2: found 'b', expected an operator ('=', '==', '!=', 'in', 'notin'), ',' or end of input`},
		{"stray bang", "a!b", `at offset 1: found '!', expected an operator`},
		{"in without set", "a in x", `invalid label selector "a in x": at offset 5: found 'x', expected '('`},
		{"in at end", "a in", `at offset 4: found end of input, expected '('`},
		{"notin without set", "a notin", `at offset 7: found end of input, expected '('`},
		{"empty set", "a in ()", `at offset 6: operator 'in' needs a non-empty set of values`},
		{"empty notin set", "a notin ( )", `at offset 10: operator 'notin' needs a non-empty set of values`},
		{"unclosed set", "a in (x", `at offset 7: found end of input, expected ',' or ')'`},
		{"set with space separated values", "a in (x y)", `at offset 8: found 'y', expected ',' or ')'`},
		{"nested paren", "a in ((x))", `at offset 6: found '(', expected ',' or ')'`},
		{"operator after value", "a=b=c", `at offset 3: found '=', expected ',' or end of input`},
		{"value then word", "a=b c", `at offset 4: found 'c', expected ',' or end of input`},
		{"paren as value", "a=(b)", `at offset 2: found '(', expected a label value, ',' or end of input`},
		{"bad key chars", "a$=b", `at offset 0: invalid label key "a$": name part must consist of alphanumeric characters`},
		{"key starts with dash", "-a", `invalid label key "-a": name part must consist of`},
		{"key too long", strings.Repeat("k", 64) + "=v", `name part must be no more than 63 characters`},
		{"empty prefix", "/a=b", `invalid label key "/a": prefix part must not be empty`},
		{"uppercase prefix", "Example.com/a=b", `prefix part must be a lowercase RFC 1123 subdomain`},
		{"two slashes", "a/b/c", `invalid label key "a/b/c": must be a name with an optional prefix and one '/'`},
		{"empty name", "example.com/", `name part must not be empty`},
		{"bad value", "a=b$", `at offset 2: invalid label value "b$": must be empty or consist of`},
		{"value too long", "a=" + strings.Repeat("v", 64), `invalid label value "` + strings.Repeat("v", 64) + `": must be no more than 63 characters`},
		{"bad value in set", "a in (b,-c)", `at offset 8: invalid label value "-c"`},
		{"nothing is not parseable", "<nothing>", `invalid label key "<nothing>"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %q, want error containing %q", tc.in, sel, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%q) error:\n  %v\nwant it to contain:\n  %s", tc.in, err, tc.want)
			}
			if !errors.Is(err, ErrInvalidSelector) {
				t.Fatalf("Parse(%q) error %v does not wrap ErrInvalidSelector", tc.in, err)
			}
		})
	}
}

func TestParseKeyErrorsWrapInvalidLabel(t *testing.T) {
	_, err := Parse("a=b$")
	if !errors.Is(err, ErrInvalidLabel) || !errors.Is(err, ErrInvalidSelector) {
		t.Fatalf("error %v should wrap both ErrInvalidLabel and ErrInvalidSelector", err)
	}
}
