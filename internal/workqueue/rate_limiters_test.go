package workqueue

import (
	"testing"
	"time"
)

func TestItemExponentialFailureRateLimiter(t *testing.T) {
	r := NewItemExponentialFailureRateLimiter[string](5*time.Millisecond, 1000*time.Second)
	// 5ms * 2^17 = 655.36s is the last step under the cap.
	for n := range 30 {
		want := 5 * time.Millisecond << n
		if n > 17 {
			want = 1000 * time.Second
		}
		if got := r.When("a"); got != want {
			t.Fatalf("failure %d: When = %v, want %v", n+1, got, want)
		}
		if got := r.NumRequeues("a"); got != n+1 {
			t.Fatalf("failure %d: NumRequeues = %d", n+1, got)
		}
	}
	for range 2000 { // far past where 2^n overflows an int64
		r.When("a")
	}
	if got := r.When("a"); got != 1000*time.Second {
		t.Fatalf("after many failures: When = %v, want the 1000s cap", got)
	}
	if got := r.When("b"); got != 5*time.Millisecond {
		t.Fatalf("another key: When = %v, want 5ms (keys back off independently)", got)
	}
	r.Forget("a")
	if got := r.NumRequeues("a"); got != 0 {
		t.Fatalf("NumRequeues after Forget = %d, want 0", got)
	}
	if got := r.When("a"); got != 5*time.Millisecond {
		t.Fatalf("When after Forget = %v, want 5ms", got)
	}
}

func TestBucketRateLimiter(t *testing.T) {
	clk := NewFakeClock(epoch)
	r := newBucketRateLimiter[string](10, 3, clk) // a token every 100ms
	steps := []struct {
		name  string
		after time.Duration // clock step before When
		want  time.Duration
	}{
		{name: "burst 1", want: 0},
		{name: "burst 2", want: 0},
		{name: "burst 3", want: 0},
		{name: "bucket empty: wait for the next token", want: 100 * time.Millisecond},
		{name: "and the one after", want: 200 * time.Millisecond},
		{name: "refilled by time, up to what is owed", after: 250 * time.Millisecond, want: 50 * time.Millisecond},
		{name: "full again after a long pause", after: time.Hour, want: 0},
		{name: "burst is capped", want: 0},
		{name: "burst is capped, 3", want: 0},
		{name: "burst is capped, empty", want: 100 * time.Millisecond},
	}
	for _, s := range steps {
		clk.Step(s.after)
		if got := r.When("any"); got != s.want {
			t.Fatalf("%s: When = %v, want %v", s.name, got, s.want)
		}
	}
	if n := r.NumRequeues("any"); n != 0 {
		t.Fatalf("NumRequeues = %d, want 0 (no per-key state)", n)
	}
}

func TestMaxOfRateLimiter(t *testing.T) {
	fast := NewItemExponentialFailureRateLimiter[string](time.Millisecond, time.Second)
	slow := NewItemExponentialFailureRateLimiter[string](10*time.Millisecond, time.Second)
	r := NewMaxOfRateLimiter(fast, slow)
	for _, want := range []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond} {
		if got := r.When("a"); got != want {
			t.Fatalf("When = %v, want %v", got, want)
		}
	}
	if n := r.NumRequeues("a"); n != 3 {
		t.Fatalf("NumRequeues = %d, want 3", n)
	}
	r.Forget("a")
	if fast.NumRequeues("a") != 0 || slow.NumRequeues("a") != 0 {
		t.Fatal("Forget did not reach every limiter")
	}
}

func TestDefaultRateLimiter(t *testing.T) {
	r := DefaultRateLimiter[string]()
	for n, want := range []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond} {
		if got := r.When("a"); got != want {
			t.Fatalf("failure %d: When = %v, want %v", n+1, got, want)
		}
	}
	r.Forget("a")
	if got := r.When("a"); got != 5*time.Millisecond {
		t.Fatalf("When after Forget = %v, want 5ms", got)
	}
}

func TestQueueAddRateLimited(t *testing.T) {
	clk := NewFakeClock(epoch)
	q := New(Options[string]{
		Clock:       clk,
		RateLimiter: NewItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Second),
	})
	defer q.ShutDown()
	for n, backoff := range []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond} {
		q.AddRateLimited("a")
		if got := q.NumRequeues("a"); got != n+1 {
			t.Fatalf("NumRequeues = %d, want %d", got, n+1)
		}
		clk.Step(backoff - time.Millisecond)
		if got := readyNow(t, q, clk); len(got) != 0 {
			t.Fatalf("retry %d: ready %v before its %v backoff", n+1, got, backoff)
		}
		clk.Step(time.Millisecond)
		if got := readyNow(t, q, clk); len(got) != 1 || got[0] != "a" {
			t.Fatalf("retry %d: ready %v after %v, want [a]", n+1, got, backoff)
		}
	}
	q.Forget("a")
	if got := q.NumRequeues("a"); got != 0 {
		t.Fatalf("NumRequeues after Forget = %d, want 0", got)
	}
}
