package job

import (
	"maps"
	"slices"
	"testing"
)

// TestFinalizerExpectations: uids per Job, each removed once observed, a
// Job forgotten whole, the pending set a copy.
func TestFinalizerExpectations(t *testing.T) {
	e := newFinalizerExpectations()
	check := func(step, key string, want ...string) {
		t.Helper()
		if got := slices.Sorted(maps.Keys(e.pending(key))); !slices.Equal(got, want) {
			t.Errorf("%s: pending(%s) = %v, want %v", step, key, got, want)
		}
	}
	check("nothing expected", "ns/a")
	e.expect("ns/a", []string{"u1", "u2"})
	e.expect("ns/a", []string{"u3"})
	e.expect("ns/b", []string{"u9"})
	check("expected", "ns/a", "u1", "u2", "u3")
	e.observed("ns/a", "u2")
	e.observed("ns/a", "u7") // not expected: ignored
	check("u2 observed", "ns/a", "u1", "u3")
	delete(e.pending("ns/a"), "u1")
	check("the pending set is a copy", "ns/a", "u1", "u3")
	e.forget("ns/a")
	check("forgotten", "ns/a")
	check("another Job untouched", "ns/b", "u9")
}
