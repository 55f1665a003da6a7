package workqueue

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestQueueOrderAndDedup(t *testing.T) {
	cases := []struct {
		name string
		adds []string
		want []string
	}{
		{name: "first in, first out", adds: []string{"a", "b", "c"}, want: []string{"a", "b", "c"}},
		{name: "a waiting key is held once", adds: []string{"a", "b", "a", "c", "b", "a"}, want: []string{"a", "b", "c"}},
		{name: "one key many times", adds: []string{"x", "x", "x"}, want: []string{"x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := New(Options[string]{})
			defer q.ShutDown()
			for _, k := range tc.adds {
				q.Add(k)
			}
			if got := q.Len(); got != len(tc.want) {
				t.Fatalf("Len = %d, want %d", got, len(tc.want))
			}
			var got []string
			for range tc.want {
				k := mustGet(t, q)
				got = append(got, k)
				q.Done(k)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Get order = %v, want %v", got, tc.want)
			}
			if n := q.Len(); n != 0 {
				t.Errorf("Len after draining = %d, want 0", n)
			}
		})
	}
}

func TestQueueReAddWhileProcessing(t *testing.T) {
	cases := []struct {
		name     string
		reAdds   int
		wantLenD int // Len after Done
	}{
		{name: "not re-added: gone after Done", reAdds: 0, wantLenD: 0},
		{name: "re-added once: queued again at Done", reAdds: 1, wantLenD: 1},
		{name: "re-added many times: queued once", reAdds: 5, wantLenD: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := New(Options[string]{})
			defer q.ShutDown()
			q.Add("a")
			if k := mustGet(t, q); k != "a" {
				t.Fatalf("Get = %q, want a", k)
			}
			for range tc.reAdds {
				q.Add("a")
			}
			if n := q.Len(); n != 0 {
				t.Fatalf("Len while a is processed = %d, want 0: a must not reach a second worker", n)
			}
			q.Add("b")
			if k := mustGet(t, q); k != "b" {
				t.Fatalf("Get = %q, want b (a is still being processed)", k)
			}
			q.Done("b")
			q.Done("a")
			if n := q.Len(); n != tc.wantLenD {
				t.Fatalf("Len after Done(a) = %d, want %d", n, tc.wantLenD)
			}
			if tc.wantLenD > 0 {
				if k := mustGet(t, q); k != "a" {
					t.Fatalf("Get = %q, want a", k)
				}
				q.Done("a")
			}
		})
	}
}

func TestQueueDoneWithoutGetIsIgnored(t *testing.T) {
	q := New(Options[string]{})
	defer q.ShutDown()
	q.Add("a")
	q.Done("a") // not handed out: must not disturb the waiting key
	q.Done("zzz")
	if n := q.Len(); n != 1 {
		t.Fatalf("Len = %d, want 1", n)
	}
}

// TestQueueKeyNeverProcessedTwiceAtOnce runs many workers over few keys
// added many times, and checks that no key is ever held by two workers, and
// that the last processing of each key started after its last add (nothing
// added is lost).
func TestQueueKeyNeverProcessedTwiceAtOnce(t *testing.T) {
	const (
		workers   = 16
		producers = 4
		addsEach  = 2000
	)
	keys := []string{"a", "b", "c", "d"}
	var (
		inFlight  [4]atomic.Int32
		added     [4]atomic.Int64 // adds of the key so far
		seen      [4]atomic.Int64 // value of added when processing last started
		processed atomic.Int64
	)
	index := func(k string) int { return slices.Index(keys, k) }

	q := New(Options[string]{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				i := index(k)
				if n := inFlight[i].Add(1); n != 1 {
					t.Errorf("key %q held by %d workers at once", k, n)
				}
				seen[i].Store(added[i].Load())
				runtime.Gosched()
				processed.Add(1)
				inFlight[i].Add(-1)
				q.Done(k)
			}
		})
	}
	var producing sync.WaitGroup
	for p := range producers {
		producing.Go(func() {
			for n := range addsEach {
				i := (p + n) % len(keys)
				added[i].Add(1)
				q.Add(keys[i])
			}
		})
	}
	producing.Wait()
	// Keys still queued or dirty are handed out after ShutDown; workers stop
	// once none is left.
	q.ShutDown()
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	within(t, stopped, "workers stopping")

	for i, k := range keys {
		if got, want := seen[i].Load(), added[i].Load(); got != want {
			t.Errorf("key %q: last processing saw %d adds, want all %d", k, got, want)
		}
	}
	if processed.Load() == 0 {
		t.Error("nothing processed")
	}
	t.Logf("%d adds, %d processings", producers*addsEach, processed.Load())
}

func TestQueueShutDown(t *testing.T) {
	t.Run("queued keys are handed out, then shutdown", func(t *testing.T) {
		q := New(Options[string]{})
		q.Add("a")
		q.Add("b")
		q.ShutDown()
		q.Add("c") // ignored
		if !q.ShuttingDown() {
			t.Fatal("ShuttingDown = false after ShutDown")
		}
		for _, want := range []string{"a", "b"} {
			if k := mustGet(t, q); k != want {
				t.Fatalf("Get = %q, want %q", k, want)
			}
			q.Done(want)
		}
		mustShutdown(t, q)
	})
	t.Run("a blocked Get returns shutdown", func(t *testing.T) {
		q := New(Options[string]{})
		got := make(chan bool, 1)
		go func() { _, shutdown := q.Get(); got <- shutdown }()
		q.ShutDown()
		select {
		case shutdown := <-got:
			if !shutdown {
				t.Fatal("Get: shutdown = false")
			}
		case <-time.After(patience):
			t.Fatal("Get still blocked after ShutDown")
		}
	})
	t.Run("ShutDownWithDrain waits for Done", func(t *testing.T) {
		q := New(Options[string]{})
		q.Add("a")
		k := mustGet(t, q)
		drained := make(chan struct{})
		go func() { q.ShutDownWithDrain(); close(drained) }()
		waitShuttingDown(t, q)
		// ShuttingDown and the wait start under one lock: from here the
		// drain can only end when "a" is Done.
		select {
		case <-drained:
			t.Fatal("ShutDownWithDrain returned while a key was being processed")
		default:
		}
		q.Done(k)
		within(t, drained, "ShutDownWithDrain after Done")
		mustShutdown(t, q)
	})
	t.Run("ShutDown ends a drain", func(t *testing.T) {
		q := New(Options[string]{})
		q.Add("a")
		k := mustGet(t, q)
		drained := make(chan struct{})
		go func() { q.ShutDownWithDrain(); close(drained) }()
		waitShuttingDown(t, q)
		q.ShutDown()
		within(t, drained, "ShutDownWithDrain after ShutDown")
		q.Done(k)
	})
	t.Run("delayed and rate-limited adds are ignored", func(t *testing.T) {
		clk := NewFakeClock(epoch)
		q := New(Options[string]{Clock: clk})
		q.AddAfter("waiting", time.Second) // dropped by ShutDown
		q.ShutDown()
		q.AddAfter("a", time.Second)
		q.AddAfter("b", 0)
		q.AddRateLimited("c")
		clk.Step(time.Hour)
		if n := q.NumRequeues("c"); n != 0 {
			t.Errorf("NumRequeues(c) = %d, want 0", n)
		}
		if n := clk.Waiters(); n != 0 {
			t.Errorf("armed timers = %d, want 0", n)
		}
		mustShutdown(t, q)
	})
	t.Run("twice is harmless", func(t *testing.T) {
		q := New(Options[string]{})
		q.ShutDown()
		q.ShutDownWithDrain()
		q.ShutDown()
		mustShutdown(t, q)
	})
}

// waitShuttingDown waits for another goroutine's ShutDown to take effect.
func waitShuttingDown[K comparable](t *testing.T, q *Queue[K]) {
	t.Helper()
	waitFor(t, "shutting down", q.ShuttingDown)
}
