package expectations

import (
	"testing"
	"time"

	"skiff.dev/internal/workqueue"
)

// TestExpectations plays scripts of expectations and observations.
func TestExpectations(t *testing.T) {
	type step struct {
		do        func(e *Tracker, clk *workqueue.FakeClock)
		satisfied bool
	}
	expectAdds := func(n int) func(*Tracker, *workqueue.FakeClock) {
		return func(e *Tracker, _ *workqueue.FakeClock) { e.ExpectCreations("ns/rs", n) }
	}
	expectDels := func(keys ...string) func(*Tracker, *workqueue.FakeClock) {
		return func(e *Tracker, _ *workqueue.FakeClock) { e.ExpectDeletions("ns/rs", keys) }
	}
	added := func(e *Tracker, _ *workqueue.FakeClock) { e.CreationObserved("ns/rs") }
	deleted := func(k string) func(*Tracker, *workqueue.FakeClock) {
		return func(e *Tracker, _ *workqueue.FakeClock) { e.DeletionObserved("ns/rs", k) }
	}
	wait := func(d time.Duration) func(*Tracker, *workqueue.FakeClock) {
		return func(_ *Tracker, clk *workqueue.FakeClock) { clk.Step(d) }
	}
	moreDels := func(keys ...string) func(*Tracker, *workqueue.FakeClock) {
		return func(e *Tracker, _ *workqueue.FakeClock) { e.ExpectMoreDeletions("ns/rs", keys) }
	}
	forget := func(e *Tracker, _ *workqueue.FakeClock) { e.Delete("ns/rs") }
	nothing := func(*Tracker, *workqueue.FakeClock) {}

	cases := []struct {
		name  string
		steps []step
	}{
		{"nothing expected", []step{{nothing, true}}},
		{"creations observed one by one", []step{
			{expectAdds(3), false}, {added, false}, {added, false}, {added, true},
		}},
		{"more creations observed than expected stay satisfied", []step{
			{expectAdds(1), false}, {added, true}, {added, true}, {expectAdds(1), false}, {added, true},
		}},
		{"zero creations expected", []step{{expectAdds(0), true}}},
		{"deletions tracked by pod: one seen twice counts once", []step{
			{expectDels("ns/a", "ns/b"), false}, {deleted("ns/a"), false}, {deleted("ns/a"), false}, {deleted("ns/b"), true},
		}},
		{"a deletion not expected is ignored", []step{
			{expectDels("ns/a"), false}, {deleted("ns/z"), false}, {deleted("ns/a"), true},
		}},
		{"new expectations replace the old", []step{
			{expectAdds(5), false}, {expectDels("ns/a"), false}, {deleted("ns/a"), true},
		}},
		{"more deletions after creations keep them", []step{
			{expectAdds(1), false}, {expectDels("ns/a"), false}, {expectAdds(1), false}, {moreDels("ns/b"), false},
			{added, false}, {deleted("ns/b"), true},
		}},
		{"more deletions keep what is expected", []step{
			{expectAdds(2), false}, {moreDels("ns/a"), false}, {moreDels("ns/b"), false},
			{deleted("ns/a"), false}, {deleted("ns/b"), false}, {added, false}, {added, true},
		}},
		{"more deletions drop expired expectations", []step{
			{expectAdds(2), false}, {wait(Timeout + time.Nanosecond), true}, {moreDels("ns/a"), false}, {deleted("ns/a"), true},
		}},
		{"expire after the timeout", []step{
			{expectAdds(2), false}, {wait(Timeout), false}, {wait(time.Nanosecond), true},
		}},
		{"deleted", []step{{expectAdds(2), false}, {forget, true}, {added, true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := workqueue.NewFakeClock(time.Unix(1000, 0))
			e := New(clk.Now)
			for i, s := range tc.steps {
				s.do(e, clk)
				if got := e.Satisfied("ns/rs"); got != s.satisfied {
					adds, dels := e.Pending("ns/rs")
					t.Fatalf("after step %d: Satisfied = %v, want %v (pending %d creations, %d deletions)", i, got, s.satisfied, adds, dels)
				}
				if !e.Satisfied("ns/other") {
					t.Fatalf("after step %d: another key is not satisfied", i)
				}
			}
		})
	}
}

// TestInFlight: creations not observed yet count as pods, and add up over
// syncs; deletions outstanding mean the cache is not to be trusted; expired
// expectations count for nothing.
func TestInFlight(t *testing.T) {
	clk := workqueue.NewFakeClock(time.Unix(1000, 0))
	e := New(clk.Now)
	check := func(step string, wantAdds int, wantDeleting bool) {
		t.Helper()
		if adds, deleting := e.InFlight("ns/rs"); adds != wantAdds || deleting != wantDeleting {
			t.Errorf("%s: InFlight = %d, %v; want %d, %v", step, adds, deleting, wantAdds, wantDeleting)
		}
	}
	check("nothing expected", 0, false)
	e.ExpectCreations("ns/rs", 3)
	e.CreationObserved("ns/rs")
	check("3 made, 1 seen", 2, false)
	e.ExpectCreations("ns/rs", 5)
	check("5 more made", 7, false)
	clk.Step(Timeout + time.Second)
	check("expired", 0, false)
	e.ExpectCreations("ns/rs", 2)
	check("expired creations are not carried over", 2, false)
	e.ExpectDeletions("ns/rs", []string{"ns/p1"})
	check("a deletion outstanding", 0, true)
	e.DeletionObserved("ns/rs", "ns/p1")
	check("the deletion seen", 0, false)
}
