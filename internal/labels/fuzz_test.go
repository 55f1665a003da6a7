package labels

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics and that whatever it accepts
// prints in a canonical form that parses back to an equal selector.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "a", "!a", "a=b", "a==b", "a!=b", "a=", "a in (x,y)", "a notin (x, y)",
		"a in (,)", "in in (notin)", "app.kubernetes.io/name=web,tier!=db",
		"a in ()", "a b", "a=b=c", "(", "!", "a,,b", " a = b , ! c ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := Parse(s)
		if err != nil {
			return
		}
		if sel.Empty() != (strings.TrimSpace(s) == "") {
			t.Fatalf("Parse(%q) = %q: only a blank selector may be empty", s, sel.String())
		}
		str := sel.String()
		again, err := Parse(str)
		if err != nil {
			t.Fatalf("Parse(%q) gave %q, which does not parse: %v", s, str, err)
		}
		if !reflect.DeepEqual(sel, again) {
			t.Fatalf("Parse(%q) = %#v; re-parsed from %q = %#v", s, sel, str, again)
		}
		if again.String() != str {
			t.Fatalf("String not canonical: %q then %q", str, again.String())
		}
		for _, r := range sel.Requirements() {
			labels := map[string]string{r.Key(): ""}
			if vs := r.Values(); len(vs) > 0 {
				labels[r.Key()] = vs[0]
			}
			sel.Matches(labels)
		}
	})
}
