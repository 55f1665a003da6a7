package endpointslice_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/object"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/endpointslice"
	"skiff.dev/services/controller-manager/manager/managertest"
)

// TestLaggingSliceCache: when the controller's slices cache shows its own
// writes only half a second later, the syncs in between wait for it
// (counted as stale) instead of creating the slice again: one slice, one
// create, whatever the pod changes meanwhile.
func TestLaggingSliceCache(t *testing.T) {
	env := managertest.Start(t)
	lagging := informer.New(laggingSource[*discoveryv1.EndpointSlice]{informer.FromClient(client.EndpointSlices(env.Conn)), 500 * time.Millisecond}, informer.Options{})
	env.Go(lagging.Run)
	ctrl := endpointslice.NewOnSlices(env.Manager, endpointslice.Options{}, lagging)
	c := &cluster{
		Env:      env,
		slices:   informer.For(env.Manager.Informers, client.EndpointSlices(env.Conn)), // up to date
		services: informer.For(env.Manager.Informers, client.Services(env.Conn)),
	}
	managertest.Watch(env, c.slices)
	env.StartInformers()
	env.GoErr(ctrl.Run)

	c.node(t, "node-a", "")
	c.service(t, "web", web, port("http", 80, 8080))
	var want []endpoint
	for i := range 5 {
		// Each pod wakes the Service well within the lag of the
		// previous write.
		name := fmt.Sprintf("p%d", i)
		c.pod(t, podSpec{name: name, labels: web, node: "node-a", ip: fmt.Sprintf("10.0.0.%d", i+1), ready: true})
		want = append(want, endpoint{name, true, true, false})
	}
	c.awaitEndpoints(t, "web", want...)
	if ss := c.slicesOf("web"); len(ss) != 1 {
		t.Errorf("slices %v, want one", names(ss))
	}
	if n := c.Metric("endpoint_slice_controller_changes_total", "operation", "create"); n != 1 {
		t.Errorf("%v creates, want 1", n)
	}
	if n := c.Metric("endpoint_slice_controller_syncs_total", "result", "stale"); n == 0 {
		t.Errorf("no sync found the cache stale: the test did not exercise the lag")
	}
}

// laggingSource delays every watch event of a Source by lag.
type laggingSource[T object.Object] struct {
	informer.Source[T]
	lag time.Duration
}

func (s laggingSource[T]) Watch(ctx context.Context, o *metav1.ListOptions) (informer.Stream[T], error) {
	inner, err := s.Source.Watch(ctx, o)
	if err != nil {
		return nil, err
	}
	l := &laggingStream[T]{inner: inner, lag: s.lag, events: make(chan timedEvent[T], 1<<12), stop: make(chan struct{})}
	go l.pump()
	return l, nil
}

type timedEvent[T object.Object] struct {
	ev  client.Event[T]
	err error
	at  time.Time
}

type laggingStream[T object.Object] struct {
	inner    informer.Stream[T]
	lag      time.Duration
	events   chan timedEvent[T]
	stop     chan struct{}
	stopOnce sync.Once
}

func (l *laggingStream[T]) pump() {
	for {
		ev, err := l.inner.Next()
		select {
		case l.events <- timedEvent[T]{ev, err, time.Now()}:
		case <-l.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

func (l *laggingStream[T]) Next() (client.Event[T], error) {
	select {
	case te := <-l.events:
		if d := time.Until(te.at.Add(l.lag)); d > 0 && te.err == nil {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-l.stop:
				return client.Event[T]{}, context.Canceled
			}
		}
		return te.ev, te.err
	case <-l.stop:
		return client.Event[T]{}, context.Canceled
	}
}

func (l *laggingStream[T]) Stop() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.inner.Stop()
}
