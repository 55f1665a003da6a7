package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"

	"skiff.dev/internal/client"
	"skiff.dev/internal/events"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

var eventsT0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// eventsClock is a fake clock stepped by the test.
type eventsClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *eventsClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *eventsClock) Step(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// testBroadcaster is a Broadcaster whose Run runs in a goroutine, on a
// fake clock at eventsT0.
type testBroadcaster struct {
	*events.Broadcaster
	clock *eventsClock
	reg   *prometheus.Registry
	done  chan struct{} // closed when Run has returned
}

// drain shuts the broadcaster down and waits until Run has written every
// event recorded before.
func (b *testBroadcaster) drain() {
	b.Shutdown()
	<-b.done
}

func startBroadcaster(t *testing.T, conn grpc.ClientConnInterface) *testBroadcaster {
	t.Helper()
	clock := &eventsClock{now: eventsT0}
	reg := prometheus.NewRegistry()
	b, err := events.NewBroadcaster(events.Config{
		Client:     client.Events(conn),
		Component:  "test-controller",
		Host:       "host-1",
		Clock:      clock,
		Logger:     zaptest.NewLogger(t),
		Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	tb := &testBroadcaster{Broadcaster: b, clock: clock, reg: reg, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(tb.done)
		b.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-tb.done
	})
	return tb
}

// eventsAbout lists the events about the object named name in namespace.
func eventsAbout(t *testing.T, conn grpc.ClientConnInterface, namespace, name string) []*corev1.Event {
	t.Helper()
	l, err := client.Events(conn).List(context.Background(), &metav1.ListOptions{
		Namespace: namespace, FieldSelector: "involvedObject.name=" + name,
	})
	if err != nil {
		t.Fatalf("listing events: %v", err)
	}
	return l.GetItems()
}

// nextEvent reads w until an event satisfies match.
func nextEvent(t *testing.T, w *client.WatchStream[*corev1.Event], what string, match func(client.Event[*corev1.Event]) bool) *corev1.Event {
	t.Helper()
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if match(ev) {
			return ev.Object
		}
	}
}

func TestEventsRepeatsAreAggregated(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	cm, err := client.ConfigMaps(s.Conn).Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "node-1", Uid: "node-uid"}} // cluster-scoped; need not exist
	b := startBroadcaster(t, s.Conn)
	clock, reg := b.clock, b.reg
	rec := b.NewRecorder("")

	for i := range 5 {
		rec.Eventf(cm, events.EventTypeNormal, "Synced", "synced %s", "web")
		if i < 4 {
			clock.Step(time.Second)
		}
	}
	rec.Event(cm, events.EventTypeWarning, "Failed", "boom")
	rec.Event(node, events.EventTypeNormal, "Ready", "node is ready")
	b.drain()

	got := map[string]*corev1.Event{}
	for _, ev := range eventsAbout(t, s.Conn, "default", "web") {
		got[ev.GetReason()] = ev
	}
	if len(got) != 2 {
		t.Fatalf("events about web: %v, want one Synced and one Failed", got)
	}
	synced := got["Synced"]
	if synced.GetCount() != 5 || !synced.GetFirstTimestamp().AsTime().Equal(eventsT0) || !synced.GetLastTimestamp().AsTime().Equal(eventsT0.Add(4*time.Second)) {
		t.Errorf("Synced: count %d, first %v, last %v; want 5, %v, %v", synced.GetCount(),
			synced.GetFirstTimestamp().AsTime(), synced.GetLastTimestamp().AsTime(), eventsT0, eventsT0.Add(4*time.Second))
	}
	if want := fmt.Sprintf("web.%x", eventsT0.UnixNano()); synced.GetMetadata().GetName() != want {
		t.Errorf("Synced is named %q, want %q", synced.GetMetadata().GetName(), want)
	}
	io := synced.GetInvolvedObject()
	if io.GetKind() != "ConfigMap" || io.GetUid() != cm.GetMetadata().GetUid() || io.GetNamespace() != "default" ||
		synced.GetSource().GetComponent() != "test-controller" || synced.GetSource().GetHost() != "host-1" || synced.GetMessage() != "synced web" {
		t.Errorf("Synced = %v", synced)
	}
	if failed := got["Failed"]; failed.GetCount() != 1 || failed.GetType() != events.EventTypeWarning {
		t.Errorf("Failed: count %d, type %s; want 1, Warning", failed.GetCount(), failed.GetType())
	}
	if nodeEvents := eventsAbout(t, s.Conn, "default", "node-1"); len(nodeEvents) != 1 || nodeEvents[0].GetInvolvedObject().GetKind() != "Node" {
		t.Errorf("events about node-1 in default: %v, want one about the Node", nodeEvents)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP events_recorded_total Events accepted by recorders, by type (Normal, Warning).
# TYPE events_recorded_total counter
events_recorded_total{type="Normal"} 6
events_recorded_total{type="Warning"} 1
`), "events_recorded_total"); err != nil {
		t.Error(err)
	}
}

func TestEventsRepeatAfterOthersChangedTheEvent(t *testing.T) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs := client.Events(s.Conn)
	w, err := evs.Watch(ctx, &metav1.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	pod := &corev1.Pod{ApiVersion: "v1", Kind: "Pod", Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web", Uid: "pod-uid"}}
	b := startBroadcaster(t, s.Conn)
	clock := b.clock
	rec := b.NewRecorder("")
	isSynced := func(typ string, count int32) func(client.Event[*corev1.Event]) bool {
		return func(e client.Event[*corev1.Event]) bool {
			return e.Type == typ && e.Object.GetReason() == "Synced" && e.Object.GetCount() == count
		}
	}

	rec.Event(pod, events.EventTypeNormal, "Synced", "synced")
	first := nextEvent(t, w, "the event created", isSynced("ADDED", 1))

	// Someone else updates the event: our next write conflicts, reads it
	// again and counts on top of what it finds.
	first.Count = 10
	if _, err := evs.Update(ctx, first); err != nil {
		t.Fatal(err)
	}
	clock.Step(time.Second)
	rec.Event(pod, events.EventTypeNormal, "Synced", "synced")
	nextEvent(t, w, "the count incremented after a conflict", isSynced("MODIFIED", 11))

	// Someone deletes it: the repeat creates a new event that keeps the count.
	if _, err := evs.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: first.GetMetadata().GetName()}); err != nil {
		t.Fatal(err)
	}
	clock.Step(time.Second)
	rec.Event(pod, events.EventTypeNormal, "Synced", "synced")
	again := nextEvent(t, w, "a new event after the delete", isSynced("ADDED", 12))
	if again.GetMetadata().GetName() == first.GetMetadata().GetName() {
		t.Errorf("the new event reuses the deleted one's name %q", again.GetMetadata().GetName())
	}
	if !again.GetFirstTimestamp().AsTime().Equal(eventsT0) || !again.GetLastTimestamp().AsTime().Equal(eventsT0.Add(2*time.Second)) {
		t.Errorf("new event: first %v, last %v; want %v, %v", again.GetFirstTimestamp().AsTime(), again.GetLastTimestamp().AsTime(),
			eventsT0, eventsT0.Add(2*time.Second))
	}

	// After the aggregation window, a repeat is a new event again.
	clock.Step(events.DefaultAggregationWindow)
	rec.Event(pod, events.EventTypeNormal, "Synced", "synced")
	nextEvent(t, w, "a new event after the window", isSynced("ADDED", 1))
}

func TestEventsSpamFilterPerObject(t *testing.T) {
	s := apiservertest.Start(t)
	web := &corev1.Pod{ApiVersion: "v1", Kind: "Pod", Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web", Uid: "web-uid"}}
	db := &corev1.Pod{ApiVersion: "v1", Kind: "Pod", Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "db", Uid: "db-uid"}}
	b := startBroadcaster(t, s.Conn)
	clock, reg := b.clock, b.reg
	rec := b.NewRecorder("")

	for i := range 100 { // within one burst: 25 pass
		rec.Eventf(web, events.EventTypeNormal, "Tested", "event %d", i)
	}
	rec.Event(db, events.EventTypeNormal, "Tested", "db has its own bucket")
	clock.Step(10 * time.Minute) // refills 2 tokens for web
	for i := range 3 {
		rec.Eventf(web, events.EventTypeNormal, "Tested", "later event %d", i)
	}
	b.drain()

	if n := len(eventsAbout(t, s.Conn, "default", "web")); n != 27 {
		t.Errorf("%d events about web, want 25 + 2", n)
	}
	if n := len(eventsAbout(t, s.Conn, "default", "db")); n != 1 {
		t.Errorf("%d events about db, want 1", n)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP events_dropped_total Events not written, by reason (queue_full, rate_limited, shutdown, invalid, write_failed).
# TYPE events_dropped_total counter
events_dropped_total{reason="rate_limited"} 76
# HELP events_recorded_total Events accepted by recorders, by type (Normal, Warning).
# TYPE events_recorded_total counter
events_recorded_total{type="Normal"} 104
`), "events_dropped_total", "events_recorded_total"); err != nil {
		t.Error(err)
	}
}

// TestEventsBurstAboutManyObjects is the scheduler's burst: one event per
// pod, for many pods, recorded as fast as several goroutines can. The
// queue holds them and the writers write every one.
func TestEventsBurstAboutManyObjects(t *testing.T) {
	const pods, recorders = 2000, 8
	s := apiservertest.Start(t)
	b := startBroadcaster(t, s.Conn)
	rec := b.NewRecorder("")

	start := time.Now()
	var wg sync.WaitGroup
	for r := range recorders {
		wg.Go(func() {
			for i := r; i < pods; i += recorders {
				name := fmt.Sprintf("pod-%d", i)
				pod := &corev1.Pod{ApiVersion: "v1", Kind: "Pod", Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name, Uid: "uid-" + name}}
				rec.Eventf(pod, events.EventTypeNormal, "Scheduled", "Successfully assigned default/%s to node-%d", name, i%10)
			}
		})
	}
	wg.Wait()
	b.drain()
	t.Logf("%d events recorded and written in %v", pods, time.Since(start))

	l, err := client.Events(s.Conn).List(context.Background(), &metav1.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	about := map[string]int{}
	for _, ev := range l.GetItems() {
		if ev.GetReason() != "Scheduled" || ev.GetCount() != 1 {
			t.Errorf("event %s: reason %s, count %d; want Scheduled, 1", ev.GetMetadata().GetName(), ev.GetReason(), ev.GetCount())
		}
		about[ev.GetInvolvedObject().GetName()]++
	}
	for i := range pods {
		if n := about[fmt.Sprintf("pod-%d", i)]; n != 1 {
			t.Errorf("%d events about pod-%d, want 1", n, i)
		}
	}
	if len(l.GetItems()) != pods {
		t.Errorf("%d events, want %d", len(l.GetItems()), pods)
	}
	// No events_dropped_total series: nothing dropped.
	if err := testutil.GatherAndCompare(b.reg, strings.NewReader(`
# HELP events_recorded_total Events accepted by recorders, by type (Normal, Warning).
# TYPE events_recorded_total counter
events_recorded_total{type="Normal"} 2000
`), "events_dropped_total", "events_recorded_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(b.reg, "events_write_duration_seconds"); err != nil || n != 1 {
		t.Errorf("events_write_duration_seconds: %d series, %v; want 1", n, err)
	}
}
