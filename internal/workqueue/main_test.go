package workqueue

import (
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// patience bounds every wait for something that should happen; tests never
// sleep to let something happen.
const patience = 10 * time.Second

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// mustGet returns the next key of q, failing the test if none comes or the
// queue shuts down.
func mustGet[K comparable](t *testing.T, q *Queue[K]) K {
	t.Helper()
	type got struct {
		k        K
		shutdown bool
	}
	ch := make(chan got, 1)
	go func() {
		k, shutdown := q.Get()
		ch <- got{k, shutdown}
	}()
	select {
	case g := <-ch:
		if g.shutdown {
			t.Fatalf("Get: shutdown, want a key")
		}
		return g.k
	case <-time.After(patience):
		t.Fatalf("Get: no key within %v", patience)
		panic("unreachable")
	}
}

// mustShutdown asserts that Get reports shutdown.
func mustShutdown[K comparable](t *testing.T, q *Queue[K]) {
	t.Helper()
	ch := make(chan bool, 1)
	go func() {
		k, shutdown := q.Get()
		if !shutdown {
			t.Errorf("Get = %v, want shutdown", k)
			q.Done(k)
		}
		ch <- shutdown
	}()
	select {
	case <-ch:
	case <-time.After(patience):
		t.Fatalf("Get: not shut down within %v", patience)
	}
}

// within fails the test unless ch is closed within patience.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(patience):
		t.Fatalf("%s: not within %v", what, patience)
	}
}

// waitFor yields until cond holds, for state that another goroutine is about
// to reach and that no event announces.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, patience)
		}
		runtime.Gosched()
	}
}
