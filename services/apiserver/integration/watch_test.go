package integration

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
)

type seen struct{ typ, name, rv string }

func (s seen) String() string { return s.typ + " " + s.name }

// next reads one event or fails the test.
func next(t *testing.T, w *client.WatchStream[*corev1.ConfigMap]) seen {
	t.Helper()
	ev, err := w.Next()
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	return seen{ev.Type, ev.Object.GetMetadata().GetName(), ev.Object.GetMetadata().GetResourceVersion()}
}

func expect(t *testing.T, w *client.WatchStream[*corev1.ConfigMap], want ...string) {
	t.Helper()
	for _, wnt := range want {
		if got := next(t, w); got.String() != wnt {
			t.Fatalf("got event %q, want %q", got, wnt)
		}
	}
}

func cm(ns, name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Data: map[string]string{"k": "v"}}
}

func TestWatchFromNowAndFromRevision(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)
	a, err := cms.Create(ctx, cm("w", "a", nil))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := cms.Create(ctx, cm("w", "b", nil))
	a.Data["k"] = "v2"
	if _, err := cms.Update(ctx, a); err != nil {
		t.Fatal(err)
	}

	t.Run("no resourceVersion: current state as ADDED, then changes", func(t *testing.T) {
		w, err := cms.Watch(ctx, &metav1.ListOptions{Namespace: "w"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		expect(t, w, "ADDED a", "ADDED b")
		if _, err := cms.Create(ctx, cm("w", "c", nil)); err != nil {
			t.Fatal(err)
		}
		expect(t, w, "ADDED c")
	})
	t.Run("from a revision: the changes after it", func(t *testing.T) {
		w, err := cms.Watch(ctx, &metav1.ListOptions{Namespace: "w", ResourceVersion: a.Metadata.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		expect(t, w, "ADDED b", "MODIFIED a", "ADDED c")
		if _, err := cms.Delete(ctx, &metav1.DeleteRequest{Namespace: "w", Name: "b"}); err != nil {
			t.Fatal(err)
		}
		ev := next(t, w)
		if ev.String() != "DELETED b" {
			t.Fatalf("got %v, want DELETED b", ev)
		}
		if rv, _ := strconv.Atoi(ev.rv); rv <= mustAtoi(b.Metadata.ResourceVersion) {
			t.Fatalf("DELETED event carries resourceVersion %s, want the deletion's revision", ev.rv)
		}
	})
	t.Run("list then watch from the list's revision misses nothing", func(t *testing.T) {
		l, err := cms.List(ctx, &metav1.ListOptions{Namespace: "w"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cms.Create(ctx, cm("w", "d", nil)); err != nil {
			t.Fatal(err)
		}
		w, err := cms.Watch(ctx, &metav1.ListOptions{Namespace: "w", ResourceVersion: l.Metadata.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		expect(t, w, "ADDED d")
	})
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func TestWatchSelectorsOnTheServer(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)
	w, err := cms.Watch(ctx, &metav1.ListOptions{Namespace: "sel", LabelSelector: "app=web", FieldSelector: "metadata.name!=skip"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	x, _ := cms.Create(ctx, cm("sel", "x", map[string]string{"app": "db"}))    // not matching
	_, _ = cms.Create(ctx, cm("sel", "skip", map[string]string{"app": "web"})) // field selector excludes
	_, _ = cms.Create(ctx, cm("other", "y", map[string]string{"app": "web"}))  // other namespace
	x.Metadata.Labels["app"] = "web"                                           // starts matching: ADDED
	x, _ = cms.Update(ctx, x)
	x.Data["k"] = "v2" // still matching: MODIFIED
	x, _ = cms.Update(ctx, x)
	x.Metadata.Labels["app"] = "db" // stops matching: DELETED
	if _, err := cms.Update(ctx, x); err != nil {
		t.Fatal(err)
	}
	expect(t, w, "ADDED x", "MODIFIED x", "DELETED x")
}

func TestWatchBookmarks(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) { c.BookmarkInterval = 200 * time.Millisecond }))
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)
	w, err := cms.Watch(ctx, &metav1.ListOptions{Namespace: "bm", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// A write to another resource moves etcd's revision; the bookmark must reach it.
	n, err := client.Nodes(s.Conn).Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n1"}})
	if err != nil {
		t.Fatal(err)
	}
	target := mustAtoi(n.Metadata.ResourceVersion)
	for {
		ev := next(t, w)
		if ev.typ != "BOOKMARK" {
			t.Fatalf("unexpected event %v", ev)
		}
		if mustAtoi(ev.rv) >= target {
			return
		}
	}
}

func TestWatchFromCompactedRevisionIsExpired(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)
	first, err := cms.Create(ctx, cm("c", "first", nil))
	if err != nil {
		t.Fatal(err)
	}
	var last *corev1.ConfigMap
	for i := 0; i < 5; i++ {
		if last, err = cms.Create(ctx, cm("c", fmt.Sprint("n", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	// Compact through a plain etcd client, as an operator would.
	if _, err := s.EtcdClient().Compact(ctx, int64(mustAtoi(last.Metadata.ResourceVersion))); err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, &metav1.ListOptions{Namespace: "c", ResourceVersion: first.Metadata.ResourceVersion})
	if err == nil {
		_, err = w.Next()
	}
	if !apierrors.IsExpired(err) || status.Code(err) != codes.OutOfRange {
		t.Fatalf("watch from a compacted revision: want Expired (OUT_OF_RANGE), got %v", err)
	}
	se := apierrors.FromError(err)
	if se.Status.GetCode() != 410 || !strings.Contains(se.Error(), "too old resource version") {
		t.Fatalf("want code 410 and a clear message, got %v", se.Status)
	}
	// The documented recovery: list, then watch from the list's revision.
	l, err := cms.List(ctx, &metav1.ListOptions{Namespace: "c"})
	if err != nil {
		t.Fatal(err)
	}
	w, err = cms.Watch(ctx, &metav1.ListOptions{Namespace: "c", ResourceVersion: l.Metadata.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cms.Create(ctx, cm("c", "after", nil)); err != nil {
		t.Fatal(err)
	}
	expect(t, w, "ADDED after")
	// A paged list continuing from a compacted revision is Expired too.
	p, err := cms.List(ctx, &metav1.ListOptions{Namespace: "c", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := cms.Create(ctx, cm("c", "later", nil))
	if _, err := s.EtcdClient().Compact(ctx, int64(mustAtoi(cur.Metadata.ResourceVersion))); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.List(ctx, &metav1.ListOptions{Namespace: "c", Limit: 2, Continue: p.Metadata.Continue}); !apierrors.IsExpired(err) {
		t.Fatalf("continue after compaction: want Expired, got %v", err)
	}
}

func TestSlowWatcherIsCutOffWhileFastOneKeepsUp(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) { c.WatcherBuffer = 64 }))
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)
	// The slow watcher has its own connection and never reads, so HTTP/2
	// flow control stops the server's sends and its buffer fills up.
	slowConn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer slowConn.Close()
	slow, err := client.ConfigMaps(slowConn).Watch(ctx, &metav1.ListOptions{Namespace: "slow", ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	fast, err := cms.Watch(ctx, &metav1.ListOptions{Namespace: "slow", ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()

	const writes = 400
	payload := strings.Repeat("x", 32<<10)
	done := make(chan error, 1)
	go func() {
		for i := 0; i < writes; i++ {
			if _, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "slow", Name: fmt.Sprint("o", i)}, Data: map[string]string{"p": payload}}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < writes; i++ {
		if ev := next(t, fast); ev.name != fmt.Sprint("o", i) {
			t.Fatalf("fast watcher: event %d is %v", i, ev)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The slow watcher gets what was in flight, then the cut-off status.
	var err2 error
	got, lastRV := 0, ""
	for err2 == nil {
		var ev client.Event[*corev1.ConfigMap]
		if ev, err2 = slow.Next(); err2 == nil {
			got++
			lastRV = ev.Object.GetMetadata().GetResourceVersion()
		}
	}
	if !apierrors.IsServiceUnavailable(err2) || !strings.Contains(err2.Error(), "too slow") {
		t.Fatalf("slow watcher: want ServiceUnavailable 'too slow' after %d events, got %v", got, err2)
	}
	if got >= writes {
		t.Fatalf("slow watcher received all %d events: it was never cut off", got)
	}
	if n := metricSum(t, s, "apiserver_terminated_watchers_total"); n < 1 {
		t.Fatalf("apiserver_terminated_watchers_total = %v, want >= 1", n)
	}
	// As the status says, it watches again from the last resourceVersion
	// it received, and gets the rest, more than its 64 events of lag: what
	// a watch starts with is not lag.
	if lastRV == "" {
		lastRV = "1"
	}
	resumed, err := client.ConfigMaps(slowConn).Watch(ctx, &metav1.ListOptions{Namespace: "slow", ResourceVersion: lastRV})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Stop()
	for i := got; i < writes; i++ {
		ev, err := resumed.Next()
		if err != nil {
			t.Fatalf("the watch resumed from resourceVersion %s after %d of %d events: %v", lastRV, i, writes, err)
		}
		if name := ev.Object.GetMetadata().GetName(); name != fmt.Sprint("o", i) {
			t.Fatalf("the resumed watch's event %d is %s, want o%d", i, name, i)
		}
	}
}

func TestWatchTimeoutAndShutdownEndCleanly(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)
	w, err := cms.Watch(ctx, &metav1.ListOptions{Namespace: "t", TimeoutSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("watch with timeoutSeconds: want a clean end (EOF), got %v", err)
	}
	// Shutdown: the watch (on its own connection) ends with a status, not a hang.
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w, err = client.ConfigMaps(conn).Watch(ctx, &metav1.ListOptions{Namespace: "t"})
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { s.Stop(); close(stopped) }()
	if _, err := w.Next(); !apierrors.IsServiceUnavailable(err) && !errors.Is(err, io.EOF) {
		t.Fatalf("watch during shutdown: want ServiceUnavailable or EOF, got %v", err)
	}
	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("server did not stop")
	}
}

// metricSum adds up every series of a counter or gauge in the server's registry.
func metricSum(t *testing.T, s *apiservertest.Server, name string) float64 {
	t.Helper()
	return seriesSum(t, s.Registry, name, nil)
}

// seriesSum adds up the series of a counter or gauge in g whose labels
// include want.
func seriesSum(t *testing.T, g prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				if !hasLabel(m.GetLabel(), k, v) {
					continue series
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

func hasLabel(labels []*dto.LabelPair, name, value string) bool {
	for _, l := range labels {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}

func TestWatchOlderThanTheCacheWindowIsExpired(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) { c.WatchCacheWindow = 5 }))
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)
	first, err := cms.Create(ctx, cm("win", "first", nil))
	if err != nil {
		t.Fatal(err)
	}
	var last *corev1.ConfigMap
	for i := 0; i < 10; i++ {
		if last, err = cms.Create(ctx, cm("win", fmt.Sprint("n", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	// Make sure the cache has seen the last write before asking.
	if _, err := cms.List(ctx, &metav1.ListOptions{Namespace: "win", ResourceVersion: last.Metadata.ResourceVersion}); err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, &metav1.ListOptions{Namespace: "win", ResourceVersion: first.Metadata.ResourceVersion})
	if err == nil {
		_, err = w.Next()
	}
	if !apierrors.IsExpired(err) {
		t.Fatalf("watch older than the window: want Expired, got %v", err)
	}
	// Within the window it works: the last three events.
	w, err = cms.Watch(ctx, &metav1.ListOptions{Namespace: "win", ResourceVersion: fmt.Sprint(mustAtoi(last.Metadata.ResourceVersion) - 3)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	expect(t, w, "ADDED n7", "ADDED n8", "ADDED n9")
}

// Watchers of one namespace without a selector share each batch's
// encoded messages; what every watcher receives is still exactly its own
// events, in order, whichever watcher encoded them.
func TestWatchersShareBatches(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)
	type watch struct {
		name string
		opts *metav1.ListOptions
		want func(ns, name string, labels map[string]string) bool
	}
	watches := []watch{
		{"all namespaces", &metav1.ListOptions{}, func(string, string, map[string]string) bool { return true }},
		{"namespace b", &metav1.ListOptions{Namespace: "share-b"}, func(ns, _ string, _ map[string]string) bool { return ns == "share-b" }},
		{"label selector", &metav1.ListOptions{Namespace: "share-a", LabelSelector: "odd=true"}, func(ns, _ string, l map[string]string) bool {
			return ns == "share-a" && l["odd"] == "true"
		}},
	}
	const sharers = 8
	for i := range sharers {
		watches = append(watches, watch{fmt.Sprintf("namespace a #%d", i), &metav1.ListOptions{Namespace: "share-a"},
			func(ns, _ string, _ map[string]string) bool { return ns == "share-a" }})
	}
	streams := make([]*client.WatchStream[*corev1.ConfigMap], len(watches))
	for i, w := range watches {
		st, err := cms.Watch(ctx, w.opts)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Stop()
		streams[i] = st
	}

	// 8 writers create 300 objects (a third in namespace b), each then
	// updated once; every one lands in several batches' worth of time.
	type write struct {
		ns, name string
		labels   map[string]string
	}
	var writes []write
	for i := range 300 {
		ns := "share-a"
		if i%3 == 0 {
			ns = "share-b"
		}
		writes = append(writes, write{ns, fmt.Sprintf("cm-%03d", i), map[string]string{"odd": strconv.FormatBool(i%2 == 1)}})
	}
	errs := make(chan error, 8)
	for wr := range 8 {
		go func() {
			for i := wr; i < len(writes); i += 8 {
				w := writes[i]
				obj, err := cms.Create(ctx, cm(w.ns, w.name, w.labels))
				if err == nil {
					obj.Data["k"] = "v2"
					_, err = cms.Update(ctx, obj)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	var sharedOrder []seen
	for i, w := range watches {
		want := 0
		for _, wr := range writes {
			if w.want(wr.ns, wr.name, wr.labels) {
				want += 2
			}
		}
		var got []seen
		added := map[string]bool{}
		lastRV := 0
		for len(got) < want {
			ev := next(t, streams[i])
			got = append(got, ev)
			rv := mustAtoi(ev.rv)
			if rv <= lastRV {
				t.Fatalf("%s: %v at resourceVersion %d after %d", w.name, ev, rv, lastRV)
			}
			lastRV = rv
			switch ev.typ {
			case "ADDED":
				added[ev.name] = true
			case "MODIFIED":
				if !added[ev.name] {
					t.Fatalf("%s: %v before its ADDED", w.name, ev)
				}
			default:
				t.Fatalf("%s: unexpected %v", w.name, ev)
			}
		}
		if len(added) != want/2 {
			t.Fatalf("%s: %d objects added, want %d", w.name, len(added), want/2)
		}
		if strings.HasPrefix(w.name, "namespace a") {
			if sharedOrder == nil {
				sharedOrder = got
			} else if fmt.Sprint(got) != fmt.Sprint(sharedOrder) {
				t.Fatalf("%s received %v, the first watcher of the namespace %v", w.name, got, sharedOrder)
			}
		}
	}

	res := map[string]string{"resource": "configmaps"}
	batches := metricValue(t, s, "apiserver_watch_cache_batches_total", res)
	shared := metricValue(t, s, "apiserver_watch_cache_shared_encodings_total", res)
	// Two groups can share (all namespaces, namespace a: the 8 watchers;
	// namespace b has one watcher, which encodes for itself through the
	// same path): at most one encoding per group and batch, whereas 10
	// watchers encoding each batch themselves would make up to 10.
	if shared == 0 || shared > 3*batches {
		t.Fatalf("%v shared encodings for %v batches, want 1 to %v", shared, batches, 3*batches)
	}
	t.Logf("%v batches, %v shared encodings", batches, shared)
}

// The first event after a quiet spell is published at once, whatever the
// batch interval.
func TestWatchFirstEventAfterQuietGoesAtOnce(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) { c.WatchBatchInterval = time.Hour }))
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)
	w, err := cms.Watch(ctx, &metav1.ListOptions{Namespace: "quiet"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cms.Create(ctx, cm("quiet", "first", nil)); err != nil {
		t.Fatal(err)
	}
	expect(t, w, "ADDED first") // an hour's wait would end at the test's deadline
}
