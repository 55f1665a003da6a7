package events

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"

	"skiff.dev/internal/object"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// unusedClient fails the test if the broadcaster writes: these tests stop
// before Run.
type unusedClient struct{ t *testing.T }

func (c unusedClient) Create(context.Context, *corev1.Event, ...grpc.CallOption) (*corev1.Event, error) {
	c.t.Error("Create called")
	return nil, errors.New("unused")
}
func (c unusedClient) Get(context.Context, string, string, ...grpc.CallOption) (*corev1.Event, error) {
	c.t.Error("Get called")
	return nil, errors.New("unused")
}
func (c unusedClient) Update(context.Context, *corev1.Event, ...grpc.CallOption) (*corev1.Event, error) {
	c.t.Error("Update called")
	return nil, errors.New("unused")
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func newTestBroadcaster(t *testing.T, cfg Config) (*Broadcaster, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Client = unusedClient{t}
	cfg.Registerer = reg
	if cfg.Clock == nil {
		cfg.Clock = &fakeClock{now: t0}
	}
	b, err := NewBroadcaster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b, reg
}

func TestRecordingNeverBlocks(t *testing.T) {
	b, _ := newTestBroadcaster(t, Config{Component: "test", QueueSize: 2})
	rec := b.NewRecorder("")
	pod := &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	for range 5 {
		rec.Event(pod, EventTypeNormal, "Tested", "hello") // Run is not running: the queue fills
	}
	if got := testutil.ToFloat64(b.metrics.recorded.WithLabelValues(EventTypeNormal)); got != 2 {
		t.Errorf("events_recorded_total{type=Normal} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(b.metrics.dropped.WithLabelValues(dropQueueFull)); got != 3 {
		t.Errorf("events_dropped_total{reason=queue_full} = %v, want 3", got)
	}
	b.Shutdown() // Run never started: returns at once
	rec.Event(pod, EventTypeNormal, "Tested", "after shutdown")
	if got := testutil.ToFloat64(b.metrics.dropped.WithLabelValues(dropShutdown)); got != 1 {
		t.Errorf("events_dropped_total{reason=shutdown} = %v, want 1", got)
	}
}

func TestRecordedEvent(t *testing.T) {
	clock := &fakeClock{now: t0}
	b, _ := newTestBroadcaster(t, Config{Component: "default-component", Host: "node-1", Clock: clock})
	rec := b.NewRecorder("deployment-controller")
	pod := &corev1.Pod{ApiVersion: "v1", Kind: "Pod", Metadata: &metav1.ObjectMeta{Namespace: "prod", Name: "web", Uid: "u1", ResourceVersion: "7"}}
	rec.Eventf(pod, EventTypeWarning, "BackOff", "restarting %s for the %d time", "app", 3)
	ev := <-b.queue
	want := "namespace:prod involvedObject:Pod v1 prod/web u1 7 type:Warning reason:BackOff message:restarting app for the 3 time " +
		"source:deployment-controller/node-1 reporting:deployment-controller/node-1 count:1 first=last=" + t0.Format(time.RFC3339)
	if got := describe(ev); got != want {
		t.Errorf("event:\n got %s\nwant %s", got, want)
	}

	// A cluster-scoped object built by hand, without kind: the event lives
	// in "default", the kind comes from the Go type, the component from Config.
	b.NewRecorder("").Event(&corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n1"}}, EventTypeNormal, "Ready", "node is ready")
	ev = <-b.queue
	if got, want := describe(ev), "namespace:default involvedObject:Node  /n1   type:Normal reason:Ready message:node is ready "+
		"source:default-component/node-1 reporting:default-component/node-1 count:1 first=last="+t0.Format(time.RFC3339); got != want {
		t.Errorf("event:\n got %s\nwant %s", got, want)
	}
}

func describe(ev *corev1.Event) string {
	io := ev.GetInvolvedObject()
	first, last := ev.GetFirstTimestamp().AsTime(), ev.GetLastTimestamp().AsTime()
	ts := "first=last=" + first.Format(time.RFC3339)
	if !first.Equal(last) {
		ts = "first=" + first.Format(time.RFC3339) + " last=" + last.Format(time.RFC3339)
	}
	return strings.Join([]string{
		"namespace:" + ev.GetMetadata().GetNamespace(),
		"involvedObject:" + io.GetKind(), io.GetApiVersion(), io.GetNamespace() + "/" + io.GetName(), io.GetUid(), io.GetResourceVersion(),
		"type:" + ev.GetType(), "reason:" + ev.GetReason(), "message:" + ev.GetMessage(),
		"source:" + ev.GetSource().GetComponent() + "/" + ev.GetSource().GetHost(),
		"reporting:" + ev.GetReportingComponent() + "/" + ev.GetReportingInstance(),
		"count:" + strconv.Itoa(int(ev.GetCount())), ts,
	}, " ")
}

func TestInvalidEventsAreDropped(t *testing.T) {
	pod := &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	cases := []struct {
		name      string
		obj       *corev1.Pod
		eventType string
	}{
		{"no object", nil, EventTypeNormal},
		{"object without a name", &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default"}}, EventTypeNormal},
		{"unsupported type", pod, "Error"},
		{"empty type", pod, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := newTestBroadcaster(t, Config{Component: "test"})
			var obj object.Object // a nil *corev1.Pod would not be a nil Object
			if tc.obj != nil {
				obj = tc.obj
			}
			b.NewRecorder("").Event(obj, tc.eventType, "Tested", "hello")
			if got := testutil.ToFloat64(b.metrics.dropped.WithLabelValues(dropInvalid)); got != 1 {
				t.Errorf("events_dropped_total{reason=invalid} = %v, want 1", got)
			}
			if len(b.queue) != 0 {
				t.Errorf("%d events queued, want 0", len(b.queue))
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	if _, err := NewBroadcaster(Config{}); err == nil || !strings.Contains(err.Error(), "Config.Client: required") {
		t.Errorf("NewBroadcaster without client: %v, want Config.Client: required", err)
	}
	if _, err := NewBroadcaster(Config{Client: unusedClient{t}, Burst: -1}); err == nil {
		t.Error("NewBroadcaster with a negative burst: nil error")
	}
	// Two broadcasters may share a registry.
	reg := prometheus.NewRegistry()
	for range 2 {
		if _, err := NewBroadcaster(Config{Client: unusedClient{t}, Registerer: reg}); err != nil {
			t.Fatal(err)
		}
	}
}

// memClient stores created events in memory.
type memClient struct {
	unusedClient
	mu      sync.Mutex
	created []*corev1.Event
}

func (c *memClient) Create(_ context.Context, ev *corev1.Event, _ ...grpc.CallOption) (*corev1.Event, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.created = append(c.created, ev)
	return ev, nil
}

func TestRunAfterShutdownWritesWhatWasQueued(t *testing.T) {
	mem := &memClient{unusedClient: unusedClient{t}}
	b, err := NewBroadcaster(Config{Client: mem, Component: "test", Clock: &fakeClock{now: t0}})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	b.NewRecorder("").Event(pod, EventTypeNormal, "Tested", "one")
	b.NewRecorder("").Event(pod, EventTypeNormal, "Tested", "two")
	b.Shutdown()
	b.Run(context.Background()) // returns once the queue is empty
	if len(mem.created) != 2 {
		t.Fatalf("%d events created, want 2", len(mem.created))
	}
	// Same timestamp, distinct names.
	if a, b := mem.created[0].GetMetadata().GetName(), mem.created[1].GetMetadata().GetName(); a == b || !strings.HasPrefix(a, "web.") {
		t.Errorf("names %q and %q, want distinct web.<hex>", a, b)
	}
}

func TestRunReturnsWhenCancelled(t *testing.T) {
	b, _ := newTestBroadcaster(t, Config{Component: "test"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Run(ctx)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	b.Shutdown() // Run has returned: does not block
}
