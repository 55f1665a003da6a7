package cmd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/ctl/kinds"
)

func TestListReadsEveryPage(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	for i := range 5 {
		if _, err := client.ConfigMaps(shared.Conn).Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: c.ns, Name: fmt.Sprintf("cm-%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	k, err := kinds.Static().ForResource("configmaps")
	if err != nil {
		t.Fatal(err)
	}
	objs, rv, err := k.Client(shared.Conn).List(ctx, &metav1.ListOptions{Namespace: c.ns, Limit: 2})
	if err != nil || len(objs) != 5 || rv == "" {
		t.Errorf("paged list: %d objects at %q, %v; want 5", len(objs), rv, err)
	}
	items, err := listAll(ctx, client.ConfigMaps(shared.Conn), &metav1.ListOptions{Namespace: c.ns, Limit: 2})
	if err != nil || len(items) != 5 {
		t.Errorf("listAll: %d, %v", len(items), err)
	}
}

// A get right after a write of another kind must not wait for the watch
// cache of its own kind to hear of that revision: with the apiserver's
// default bookmark interval (a minute) a consistent List from the cache
// times out after 3s. Chunked lists, as kubectl makes, read etcd.
func TestGetRightAfterAnotherKindsWrite(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) { c.BookmarkInterval = time.Minute }))
	c := newCLIFor(t, s.Addr(), "default", time.Now())
	c.ok("apply", "-f", manifestPath("nginx-deployment.yaml"))
	start := time.Now()
	r := c.run("get", "configmaps")
	if r.code != 0 || time.Since(start) > 2*time.Second {
		t.Errorf("get configmaps after a deployment write: exit %d in %v, stderr %q", r.code, time.Since(start), r.err)
	}
}

func TestWatchAfterAnotherKindsWrite(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) { c.BookmarkInterval = time.Minute }))
	c := newCLIFor(t, s.Addr(), "default", time.Now())
	c.ok("apply", "-f", manifestPath("docs/01-configmap.yaml"))
	c.ok("apply", "-f", manifestPath("nginx-deployment.yaml"))
	lines, stop := c.start("get", "configmaps", "-w", "--output-watch-events")
	lines.next(t, "the listed configmap", func(s string) bool { return strings.HasPrefix(s, "ADDED ") })
	c.ok("label", "cm", "special-config", "a=b")
	lines.next(t, "the change", func(s string) bool { return strings.HasPrefix(s, "MODIFIED ") })
	if r := stop(); r.code != 0 {
		t.Errorf("get -w: %+v", r)
	}
}
