package job

import (
	"context"
	"testing"
	"time"

	"skiff.dev/internal/controller"
	"skiff.dev/internal/workqueue"
)

// An idle Job's pod event syncs it at once; events within the batch period
// after a sync started wait for the rest of it, gathered into one sync.
func TestEnqueueBatchedSyncsAtOnceWhenIdle(t *testing.T) {
	clock := workqueue.NewFakeClock(time.Unix(1_700_000_000, 0))
	q := controller.New(controller.ReconcileFunc(func(context.Context, string) (controller.Result, error) { return controller.Result{}, nil }),
		controller.Options{Name: "job-batch-test", Workers: 1, Clock: clock})
	defer q.Queue().ShutDown()
	c := &Controller{opts: Options{SyncBatchPeriod: time.Second}, clock: clock, queue: q}
	// take returns the next key the queue hands out, waiting for it.
	take := func() string {
		t.Helper()
		got := make(chan string, 1)
		go func() {
			k, _ := q.Queue().Get()
			q.Queue().Done(k)
			got <- k
		}()
		select {
		case k := <-got:
			return k
		case <-time.After(patience):
			t.Fatal("no key queued")
			return ""
		}
	}

	c.enqueueBatched("default/a") // never synced: at once
	if n := q.Queue().Len(); n != 1 {
		t.Fatalf("an idle Job waits: queue holds %d", n)
	}
	if k := take(); k != "default/a" {
		t.Fatalf("got %q", k)
	}
	c.lastSync.Store("default/a", clock.Now()) // its sync starts
	clock.Step(300 * time.Millisecond)
	c.enqueueBatched("default/a")
	c.enqueueBatched("default/a")
	if n := q.Queue().Len(); n != 0 {
		t.Fatalf("busy Job synced again after 300ms: queue holds %d", n)
	}
	if err := clock.BlockUntilWaiters(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	clock.Step(700 * time.Millisecond) // the period since the sync's start
	if k := take(); k != "default/a" {
		t.Fatalf("got %q", k)
	}
	if n := q.Queue().Len(); n != 0 {
		t.Fatalf("the gathered events synced more than once: %d more queued", n)
	}

	clock.Step(5 * time.Second) // idle again
	c.enqueueBatched("default/a")
	if n := q.Queue().Len(); n != 1 {
		t.Fatalf("an idle Job waits: queue holds %d", n)
	}
	if k := take(); k != "default/a" {
		t.Fatalf("got %q", k)
	}
}
