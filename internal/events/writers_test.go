package events

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// overlapClient keeps events in memory, with resourceVersions, and
// watches the calls: it records any two calls about one aggregated event
// in flight at once, and any update that does not raise the stored count.
// Its calls wait until want of them are in flight at once (or until
// release), so that a test can see that different events are written in
// parallel.
type overlapClient struct {
	want int

	mu       sync.Mutex
	events   map[string]*corev1.Event // by name
	rv       int
	inFlight map[string]int // by aggregateKey
	total    int            // calls in flight
	problems []string
	creates  int
	updates  int

	parallel    chan struct{} // closed once want calls were in flight at once, or on release
	releaseOnce sync.Once
}

func newOverlapClient(want int) *overlapClient {
	return &overlapClient{
		want:     want,
		events:   map[string]*corev1.Event{},
		inFlight: map[string]int{},
		parallel: make(chan struct{}),
	}
}

func (c *overlapClient) release() { c.releaseOnce.Do(func() { close(c.parallel) }) }

// enter marks a call about key in flight and waits for want calls in
// flight; the returned func marks it done.
func (c *overlapClient) enter(ctx context.Context, verb, key string) (func(), error) {
	c.mu.Lock()
	c.inFlight[key]++
	if n := c.inFlight[key]; n > 1 {
		c.problems = append(c.problems, fmt.Sprintf("%s while %d calls about %q in flight", verb, n-1, key))
	}
	c.total++
	if c.total >= c.want {
		c.release()
	}
	c.mu.Unlock()
	done := func() {
		c.mu.Lock()
		c.inFlight[key]--
		c.total--
		c.mu.Unlock()
	}
	select {
	case <-c.parallel:
		return done, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}

func (c *overlapClient) Create(ctx context.Context, ev *corev1.Event, _ ...grpc.CallOption) (*corev1.Event, error) {
	done, err := c.enter(ctx, "create", aggregateKey(ev))
	if err != nil {
		return nil, err
	}
	defer done()
	c.mu.Lock()
	defer c.mu.Unlock()
	name := ev.GetMetadata().GetName()
	if _, ok := c.events[name]; ok {
		return nil, apierrors.NewAlreadyExists("events", name)
	}
	c.creates++
	return c.store(ev), nil
}

func (c *overlapClient) Update(ctx context.Context, ev *corev1.Event, _ ...grpc.CallOption) (*corev1.Event, error) {
	done, err := c.enter(ctx, "update", aggregateKey(ev))
	if err != nil {
		return nil, err
	}
	defer done()
	c.mu.Lock()
	defer c.mu.Unlock()
	name := ev.GetMetadata().GetName()
	cur, ok := c.events[name]
	if !ok {
		return nil, apierrors.NewNotFound("events", name)
	}
	if cur.GetMetadata().GetResourceVersion() != ev.GetMetadata().GetResourceVersion() {
		return nil, apierrors.NewConflict("events", name, "stale resourceVersion")
	}
	if ev.GetCount() <= cur.GetCount() {
		c.problems = append(c.problems, fmt.Sprintf("update of %s from count %d to %d", name, cur.GetCount(), ev.GetCount()))
	}
	c.updates++
	return c.store(ev), nil
}

func (c *overlapClient) Get(context.Context, string, string, ...grpc.CallOption) (*corev1.Event, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.problems = append(c.problems, "Get called: no update should conflict")
	return nil, apierrors.NewInternal(fmt.Errorf("unexpected Get"))
}

// store keeps a copy of ev at the next resourceVersion; c.mu held.
func (c *overlapClient) store(ev *corev1.Event) *corev1.Event {
	c.rv++
	ev = proto.Clone(ev).(*corev1.Event)
	ev.Metadata.ResourceVersion = strconv.Itoa(c.rv)
	c.events[ev.Metadata.Name] = ev
	return proto.Clone(ev).(*corev1.Event)
}

func TestWritesOfOneEventAreSerialAndOfDifferentEventsParallel(t *testing.T) {
	const writers, repeats = 4, 3
	fake := newOverlapClient(writers)
	reg := prometheus.NewRegistry()
	b, err := NewBroadcaster(Config{Client: fake, Component: "test", Clock: &fakeClock{now: t0}, Writers: writers, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	// Pods whose events cover every writer at least twice.
	var pods []*corev1.Pod
	perWriter := make([]int, writers)
	for i := 0; slices.Min(perWriter) < 2; i++ {
		if i == 1000 {
			t.Fatalf("1000 pods' events spread on writers as %v", perWriter)
		}
		pod := &corev1.Pod{ApiVersion: "v1", Kind: "Pod", Metadata: &metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("pod-%d", i), Uid: fmt.Sprintf("uid-%d", i)}}
		perWriter[shard(b.newEvent("test", RefOf(pod), EventTypeNormal, "Tested", "hello"), writers)]++
		pods = append(pods, pod)
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Run(context.Background())
	}()
	rec := b.NewRecorder("")
	// Each pod's repeats are recorded back to back: a pool that did not
	// keep them on one writer would write them concurrently.
	for _, pod := range pods {
		for range repeats {
			rec.Event(pod, EventTypeNormal, "Tested", "hello")
		}
	}

	select {
	case <-fake.parallel:
	case <-time.After(10 * time.Second):
		fake.release()
		t.Errorf("%d writes were never in flight at once", writers)
	}
	b.Shutdown() // writes everything queued, then returns
	<-done

	fake.mu.Lock()
	defer fake.mu.Unlock()
	for _, p := range fake.problems {
		t.Error(p)
	}
	if fake.creates != len(pods) || fake.updates != len(pods)*(repeats-1) {
		t.Errorf("%d creates and %d updates, want %d and %d", fake.creates, fake.updates, len(pods), len(pods)*(repeats-1))
	}
	counts := map[string]int32{}
	for _, ev := range fake.events {
		counts[ev.GetInvolvedObject().GetName()] = ev.GetCount()
	}
	for _, pod := range pods {
		if got := counts[pod.Metadata.Name]; got != repeats {
			t.Errorf("event about %s: count %d, want %d", pod.Metadata.Name, got, repeats)
		}
	}
	if got := writeDurationCount(t, reg); got != uint64(len(pods)*repeats) {
		t.Errorf("events_write_duration_seconds_count = %d, want %d", got, len(pods)*repeats)
	}
}

// A repeat differs from the first event in its time, name, count and the
// object's resourceVersion; it still goes to the first one's writer.
func TestRepeatsGoToOneWriter(t *testing.T) {
	a := eventAt("web", "hello", t0)
	b := eventAt("web", "hello", t0.Add(time.Minute))
	b.InvolvedObject.ResourceVersion = "42"
	b.Metadata = &metav1.ObjectMeta{Name: "web.other"}
	b.Count = 7
	for n := 1; n <= 16; n++ {
		if shard(a, n) != shard(b, n) {
			t.Errorf("shard(_, %d): repeats of one event on writers %d and %d", n, shard(a, n), shard(b, n))
		}
	}
}

func writeDurationCount(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "events_write_duration_seconds" {
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}

// blockingClient's Create waits until its context is done.
type blockingClient struct {
	unusedClient
	entered  chan struct{} // receives when a Create starts
	returned chan struct{} // closed when a Create returns
}

func (c *blockingClient) Create(ctx context.Context, _ *corev1.Event, _ ...grpc.CallOption) (*corev1.Event, error) {
	c.entered <- struct{}{}
	<-ctx.Done()
	close(c.returned)
	return nil, ctx.Err()
}

func TestRunWaitsForItsWriters(t *testing.T) {
	bc := &blockingClient{unusedClient: unusedClient{t}, entered: make(chan struct{}), returned: make(chan struct{})}
	b, err := NewBroadcaster(Config{Client: bc, Component: "test", Clock: &fakeClock{now: t0}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Run(ctx)
	}()
	b.NewRecorder("").Event(&corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"}}, EventTypeNormal, "Tested", "hello")
	select {
	case <-bc.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the event was never written")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	select {
	case <-bc.returned:
	default:
		t.Error("Run returned before its writer's Create")
	}
}
