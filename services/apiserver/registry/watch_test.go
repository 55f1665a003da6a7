package registry_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/storage"
)

// TestWatchWithoutResourceVersionStartsConsistent: a watch without a
// resourceVersion starts, as Kubernetes', from the most recent state,
// which must be consistent: what etcd has when it is asked, even when the
// watch cache is behind (here, its feed from etcd held back). CI saw the
// older state come first, then as a change what was there before the
// watch (TestWatchFromNowAndFromRevision: "MODIFIED a", want "ADDED c").
func TestWatchWithoutResourceVersionStartsConsistent(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	c := newConfigMapsWatching(t, g.wrap)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g.hold() // the cache sees nothing from here on, until open
	later, err := c.store.Create(ctx, c.store.Key("w", "b"), &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "w", Name: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := storage.ParseRV(later.Metadata.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	// The cache catches up only once the feed opens again, a moment after
	// the watch is asked for.
	opened := time.AfterFunc(200*time.Millisecond, g.release)
	defer opened.Stop()
	w, err := c.reg.Watch(ctx, &metav1.ListOptions{Namespace: "w"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if got := c.cache.Revision(); got < rev {
		t.Fatalf("the watch started with the cache at revision %d, before the create at %d that etcd had when it was asked", got, rev)
	}
}

// gate holds back a watcher's responses between hold and release.
type gate struct {
	open chan struct{} // closed: responses flow
	held atomic.Bool
}

func (g *gate) hold()    { g.held.Store(true) }
func (g *gate) release() { close(g.open) }

func (g *gate) wrap(w storage.Watcher) storage.Watcher { return gatedWatcher{w, g} }

type gatedWatcher struct {
	storage.Watcher
	g *gate
}

func (w gatedWatcher) Watch(ctx context.Context, prefix string, afterRev int64) storage.WatchStream {
	in := w.Watcher.Watch(ctx, prefix, afterRev)
	s := &gatedStream{WatchStream: in, out: make(chan storage.WatchResponse), closed: make(chan struct{})}
	go func() {
		defer close(s.out)
		for r := range in.Responses() {
			if w.g.held.Load() {
				select {
				case <-w.g.open:
				case <-s.closed:
					return
				}
			}
			select {
			case s.out <- r:
			case <-s.closed:
				return
			}
		}
	}()
	return s
}

type gatedStream struct {
	storage.WatchStream
	out       chan storage.WatchResponse
	closed    chan struct{}
	closeOnce sync.Once
}

func (s *gatedStream) Responses() <-chan storage.WatchResponse { return s.out }

func (s *gatedStream) Close() {
	s.closeOnce.Do(func() { close(s.closed) })
	s.WatchStream.Close()
}
