package fields

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics and that whatever it accepts
// prints in a canonical form that parses back to an equal selector.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "a=b", "a==b", "a!=b", "a=", "a!=", `a=x\,y\=z\\`, "a=b,c!=d", " a = b ",
		"a", "=b", "a=b=c", `a=\`, `a=b,c=\`, // a trailing '\' once ended the loop early
		`a=\x`, ",", "a=!b", "metadata.labels[x/y]=z",
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
			t.Fatalf("Parse(%q) = %+v; re-parsed from %q = %+v", s, sel, str, again)
		}
		set := Set{}
		for _, r := range sel.Requirements() {
			set[r.Field] = r.Value
		}
		sel.Matches(set)
	})
}
