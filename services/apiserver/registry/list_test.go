package registry_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/registry"
	"skiff.dev/services/apiserver/scheme"
	"skiff.dev/services/apiserver/storage"
	"skiff.dev/services/apiserver/watchcache"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// configMaps is a registry of ConfigMaps under a prefix of its own in the
// etcd of a real apiserver, its watch cache on a clock the test steps.
type configMaps struct {
	reg   *registry.Registry[*corev1.ConfigMap]
	store *storage.Store[*corev1.ConfigMap]
	cache *watchcache.Cache[*corev1.ConfigMap]
	clock *workqueue.FakeClock
}

func newConfigMaps(t *testing.T) *configMaps { return newConfigMapsWatching(t, nil) }

// newConfigMapsWatching is newConfigMaps whose cache watches etcd through
// wrap's watcher (nil: directly).
func newConfigMapsWatching(t *testing.T, wrap func(storage.Watcher) storage.Watcher) *configMaps {
	s := apiservertest.Start(t)
	newCM := func() *corev1.ConfigMap { return &corev1.ConfigMap{} }
	kind := &scheme.Kind{
		GVK:            scheme.GroupVersionKind{GroupVersion: scheme.GroupVersion{Group: "test.skiff.dev", Version: "v1"}, Kind: "ConfigMap"},
		Resource:       "configmaps",
		Namespaced:     true,
		FieldSelectors: []string{"metadata.name", "metadata.namespace"},
	}
	strategy := &registry.Strategy[*corev1.ConfigMap]{Kind: kind}
	var watcher storage.Watcher = storage.ClientWatcher{Client: s.EtcdClient()}
	if wrap != nil {
		watcher = wrap(watcher)
	}
	store := storage.New(s.EtcdClient(), watcher, kind.GVK.Group, kind.Resource, newCM, nil)
	clock := workqueue.NewFakeClock(time.Now())
	cache := watchcache.New(watchcache.Config[*corev1.ConfigMap]{Store: store, Fields: strategy.FieldSet, Now: clock.Now})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		cache.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if err := cache.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return &configMaps{reg: registry.New(strategy, store, cache, nil), store: store, cache: cache, clock: clock}
}

// create stores a ConfigMap, waits until the cache has it, and returns
// its revision.
func (c *configMaps) create(t *testing.T, ns, name string, labels map[string]string) int64 {
	t.Helper()
	obj := &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Data: map[string]string{"k": name}}
	obj, err := c.store.Create(context.Background(), c.store.Key(ns, name), obj)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := storage.ParseRV(obj.Metadata.ResourceVersion)
	if err == nil {
		err = c.cache.WaitFresh(context.Background(), rev)
	}
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// page is what a List answered, as the wire would carry it.
type page struct {
	raws [][]byte
	meta *metav1.ListMeta
}

// pages lists with opts, following continue to the end.
func (c *configMaps) pages(t *testing.T, opts *metav1.ListOptions) []page {
	t.Helper()
	opts = proto.Clone(opts).(*metav1.ListOptions)
	var out []page
	for {
		res, err := c.reg.List(context.Background(), opts)
		if err != nil {
			t.Fatalf("List(%v) page %d: %v", opts, len(out), err)
		}
		p := page{meta: res.Meta}
		for _, e := range res.Entries {
			p.raws = append(p.raws, e.Raw)
		}
		out = append(out, p)
		if opts.Continue = res.Meta.GetContinue(); opts.Continue == "" {
			return out
		}
	}
}

func names(t *testing.T, ps []page) []string {
	t.Helper()
	var out []string
	for _, p := range ps {
		for _, raw := range p.raws {
			var cm corev1.ConfigMap
			if err := proto.Unmarshal(raw, &cm); err != nil {
				t.Fatal(err)
			}
			out = append(out, cm.Metadata.Namespace+"/"+cm.Metadata.Name+"@"+cm.Metadata.ResourceVersion)
		}
	}
	return out
}

func entryNames(t *testing.T, res *registry.ListResult[*corev1.ConfigMap]) string {
	t.Helper()
	objs, err := res.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Metadata.Namespace+"/"+o.Metadata.Name)
	}
	return fmt.Sprint(out)
}

// TestPagedListsFromTheCacheAnswerAsEtcd: the pages of a list read from
// the watch cache's snapshot are those etcd gives at the same revision,
// byte for byte: items, resourceVersion, continue tokens (so a listing
// may go on either way), with every selector; and the pages of a listing
// together are the whole list at its revision, while the cache moves on.
func TestPagedListsFromTheCacheAnswerAsEtcd(t *testing.T) {
	c := newConfigMaps(t)
	for i := range 12 {
		c.create(t, "a", fmt.Sprintf("cm-%02d", i), map[string]string{"app": []string{"web", "db"}[i%2]})
	}
	for i := range 5 {
		c.create(t, "b", fmt.Sprintf("cm-%02d", i), map[string]string{"app": "web"})
	}
	c.create(t, "ab", "cm-00", nil) // "a" must not list namespace "ab"
	cases := []struct {
		name string
		opts *metav1.ListOptions
	}{
		{"one namespace", &metav1.ListOptions{Namespace: "a"}},
		{"every namespace", &metav1.ListOptions{}},
		{"label selector", &metav1.ListOptions{LabelSelector: "app=web"}},
		{"label selector in one namespace", &metav1.ListOptions{Namespace: "a", LabelSelector: "app!=web"}},
		{"field selector", &metav1.ListOptions{FieldSelector: "metadata.name!=cm-01,metadata.namespace!=b"}},
		{"field selector matching nothing", &metav1.ListOptions{FieldSelector: "metadata.name=absent"}},
		{"labels and fields", &metav1.ListOptions{LabelSelector: "app=web", FieldSelector: "metadata.namespace=b"}},
		{"from any recent state (resourceVersion 0)", &metav1.ListOptions{Namespace: "a", ResourceVersion: "0"}},
	}
	type listing struct {
		name     string
		opts     *metav1.ListOptions
		fromEtcd []page
	}
	var listings []listing
	for _, tc := range cases {
		whole := c.pages(t, tc.opts)
		if len(whole) != 1 {
			t.Fatalf("%s: an unpaged list in %d pages", tc.name, len(whole))
		}
		for _, limit := range []int64{1, 2, 5, 100} {
			name := fmt.Sprintf("%s, limit %d", tc.name, limit)
			opts := proto.Clone(tc.opts).(*metav1.ListOptions)
			opts.Limit = limit
			paged := c.pages(t, opts)
			if got, want := names(t, paged), names(t, whole); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: pages list %v, the whole list %v", name, got, want)
			}
			selected := tc.opts.LabelSelector != "" || tc.opts.FieldSelector != ""
			seen := 0
			for i, p := range paged {
				if p.meta.ResourceVersion != whole[0].meta.ResourceVersion {
					t.Errorf("%s: page %d at revision %s, the list at %s", name, i, p.meta.ResourceVersion, whole[0].meta.ResourceVersion)
				}
				if int64(len(p.raws)) > limit {
					t.Errorf("%s: page %d of %d items", name, i, len(p.raws))
				}
				// As Kubernetes: the items after this page, on a page that
				// has a next one, of a list without selectors.
				seen += len(p.raws)
				want := "none"
				if p.meta.Continue != "" && !selected {
					want = fmt.Sprint(len(whole[0].raws) - seen)
				}
				got := "none"
				if n := p.meta.RemainingItemCount; n != nil {
					got = fmt.Sprint(*n)
				}
				if got != want {
					t.Errorf("%s: page %d: remainingItemCount %s, want %s", name, i, got, want)
				}
			}
			listings = append(listings, listing{name: name, opts: opts, fromEtcd: paged})
		}
	}
	// The cache moves on; the snapshots stay unused past their idle time
	// and go: the same pages now come from etcd.
	c.create(t, "a", "cm-99-later", map[string]string{"app": "web"})
	c.clock.Step(2 * time.Minute)
	for _, l := range listings {
		first := proto.Clone(l.opts).(*metav1.ListOptions)
		first.ResourceVersion = l.fromEtcd[0].meta.ResourceVersion // exactly the listing's revision
		etcd := c.pages(t, first)
		if len(etcd) != len(l.fromEtcd) {
			t.Errorf("%s: %d pages from the cache, %d from etcd", l.name, len(l.fromEtcd), len(etcd))
			continue
		}
		for i := range etcd {
			cached, read := l.fromEtcd[i], etcd[i]
			if !proto.Equal(cached.meta, read.meta) {
				t.Errorf("%s: page %d: metadata %v from the cache, %v from etcd", l.name, i, cached.meta, read.meta)
			}
			if fmt.Sprint(cached.raws) != fmt.Sprint(read.raws) {
				t.Errorf("%s: page %d: items %v from the cache, %v from etcd", l.name, i, names(t, []page{cached}), names(t, []page{read}))
			}
		}
	}
}

// TestPagesStayAtTheFirstPagesRevision: writes between pages do not show
// in a listing served from the cache, and a continue whose snapshot is
// gone is read from etcd at its revision; once etcd has compacted that
// revision, the continue is Expired.
func TestPagesStayAtTheFirstPagesRevision(t *testing.T) {
	c := newConfigMaps(t)
	for i := range 6 {
		c.create(t, "p", fmt.Sprintf("cm-%02d", i), nil)
	}
	ctx := context.Background()
	first, err := c.reg.List(ctx, &metav1.ListOptions{Namespace: "p", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	c.create(t, "p", "cm-01-late", nil) // sorts into the second page
	second, err := c.reg.List(ctx, &metav1.ListOptions{Namespace: "p", Limit: 2, Continue: first.Meta.Continue})
	if err != nil {
		t.Fatal(err)
	}
	if got := entryNames(t, second); got != "[p/cm-02 p/cm-03]" || second.Meta.ResourceVersion != first.Meta.ResourceVersion {
		t.Fatalf("second page %s at %s, want [p/cm-02 p/cm-03] at the first page's %s", got, second.Meta.ResourceVersion, first.Meta.ResourceVersion)
	}
	// Past the snapshot's idle time: the third page comes from etcd, still
	// at the first page's revision.
	c.clock.Step(2 * time.Minute)
	third, err := c.reg.List(ctx, &metav1.ListOptions{Namespace: "p", Limit: 2, Continue: second.Meta.Continue})
	if err != nil {
		t.Fatal(err)
	}
	if got := entryNames(t, third); got != "[p/cm-04 p/cm-05]" || third.Meta.Continue != "" || third.Meta.ResourceVersion != first.Meta.ResourceVersion {
		t.Fatalf("third page %s at %s (continue %q), want [p/cm-04 p/cm-05] at %s, the last", got, third.Meta.ResourceVersion, third.Meta.Continue, first.Meta.ResourceVersion)
	}
	// A new listing's snapshot; etcd compacts its revision: its continue
	// is refused though the snapshot still has the state.
	again, err := c.reg.List(ctx, &metav1.ListOptions{Namespace: "p", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	later := c.create(t, "p", "cm-99", nil)
	if _, err := c.store.Client().Compact(ctx, later); err != nil {
		t.Fatal(err)
	}
	_, err = c.reg.List(ctx, &metav1.ListOptions{Namespace: "p", Limit: 2, Continue: again.Meta.Continue})
	if !apierrors.IsExpired(err) || !strings.Contains(err.Error(), "continue parameter is too old") {
		t.Fatalf("continue at a compacted revision: %v, want Expired", err)
	}
	// The same while the cache is still at the listing's revision: a
	// write elsewhere in etcd moved etcd's revision, and etcd compacted
	// up to it.
	third, err = c.reg.List(ctx, &metav1.ListOptions{Namespace: "p", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	put, err := c.store.Client().Put(ctx, "/elsewhere", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.store.Client().Compact(ctx, put.Header.Revision); err != nil {
		t.Fatal(err)
	}
	if rev := c.cache.Revision(); fmt.Sprint(rev) != third.Meta.ResourceVersion {
		t.Fatalf("the cache moved to revision %d: it heard of a write to another prefix", rev)
	}
	_, err = c.reg.List(ctx, &metav1.ListOptions{Namespace: "p", Limit: 2, Continue: third.Meta.Continue})
	if !apierrors.IsExpired(err) {
		t.Fatalf("continue at a compacted revision the cache is still at: %v, want Expired", err)
	}
}

// TestCacheSnapshotsAreBounded: the watch cache's snapshots for paged
// lists are the state at their revision whatever comes after, shared by
// the listings of one revision, at most 16 (the least recently used goes)
// and each gone a minute after its last use; a revision without one is
// the caller's to read from etcd.
func TestCacheSnapshotsAreBounded(t *testing.T) {
	c := newConfigMaps(t)
	page := func(s watchcache.Snapshot[*corev1.ConfigMap]) string {
		entries, _ := s.Page(c.store.NamespacePrefix("s"), "", 0, nil)
		var out []string
		for _, e := range entries {
			out = append(out, e.Name)
		}
		return fmt.Sprint(out)
	}
	c.create(t, "s", "a", nil)
	first := c.cache.Snapshot()
	if again := c.cache.Snapshot(); again.Rev != first.Rev || page(again) != "[a]" {
		t.Fatalf("a second snapshot without a write in between: %d %s, want %d [a]", again.Rev, page(again), first.Rev)
	}
	revs := []int64{first.Rev}
	for i := range 16 {
		c.clock.Step(time.Second)
		c.create(t, "s", fmt.Sprintf("b%02d", i), nil)
		revs = append(revs, c.cache.Snapshot().Rev)
	}
	if got := page(first); got != "[a]" {
		t.Fatalf("the first snapshot after 16 writes lists %s, want [a]", got)
	}
	// 17 snapshots were taken: the first, least recently used, is gone.
	if _, ok := c.cache.SnapshotAt(revs[0]); ok {
		t.Fatalf("revision %d still has its snapshot among 17", revs[0])
	}
	s, ok := c.cache.SnapshotAt(revs[1])
	if !ok || page(s) != "[a b00]" {
		t.Fatalf("revision %d: snapshot %v listing %s, want [a b00]", revs[1], ok, page(s))
	}
	// Unused for a minute, they all go; the current state is still
	// there for the current revision.
	c.clock.Step(time.Minute)
	if _, ok := c.cache.SnapshotAt(revs[1]); ok {
		t.Fatalf("revision %d has a snapshot a minute after its last use", revs[1])
	}
	if s, ok := c.cache.SnapshotAt(revs[16]); !ok || s.Rev != revs[16] {
		t.Fatalf("the current revision %d: snapshot %v at %d", revs[16], ok, s.Rev)
	}
}
