package integration

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
)

func names[T interface{ GetMetadata() *metav1.ObjectMeta }](items []T) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.GetMetadata().GetName()
	}
	sort.Strings(out)
	return out
}

func TestListSelectors(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	pods := client.Pods(s.Conn)
	for _, p := range []struct {
		name, ns string
		labels   map[string]string
		node     string
	}{
		{"a", "default", map[string]string{"app": "web", "tier": "front"}, "n1"},
		{"b", "default", map[string]string{"app": "web", "tier": "back"}, "n2"},
		{"c", "default", map[string]string{"app": "db"}, ""},
		{"d", "other", map[string]string{"app": "web", "tier": "front"}, "n1"},
	} {
		if _, err := pods.Create(ctx, &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: p.name, Namespace: p.ns, Labels: p.labels},
			Spec: &corev1.PodSpec{NodeName: p.node, Containers: []*corev1.Container{{Name: "c", Image: "img:1"}}}}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, ns, labels, fields string
		rv                       string
		want                     []string
	}{
		{name: "all namespaces", want: []string{"a", "b", "c", "d"}},
		{name: "one namespace", ns: "default", want: []string{"a", "b", "c"}},
		{name: "equals", labels: "app=web", want: []string{"a", "b", "d"}},
		{name: "double equals", labels: "app==db", want: []string{"c"}},
		{name: "not equals", labels: "app!=web", want: []string{"c"}},
		{name: "in", labels: "tier in (front, back)", want: []string{"a", "b", "d"}},
		{name: "notin", labels: "tier notin (front)", want: []string{"b", "c"}},
		{name: "exists", labels: "tier", want: []string{"a", "b", "d"}},
		{name: "does not exist", labels: "!tier", want: []string{"c"}},
		{name: "combined", ns: "default", labels: "app=web,tier!=back", want: []string{"a"}},
		{name: "field metadata.name", fields: "metadata.name=b", want: []string{"b"}},
		{name: "field metadata.namespace", fields: "metadata.namespace=other", want: []string{"d"}},
		{name: "field spec.nodeName", fields: "spec.nodeName=n1", want: []string{"a", "d"}},
		{name: "field unscheduled", fields: "spec.nodeName=", want: []string{"c"}},
		{name: "field not equals", fields: "spec.nodeName!=n1", want: []string{"b", "c"}},
		{name: "field status.phase", fields: "status.phase=Pending", want: []string{"a", "b", "c", "d"}},
		{name: "labels and fields", labels: "app=web", fields: "spec.nodeName=n1,metadata.namespace=default", want: []string{"a"}},
		{name: "from the watch cache (rv 0)", rv: "0", labels: "app=db", want: []string{"c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := pods.List(ctx, &metav1.ListOptions{Namespace: c.ns, LabelSelector: c.labels, FieldSelector: c.fields, ResourceVersion: c.rv})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(l.Items); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			// The same through paged (etcd) lists.
			pl, err := pods.List(ctx, &metav1.ListOptions{Namespace: c.ns, LabelSelector: c.labels, FieldSelector: c.fields, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(pl.Items); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("paged: got %v, want %v", got, c.want)
			}
		})
	}
	bad := []struct{ name, labels, fields string }{
		{"bad label syntax", "app in (", ""},
		{"unsupported field", "", "spec.hostname=x"},
		{"bad field syntax", "", "metadata.name"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			_, err := pods.List(ctx, &metav1.ListOptions{LabelSelector: b.labels, FieldSelector: b.fields})
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("want BadRequest, got %v", err)
			}
		})
	}
}

func TestListPagingIsConsistentAcrossWrites(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)
	for i := 0; i < 25; i++ {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "paging", Name: fmt.Sprintf("cm-%02d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	var rv string
	opts := &metav1.ListOptions{Namespace: "paging", Limit: 10}
	for page := 0; ; page++ {
		l, err := cms.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if page == 0 {
			rv = l.Metadata.ResourceVersion
			// Writes between pages must not show up in this listing.
			if _, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "paging", Name: "cm-99-late"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := cms.Delete(ctx, &metav1.DeleteRequest{Namespace: "paging", Name: "cm-20"}); err != nil {
				t.Fatal(err)
			}
		} else if l.Metadata.ResourceVersion != rv {
			t.Fatalf("page %d at revision %s, first page at %s", page, l.Metadata.ResourceVersion, rv)
		}
		if len(l.Items) > 10 {
			t.Fatalf("page of %d items, limit 10", len(l.Items))
		}
		for _, it := range l.Items {
			got = append(got, it.Metadata.Name)
		}
		if l.Metadata.Continue == "" {
			break
		}
		opts.Continue = l.Metadata.Continue
	}
	if len(got) != 25 || got[0] != "cm-00" || got[24] != "cm-24" {
		t.Fatalf("paged list saw %d items %v, want the 25 of the first page's revision", len(got), got)
	}
	// A forged continue token is refused.
	if _, err := cms.List(ctx, &metav1.ListOptions{Namespace: "paging", Continue: "garbage"}); !apierrors.IsBadRequest(err) {
		t.Fatalf("forged continue: want BadRequest, got %v", err)
	}
	// A token for another namespace is refused.
	l, _ := cms.List(ctx, &metav1.ListOptions{Namespace: "paging", Limit: 5})
	if _, err := cms.List(ctx, &metav1.ListOptions{Namespace: "elsewhere", Continue: l.Metadata.Continue}); !apierrors.IsBadRequest(err) {
		t.Fatalf("continue for another namespace: want BadRequest, got %v", err)
	}
}

// TestConsistentListAfterAnotherKindsWrite: a write to one kind moves
// etcd's revision without an event in another kind's cache; a consistent
// List of that kind must ask etcd for progress at once rather than wait for
// the next periodic bookmark (a minute here).
func TestConsistentListAfterAnotherKindsWrite(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) { c.BookmarkInterval = time.Minute }))
	ctx := testContext(t)
	for i := range 3 {
		if _, err := client.ConfigMaps(s.Conn).Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("cm-%d", i)}}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := client.Pods(s.Conn).List(ctx, &metav1.ListOptions{Namespace: "default"}); err != nil {
			t.Fatalf("consistent list of pods right after a ConfigMap write: %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the list waited %v for the pods cache to hear of etcd's revision", d)
		}
	}
}
