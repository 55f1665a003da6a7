package workqueue

import (
	"slices"
	"testing"
	"time"
)

// sentinel marks the end of what readyNow collects.
const sentinel = "~sentinel"

// readyNow returns, in order, the keys the delay loop has made ready by the
// clock's current time. It delays a sentinel key by 1ns and steps past it:
// the loop adds ready keys in deadline order, so every key due by now comes
// before the sentinel, and the result cannot depend on goroutine timing.
func readyNow(t *testing.T, q *Queue[string], clk *FakeClock) []string {
	t.Helper()
	q.AddAfter(sentinel, time.Nanosecond)
	clk.Step(time.Nanosecond)
	var got []string
	for {
		k := mustGet(t, q)
		q.Done(k)
		if k == sentinel {
			return got
		}
		got = append(got, k)
	}
}

func TestAddAfter(t *testing.T) {
	type add struct {
		key   string
		after time.Duration
	}
	type step struct {
		by   time.Duration
		want []string // ready after the step, in order
	}
	cases := []struct {
		name  string
		adds  []add
		steps []step
	}{
		{
			name: "deadline order, not add order",
			adds: []add{{"c", 3 * time.Second}, {"a", time.Second}, {"b", 2 * time.Second}},
			steps: []step{
				{by: 999 * time.Millisecond},
				{by: time.Millisecond, want: []string{"a"}},
				{by: time.Second, want: []string{"b"}},
				{by: time.Second, want: []string{"c"}},
			},
		},
		{
			name:  "equal deadlines keep add order",
			adds:  []add{{"x", time.Second}, {"y", time.Second}, {"z", time.Second}},
			steps: []step{{by: time.Second, want: []string{"x", "y", "z"}}},
		},
		{
			name:  "one long step releases everything due",
			adds:  []add{{"b", 2 * time.Second}, {"a", time.Second}, {"late", time.Hour}},
			steps: []step{{by: time.Minute, want: []string{"a", "b"}}, {by: time.Hour, want: []string{"late"}}},
		},
		{
			name:  "an earlier AddAfter of a waiting key moves it forward",
			adds:  []add{{"a", 5 * time.Second}, {"a", time.Second}},
			steps: []step{{by: time.Second, want: []string{"a"}}, {by: 10 * time.Second}},
		},
		{
			name:  "a later AddAfter of a waiting key is ignored",
			adds:  []add{{"a", time.Second}, {"a", 5 * time.Second}},
			steps: []step{{by: time.Second, want: []string{"a"}}, {by: 10 * time.Second}},
		},
		{
			name:  "zero and negative delays add at once",
			adds:  []add{{"zero", 0}, {"negative", -time.Second}},
			steps: []step{{by: 0, want: []string{"zero", "negative"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := NewFakeClock(epoch)
			q := New(Options[string]{Clock: clk})
			defer q.ShutDown()
			for _, a := range tc.adds {
				q.AddAfter(a.key, a.after)
			}
			for i, s := range tc.steps {
				clk.Step(s.by)
				if got := readyNow(t, q, clk); !slices.Equal(got, s.want) {
					t.Fatalf("step %d (+%v): ready %v, want %v", i, s.by, got, s.want)
				}
			}
		})
	}
}

func TestAddAfterKeyAlreadyQueued(t *testing.T) {
	clk := NewFakeClock(epoch)
	q := New(Options[string]{Clock: clk})
	defer q.ShutDown()
	q.Add("a")
	q.AddAfter("a", time.Second)
	q.AddAfter(sentinel, time.Second) // due with a, added after it
	clk.Step(time.Second)
	// No Get until the sentinel is queued: a Get would let "a" in again.
	queued := func() []string {
		q.mu.Lock()
		defer q.mu.Unlock()
		return slices.Clone(q.queue)
	}
	waitFor(t, "the sentinel queued", func() bool { return slices.Contains(queued(), sentinel) })
	if got, want := queued(), []string{"a", sentinel}; !slices.Equal(got, want) {
		t.Fatalf("queue = %v, want %v: a delayed key already queued must not be queued twice", got, want)
	}
}

func TestAddAfterRealClock(t *testing.T) {
	q := New(Options[string]{})
	defer q.ShutDown()
	q.AddAfter("a", time.Millisecond)
	if k := mustGet(t, q); k != "a" {
		t.Fatalf("Get = %q, want a", k)
	}
}

func TestAddAfterArmsOneTimer(t *testing.T) {
	clk := NewFakeClock(epoch)
	q := New(Options[string]{Clock: clk})
	defer q.ShutDown()
	for i, d := range []time.Duration{3 * time.Second, 2 * time.Second, time.Second} {
		q.AddAfter(string(rune('a'+i)), d)
	}
	ctx := testContext(t)
	if err := clk.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	if k := mustGet(t, q); k != "c" {
		t.Fatalf("Get = %q, want c", k)
	}
	// However many keys wait, the loop sleeps on one timer.
	if err := clk.BlockUntilWaiters(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if n := clk.Waiters(); n != 1 {
		t.Fatalf("armed timers = %d, want 1", n)
	}
}
