package fields

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func mustParse(t testing.TB, s string) Selector {
	t.Helper()
	sel, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return sel
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []Requirement
		str      string // canonical String
	}{
		{"empty is everything", "", nil, ""},
		{"blank is everything", "  \t", nil, ""},
		{"equals", "metadata.name=web", []Requirement{{"metadata.name", Equals, "web"}}, "metadata.name=web"},
		{"double equals", "metadata.name==web", []Requirement{{"metadata.name", Equals, "web"}}, "metadata.name=web"},
		{"not equals", "status.phase!=Running", []Requirement{{"status.phase", NotEquals, "Running"}}, "status.phase!=Running"},
		{"empty value", "spec.nodeName=", []Requirement{{"spec.nodeName", Equals, ""}}, "spec.nodeName="},
		{"empty not-equals value", "spec.nodeName!=", []Requirement{{"spec.nodeName", NotEquals, ""}}, "spec.nodeName!="},
		{"empty double-equals value", "a==", []Requirement{{"a", Equals, ""}}, "a="},
		{"several sorted", "status.phase!=Failed,metadata.namespace=default",
			[]Requirement{{"metadata.namespace", Equals, "default"}, {"status.phase", NotEquals, "Failed"}},
			"metadata.namespace=default,status.phase!=Failed"},
		{"same field sorted by operator", "a=x,a!=y", []Requirement{{"a", NotEquals, "y"}, {"a", Equals, "x"}}, "a!=y,a=x"},
		{"whitespace trimmed", "  a = b ,  c != d ", []Requirement{{"a", Equals, "b"}, {"c", NotEquals, "d"}}, "a=b,c!=d"},
		{"inner whitespace kept", "a=b c", []Requirement{{"a", Equals, "b c"}}, "a=b c"},
		{"escaped comma", `a=x\,y`, []Requirement{{"a", Equals, "x,y"}}, `a=x\,y`},
		{"escaped equals", `a=x\=y`, []Requirement{{"a", Equals, "x=y"}}, `a=x\=y`},
		{"escaped backslash", `a=x\\y`, []Requirement{{"a", Equals, `x\y`}}, `a=x\\y`},
		{"escaped backslash before comma", `a=x\\,b=y`, []Requirement{{"a", Equals, `x\`}, {"b", Equals, "y"}}, `a=x\\,b=y`},
		{"escaped comma before blank", `a=x\, `, []Requirement{{"a", Equals, "x,"}}, `a=x\,`},
		{"escape only", `a=\,`, []Requirement{{"a", Equals, ","}}, `a=\,`},
		{"bang in value", "a=!b", []Requirement{{"a", Equals, "!b"}}, "a=!b"},
		{"not-equals bang value", "a!=!", []Requirement{{"a", NotEquals, "!"}}, "a!=!"},
		{"field with brackets and slash", "metadata.labels[app.io/name]=web", []Requirement{{"metadata.labels[app.io/name]", Equals, "web"}}, "metadata.labels[app.io/name]=web"},
		{"non ascii value", "a=ünïcode", []Requirement{{"a", Equals, "ünïcode"}}, "a=ünïcode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel := mustParse(t, tc.in)
			if got := sel.Requirements(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Parse(%q).Requirements() = %+v, want %+v", tc.in, got, tc.want)
			}
			if sel.String() != tc.str {
				t.Fatalf("String() = %q, want %q", sel.String(), tc.str)
			}
			if again := mustParse(t, sel.String()); !reflect.DeepEqual(again, sel) {
				t.Fatalf("round trip through %q = %+v, want %+v", sel.String(), again, sel)
			}
			if sel.Empty() != (len(tc.want) == 0) {
				t.Fatalf("Empty() = %v with %d requirements", sel.Empty(), len(tc.want))
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"no operator", "a=b,c", `invalid field selector "a=b,c": at offset 4: "c" has no operator; expected '=', '==' or '!='`},
		{"only a field", "metadata.name", `at offset 0: "metadata.name" has no operator`},
		{"missing field", "=b", `at offset 0: found '=' with no field name before it`},
		{"missing field with not-equals", " != b", `at offset 1: found '!=' with no field name before it`},
		{"leading comma", ",a=b", `at offset 0: empty requirement`},
		{"trailing comma", "a=b,", `at offset 4: empty requirement`},
		{"double comma", "a=b, ,c=d", `at offset 4: empty requirement`},
		{"bad field chars", "spec name=x", `at offset 0: invalid field name "spec name": must consist of ASCII letters, digits`},
		{"bang in field", "a!b=c", `invalid field name "a!b"`},
		{"backslash in field", `a\,b=c`, `invalid field name "a\\,b"`},
		{"unescaped equals", "a=b=c", `at offset 3: field "a": unescaped '=' in value; write it as '\='`},
		{"triple equals", "a===b", `at offset 3: field "a": unescaped '=' in value`},
		{"invalid escape", `a=x\y`, `at offset 3: field "a": invalid escape sequence '\y' in value; only '\\', '\,' and '\=' are allowed`},
		{"lone backslash", `a=x\`, `at offset 3: field "a": value ends in a lone '\'`},
		{"lone backslash in last term", `a=b,c=\`, `at offset 6: field "c": value ends in a lone '\'`},
		{"lone backslash before space", `a=x\ `, `field "a": invalid escape sequence '\ '`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %q, want error containing %q", tc.in, sel.String(), tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalidSelector) {
				t.Fatalf("Parse(%q) error:\n  %v\nwant ErrInvalidSelector containing:\n  %s", tc.in, err, tc.want)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	pod := Set{"metadata.name": "web-1", "metadata.namespace": "default", "spec.nodeName": "", "status.phase": "Running", "odd": `a,b=c\`}
	for _, tc := range []struct {
		name, sel string
		want      bool
	}{
		{"everything", "", true},
		{"equals", "metadata.name=web-1", true},
		{"equals other", "metadata.name=web-2", false},
		{"not equals", "status.phase!=Failed", true},
		{"not equals same", "status.phase!=Running", false},
		{"empty value matches empty field", "spec.nodeName=", true},
		{"empty value matches missing field", "spec.hostname=", true},
		{"not-equals empty on empty field", "spec.nodeName!=", false},
		{"missing field not equal to value", "spec.hostname!=x", true},
		{"missing field not equal value", "spec.hostname=x", false},
		{"escaped value", `odd=a\,b\=c\\`, true},
		{"all must hold", "metadata.namespace=default,status.phase=Running", true},
		{"one fails", "metadata.namespace=default,status.phase=Pending", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel := mustParse(t, tc.sel)
			if got := sel.Matches(pod); got != tc.want {
				t.Fatalf("Parse(%q).Matches = %v, want %v", tc.sel, got, tc.want)
			}
			get := func(f string) (string, bool) { v, ok := pod[f]; return v, ok }
			if got := sel.MatchesFunc(get); got != tc.want {
				t.Fatalf("Parse(%q).MatchesFunc = %v, want %v", tc.sel, got, tc.want)
			}
		})
	}
}

func TestRequiresExactMatch(t *testing.T) {
	for _, tc := range []struct {
		name, sel, field, want string
		ok                     bool
	}{
		{"equals", "spec.nodeName=n1,status.phase=Running", "spec.nodeName", "n1", true},
		{"empty value", "spec.nodeName=", "spec.nodeName", "", true},
		{"not equals", "spec.nodeName!=n1", "spec.nodeName", "", false},
		{"other field", "status.phase=Running", "spec.nodeName", "", false},
		{"everything", "", "spec.nodeName", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := mustParse(t, tc.sel).RequiresExactMatch(tc.field)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("RequiresExactMatch(%q) = %q, %v; want %q, %v", tc.field, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	podFields := []string{"status.phase", "spec.nodeName", "metadata.namespace", "metadata.name"}
	for _, tc := range []struct {
		name, sel string
		allowed   []string
		want      string // "" means valid
	}{
		{"everything", "", nil, ""},
		{"allowed", "spec.nodeName=n1,metadata.name!=x", podFields, ""},
		{"unknown", "metadata.name=x,spec.foo=bar", podFields,
			`invalid field selector "spec.foo": field not supported for pods; supported: metadata.name, metadata.namespace, spec.nodeName, status.phase`},
		{"none supported", "metadata.name=x", nil, `invalid field selector "metadata.name": field not supported for pods; supported: none`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := mustParse(t, tc.sel).Validate("pods", tc.allowed)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalidSelector) {
				t.Fatalf("Validate error:\n  %v\nwant:\n  %s", err, tc.want)
			}
		})
	}
	if podFields[0] != "status.phase" {
		t.Fatal("Validate reordered the caller's slice")
	}
}

func TestConstructors(t *testing.T) {
	if s := Everything(); !s.Empty() || s.String() != "" || !s.Matches(nil) {
		t.Fatal("Everything should be empty, print as \"\" and match anything")
	}
	if s := (Selector{}); !s.Empty() {
		t.Fatal("the zero Selector should be Everything")
	}
	s := SelectorFromSet(Set{"status.phase": "Running", "metadata.name": "a,b"})
	if s.String() != `metadata.name=a\,b,status.phase=Running` {
		t.Fatalf("SelectorFromSet String = %q", s.String())
	}
	if !SelectorFromSet(nil).Empty() {
		t.Fatal("SelectorFromSet(nil) should be Everything")
	}
	if got := OneTermEqualSelector("spec.nodeName", "n1").String(); got != "spec.nodeName=n1" {
		t.Fatalf("OneTermEqualSelector = %q", got)
	}
	reqs := s.Requirements()
	reqs[0].Value = "changed"
	if s.String() != `metadata.name=a\,b,status.phase=Running` {
		t.Fatal("selector changed through Requirements()")
	}
}

func TestEscapeValue(t *testing.T) {
	for in, want := range map[string]string{
		"":        "",
		"plain":   "plain",
		`a\b`:     `a\\b`,
		"a,b=c":   `a\,b\=c`,
		`\,=`:     `\\\,\=`,
		"spaces ": "spaces ",
	} {
		if got := EscapeValue(in); got != want {
			t.Errorf("EscapeValue(%q) = %q, want %q", in, got, want)
		}
	}
}
