package informer

import (
	"context"
	"sync"
	"testing"
	"time"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// fixedSource lists a fixed set of pods and then watches forever.
type fixedSource struct {
	pods []*corev1.Pod
}

func (f fixedSource) List(context.Context, *metav1.ListOptions) ([]*corev1.Pod, *metav1.ListMeta, error) {
	return f.pods, &metav1.ListMeta{ResourceVersion: "10"}, nil
}

func (f fixedSource) Watch(ctx context.Context, _ *metav1.ListOptions) (Stream[*corev1.Pod], error) {
	return blockingStream{ctx}, nil
}

func (fixedSource) Resource() string { return "pods" }

type blockingStream struct{ ctx context.Context }

func (s blockingStream) Next() (client.Event[*corev1.Pod], error) {
	<-s.ctx.Done()
	return client.Event[*corev1.Pod]{}, s.ctx.Err()
}

func (blockingStream) Stop() {}

// TestResyncReplaysEveryObject: with a resync period, handlers get
// OnUpdate(obj, obj) for every cached object although nothing changed.
func TestResyncReplaysEveryObject(t *testing.T) {
	src := fixedSource{pods: []*corev1.Pod{pod("a", "p1", "", "1", nil), pod("a", "p2", "", "2", nil)}}
	inf := New[*corev1.Pod](src, Options{Resync: 20 * time.Millisecond})
	var mu sync.Mutex
	resynced := map[string]int{}
	done := make(chan struct{})
	var once sync.Once
	inf.AddHandler(Handler[*corev1.Pod]{OnUpdate: func(old, cur *corev1.Pod) {
		if old != cur {
			t.Errorf("resync passed two different objects for %s", Key(cur))
		}
		mu.Lock()
		defer mu.Unlock()
		resynced[Key(cur)]++
		if resynced["a/p1"] >= 2 && resynced["a/p2"] >= 2 {
			once.Do(func() { close(done) })
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); inf.Run(ctx) }()
	defer func() { cancel(); <-stopped }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("after 10s, resyncs per object: %v; want at least 2 each", resynced)
	}
	if rv := inf.ResourceVersion(); rv != "10" {
		t.Errorf("ResourceVersion = %q, want the list's 10", rv)
	}
}
