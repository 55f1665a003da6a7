package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// recorder collects an informer's handler calls as "op name" lines and
// lets a test wait for a line.
type recorder struct {
	mu     sync.Mutex
	lines  []string
	notify chan struct{}
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{}, 1)} }

func (r *recorder) add(line string) {
	r.mu.Lock()
	r.lines = append(r.lines, line)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

func (r *recorder) handler() informer.Handler[*corev1.ConfigMap] {
	return informer.Handler[*corev1.ConfigMap]{
		OnAdd:    func(cm *corev1.ConfigMap) { r.add("add " + cm.GetMetadata().GetName()) },
		OnUpdate: func(_, cm *corev1.ConfigMap) { r.add("update " + cm.GetMetadata().GetName() + " " + cm.GetData()["v"]) },
		OnDelete: func(cm *corev1.ConfigMap) { r.add("delete " + cm.GetMetadata().GetName()) },
	}
}

// waitFor waits until line has been recorded.
func (r *recorder) waitFor(t *testing.T, line string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		for _, l := range r.lines {
			if l == line {
				r.mu.Unlock()
				return
			}
		}
		seen := append([]string(nil), r.lines...)
		r.mu.Unlock()
		select {
		case <-r.notify:
		case <-deadline:
			t.Fatalf("no %q among the handler calls %q", line, seen)
		}
	}
}

func (r *recorder) count(line string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lines {
		if l == line {
			n++
		}
	}
	return n
}

func configMap(name, v string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels},
		Data:     map[string]string{"v": v},
	}
}

// flakySource wraps a real source so a test can drop the current watch
// stream and hold new watches back.
type flakySource struct {
	informer.Source[*corev1.ConfigMap]
	mu      sync.Mutex
	current informer.Stream[*corev1.ConfigMap]
	gate    chan struct{} // while non-nil, Watch waits for it to close
	watches chan struct{} // one value per Watch started
}

func (f *flakySource) Watch(ctx context.Context, o *metav1.ListOptions) (informer.Stream[*corev1.ConfigMap], error) {
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s, err := f.Source.Watch(ctx, o)
	if err == nil {
		f.mu.Lock()
		f.current = s
		f.mu.Unlock()
	}
	select {
	case f.watches <- struct{}{}:
	default:
	}
	return s, err
}

// drop ends the current stream and holds new watches until the returned
// function is called.
func (f *flakySource) drop() (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gate := make(chan struct{})
	f.gate = gate
	if f.current != nil {
		f.current.Stop()
	}
	return func() {
		f.mu.Lock()
		f.gate = nil
		f.mu.Unlock()
		close(gate)
	}
}

func startInformer(t *testing.T, src informer.Source[*corev1.ConfigMap], m *informer.Metrics) (*informer.Informer[*corev1.ConfigMap], *recorder) {
	t.Helper()
	inf := informer.New(src, informer.Options{Metrics: m, PageSize: 2})
	rec := newRecorder()
	inf.AddHandler(rec.handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer scancel()
	if !informer.WaitForSync(sctx, inf) {
		t.Fatal("informer did not sync")
	}
	return inf, rec
}

func TestInformerListsThenWatches(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	cms := client.ConfigMaps(s.Conn)
	for _, n := range []string{"a", "b", "c", "d", "e"} { // more than one page of 2
		if _, err := cms.Create(ctx, configMap(n, "1", map[string]string{"app": n})); err != nil {
			t.Fatal(err)
		}
	}
	inf, rec := startInformer(t, informer.FromClient(cms), nil)
	if got := inf.Store().Len(); got != 5 {
		t.Fatalf("after sync the store holds %d objects, want 5", got)
	}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		rec.waitFor(t, "add "+n)
	}

	cur, _ := inf.Store().GetByName("default", "b")
	next := configMap("b", "2", map[string]string{"app": "b"})
	next.Metadata.ResourceVersion = cur.GetMetadata().GetResourceVersion()
	if _, err := cms.Update(ctx, next); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "c"}); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "update b 2")
	rec.waitFor(t, "delete c")
	if got := inf.Store().ByIndex(informer.IndexLabel, "app=d"); len(got) != 1 || got[0].GetMetadata().GetName() != "d" {
		t.Errorf("label index app=d = %v", got)
	}
	if got := inf.Store().ByNamespace("default"); len(got) != 4 {
		t.Errorf("namespace index holds %d objects, want 4", len(got))
	}
	if _, ok := inf.Store().GetByName("default", "c"); ok {
		t.Error("c is still in the store after its delete")
	}

	// A handler added late sees what is there as adds.
	late := newRecorder()
	inf.AddHandler(late.handler())
	for _, n := range []string{"a", "b", "d", "e"} {
		late.waitFor(t, "add "+n)
	}
}

func TestInformerResumesAfterADroppedStream(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	cms := client.ConfigMaps(s.Conn)
	reg := prometheus.NewRegistry()
	m := informer.NewMetrics(reg)
	src := &flakySource{Source: informer.FromClient(cms), watches: make(chan struct{}, 8)}
	_, rec := startInformer(t, src, m)
	<-src.watches

	release := src.drop()
	if _, err := cms.Create(ctx, configMap("while-away", "1", nil)); err != nil {
		t.Fatal(err)
	}
	release()
	rec.waitFor(t, "add while-away")
	if lists := testutil.ToFloat64(m.Lists("configmaps")); lists != 1 {
		t.Errorf("informer listed %v times; a dropped stream must resume the watch, not relist", lists)
	}
}

func TestInformerRelistsAfterCompaction(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	cms := client.ConfigMaps(s.Conn)
	for _, n := range []string{"keep", "gone"} {
		if _, err := cms.Create(ctx, configMap(n, "1", nil)); err != nil {
			t.Fatal(err)
		}
	}
	m := informer.NewMetrics(prometheus.NewRegistry())
	src := &flakySource{Source: informer.FromClient(cms), watches: make(chan struct{}, 8)}
	inf, rec := startInformer(t, src, m)
	<-src.watches

	// While the informer is cut off, objects change and etcd compacts
	// away the revisions it would resume from.
	release := src.drop()
	if _, err := cms.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "gone"}); err != nil {
		t.Fatal(err)
	}
	created, err := cms.Create(ctx, configMap("new", "1", nil))
	if err != nil {
		t.Fatal(err)
	}
	var rev int64
	if _, err := fmt.Sscan(created.GetMetadata().GetResourceVersion(), &rev); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EtcdClient().Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	release()

	rec.waitFor(t, "delete gone")
	rec.waitFor(t, "add new")
	if lists := testutil.ToFloat64(m.Lists("configmaps")); lists != 2 {
		t.Errorf("informer listed %v times, want 2 (the first list and one relist)", lists)
	}
	if got := inf.Store().Len(); got != 2 {
		t.Errorf("store holds %d objects after the relist, want 2", got)
	}
	if rec.count("add keep") != 1 {
		t.Errorf("an object unchanged across the relist was reported again: %d adds", rec.count("add keep"))
	}
}
