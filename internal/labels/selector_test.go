package labels

import (
	"errors"
	"fmt"
	"slices"
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

func TestMatches(t *testing.T) {
	web := map[string]string{"app": "web", "tier": "fe", "empty": ""}
	many := "v in (a,b,c,d,e,f,g,h,i,j,k)" // larger than the linear-scan cutoff
	for _, tc := range []struct {
		name, sel string
		labels    map[string]string
		want      bool
	}{
		{"everything matches nil labels", "", nil, true},
		{"everything matches labels", "", web, true},
		{"equals", "app=web", web, true},
		{"equals other value", "app=db", web, false},
		{"equals missing key", "zone=a", web, false},
		{"equals empty value", "empty=", web, true},
		{"equals empty value needs the key", "zone=", web, false},
		{"not equals other value", "app!=db", web, true},
		{"not equals same value", "app!=web", web, false},
		{"not equals missing key", "zone!=a", web, true},
		{"not equals empty value", "empty!=", web, false},
		{"in", "tier in (be,fe)", web, true},
		{"in other values", "tier in (be,db)", web, false},
		{"in missing key", "zone in (a,b)", web, false},
		{"in with empty value", "empty in (,x)", web, true},
		{"notin", "tier notin (be,db)", web, true},
		{"notin listed value", "tier notin (be,fe)", web, false},
		{"notin missing key", "zone notin (a)", web, true},
		{"exists", "app", web, true},
		{"exists empty value", "empty", web, true},
		{"exists missing", "zone", web, false},
		{"does not exist", "!zone", web, true},
		{"does not exist present", "!app", web, false},
		{"does not exist nil labels", "!app", nil, true},
		{"all must hold", "app=web,tier=fe,!zone", web, true},
		{"one fails", "app=web,tier=be", web, false},
		{"contradiction", "app,!app", web, false},
		{"large set hit", many, map[string]string{"v": "k"}, true},
		{"large set hit first", many, map[string]string{"v": "a"}, true},
		{"large set miss", many, map[string]string{"v": "z"}, false},
		{"large notin set miss", strings.Replace(many, " in ", " notin ", 1), map[string]string{"v": "z"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustParse(t, tc.sel).Matches(tc.labels); got != tc.want {
				t.Fatalf("Parse(%q).Matches(%v) = %v, want %v", tc.sel, tc.labels, got, tc.want)
			}
		})
	}
}

func TestEverythingAndNothing(t *testing.T) {
	labels := map[string]string{"a": "b"}
	for _, tc := range []struct {
		name                string
		sel                 Selector
		empty, nothing      bool
		matches, matchesNil bool
		str                 string
	}{
		{"everything", Everything(), true, false, true, true, ""},
		{"zero value is everything", Selector{}, true, false, true, true, ""},
		{"nothing", Nothing(), false, true, false, false, "<nothing>"},
		{"nothing plus requirement is nothing", Nothing().Add(newRequirement("a", Exists, nil)), false, true, false, false, "<nothing>"},
		{"parsed", mustParse(t, "a=b"), false, false, true, false, "a=b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.sel.Empty(); got != tc.empty {
				t.Errorf("Empty() = %v, want %v", got, tc.empty)
			}
			if got := tc.sel.IsNothing(); got != tc.nothing {
				t.Errorf("IsNothing() = %v, want %v", got, tc.nothing)
			}
			if got := tc.sel.Matches(labels); got != tc.matches {
				t.Errorf("Matches(%v) = %v, want %v", labels, got, tc.matches)
			}
			if got := tc.sel.Matches(nil); got != tc.matchesNil {
				t.Errorf("Matches(nil) = %v, want %v", got, tc.matchesNil)
			}
			if got := tc.sel.String(); got != tc.str {
				t.Errorf("String() = %q, want %q", got, tc.str)
			}
		})
	}
}

func TestRequiresExactMatch(t *testing.T) {
	for _, tc := range []struct {
		name, sel, key string
		want           string
		ok             bool
	}{
		{"equals", "app=web,tier=fe", "tier", "fe", true},
		{"double equals", "app==web", "app", "web", true},
		{"empty value", "app=", "app", "", true},
		{"in with one value", "app in (web)", "app", "web", true},
		{"in with two values", "app in (web,db)", "app", "", false},
		{"not equals", "app!=web", "app", "", false},
		{"exists", "app", "app", "", false},
		{"other key", "app=web", "tier", "", false},
		{"everything", "", "app", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := mustParse(t, tc.sel).RequiresExactMatch(tc.key)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("RequiresExactMatch(%q) = %q, %v; want %q, %v", tc.key, got, ok, tc.want, tc.ok)
			}
		})
	}
	if _, ok := Nothing().RequiresExactMatch("a"); ok {
		t.Fatal("Nothing().RequiresExactMatch reported a match")
	}
}

func TestRequirements(t *testing.T) {
	sel := mustParse(t, "z notin (b,a),a==1,!m")
	var got []string
	for _, r := range sel.Requirements() {
		got = append(got, fmt.Sprintf("%s|%s|%v", r.Key(), r.Operator(), r.Values()))
	}
	want := []string{"a|=|[1]", "m|!|[]", "z|notin|[a b]"}
	if !slices.Equal(got, want) {
		t.Fatalf("Requirements() = %q, want %q", got, want)
	}
	// Callers cannot change the selector through what it hands out.
	reqs := sel.Requirements()
	reqs[0] = newRequirement("x", Exists, nil)
	reqs[2].Values()[0] = "changed"
	if sel.String() != "a=1,!m,z notin (a,b)" {
		t.Fatalf("selector changed through Requirements(): %q", sel.String())
	}
	if Everything().Requirements() != nil || Nothing().Requirements() != nil {
		t.Fatal("Everything and Nothing should have no requirements")
	}
}

func TestNewRequirement(t *testing.T) {
	for _, tc := range []struct {
		name    string
		key     string
		op      Operator
		values  []string
		want    string // String() of the requirement, or the error substring
		wantErr bool
	}{
		{"equals", "a", Equals, []string{"b"}, "a=b", false},
		{"double equals normalized", "a", DoubleEquals, []string{"b"}, "a=b", false},
		{"not equals", "a", NotEquals, []string{""}, "a!=", false},
		{"in sorts and dedups", "a", In, []string{"c", "b", "c"}, "a in (b,c)", false},
		{"notin", "a", NotIn, []string{"x"}, "a notin (x)", false},
		{"in only empty", "a", In, []string{""}, "a in (,)", false},
		{"exists", "a", Exists, nil, "a", false},
		{"does not exist", "a", DoesNotExist, nil, "!a", false},
		{"equals needs one value", "a", Equals, []string{"b", "c"}, `invalid label selector: key "a": operator '=' takes exactly one value, got 2`, true},
		{"not equals needs a value", "a", NotEquals, nil, `operator '!=' takes exactly one value, got 0`, true},
		{"in needs values", "a", In, nil, `invalid label selector: key "a": operator 'in' needs a non-empty set of values`, true},
		{"notin needs values", "a", NotIn, []string{}, `operator 'notin' needs a non-empty set of values`, true},
		{"exists takes no values", "a", Exists, []string{"x"}, `operator 'exists' takes no values, got 1`, true},
		{"does not exist takes no values", "a", DoesNotExist, []string{"x"}, `operator '!' takes no values, got 1`, true},
		{"unknown operator", "a", Operator("gt"), []string{"1"}, `unknown operator "gt"`, true},
		{"bad key", "a b", Exists, nil, `invalid label selector: invalid label key "a b"`, true},
		{"bad value", "a", In, []string{"ok", "not ok"}, `key "a": invalid label value "not ok"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRequirement(tc.key, tc.op, tc.values)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalidSelector) {
					t.Fatalf("NewRequirement error = %v, want one containing %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewRequirement: %v", err)
			}
			if r.String() != tc.want {
				t.Fatalf("String() = %q, want %q", r.String(), tc.want)
			}
		})
	}
}

func TestNewSelectorAndAdd(t *testing.T) {
	a, _ := NewRequirement("a", Equals, []string{"1"})
	b, _ := NewRequirement("b", Exists, nil)
	sel := NewSelector(b)
	both := sel.Add(a)
	if sel.String() != "b" {
		t.Fatalf("Add changed the receiver: %q", sel.String())
	}
	if both.String() != "a=1,b" {
		t.Fatalf("Add = %q, want %q", both.String(), "a=1,b")
	}
	if !NewSelector().Empty() {
		t.Fatal("NewSelector() should be empty")
	}
}

func TestSelectorFromSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  map[string]string
		want string
	}{
		{"nil", nil, ""},
		{"empty", map[string]string{}, ""},
		{"sorted", map[string]string{"tier": "fe", "app": "web", "e": ""}, "app=web,e=,tier=fe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel := SelectorFromSet(tc.set)
			if sel.String() != tc.want {
				t.Fatalf("SelectorFromSet(%v) = %q, want %q", tc.set, sel.String(), tc.want)
			}
			if !sel.Matches(tc.set) {
				t.Fatalf("SelectorFromSet(%v) does not match its own set", tc.set)
			}
			v, err := ValidatedSelectorFromSet(tc.set)
			if err != nil || v.String() != tc.want {
				t.Fatalf("ValidatedSelectorFromSet(%v) = %q, %v", tc.set, v.String(), err)
			}
		})
	}
	if _, err := ValidatedSelectorFromSet(map[string]string{"ok": "1", "bad key": "x"}); err == nil ||
		!strings.Contains(err.Error(), `invalid label key "bad key"`) {
		t.Fatalf("ValidatedSelectorFromSet with a bad key: err = %v", err)
	}
}

func TestMatchesDoesNotAllocate(t *testing.T) {
	sel := mustParse(t, "app=web,tier in (fe,be),env notin (dev,test),!canary,zone,"+
		"v in (a,b,c,d,e,f,g,h,i,j,k)")
	labels := map[string]string{"app": "web", "tier": "fe", "env": "prod", "zone": "z1", "v": "k"}
	if !sel.Matches(labels) {
		t.Fatal("selector should match")
	}
	if n := testing.AllocsPerRun(100, func() { sel.Matches(labels) }); n != 0 {
		t.Fatalf("Matches allocates %v times per call, want 0", n)
	}
}

func BenchmarkMatches(b *testing.B) {
	labels := map[string]string{
		"app": "web", "tier": "frontend", "env": "prod", "zone": "eu-1",
		"app.kubernetes.io/version": "1.2.3", "pod-template-hash": "7d9f8c6b5",
	}
	for _, bc := range []struct{ name, sel string }{
		{"equals", "app=web"},
		{"mixed", "app=web,tier in (frontend,backend),env notin (dev,test),!canary"},
		{"large set", "zone in (a,b,c,d,e,f,g,h,i,j,k,eu-1)"},
		{"miss first", "app=db,tier in (frontend,backend)"},
	} {
		sel := mustParse(b, bc.sel)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sel.Matches(labels)
			}
		})
	}
}

func TestOperatorValueCount(t *testing.T) {
	for _, tc := range []struct {
		op       Operator
		min, max int
		ok       bool
	}{
		{Equals, 1, 1, true},
		{DoubleEquals, 1, 1, true},
		{NotEquals, 1, 1, true},
		{In, 1, -1, true},
		{NotIn, 1, -1, true},
		{Exists, 0, 0, true},
		{DoesNotExist, 0, 0, true},
		{Operator("gt"), 0, 0, false},
	} {
		t.Run(string(tc.op), func(t *testing.T) {
			lo, hi, ok := tc.op.ValueCount()
			if lo != tc.min || hi != tc.max || ok != tc.ok {
				t.Fatalf("%q.ValueCount() = %d, %d, %v; want %d, %d, %v", tc.op, lo, hi, ok, tc.min, tc.max, tc.ok)
			}
		})
	}
}
