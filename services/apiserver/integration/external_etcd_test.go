package integration

import (
	"testing"

	"skiff.dev/internal/client"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
)

// TestExternalEtcdAndTwoAPIServers runs a second apiserver with
// --etcd-servers pointing at the first one's etcd: both serve the same
// objects, and each one's watch sees what the other wrote.
func TestExternalEtcdAndTwoAPIServers(t *testing.T) {
	a := apiservertest.Start(t)
	b := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) {
		c.DataDir = ""
		c.EtcdServers = []string{a.EtcdEndpoint()}
	}))
	ctx := testContext(t)
	wa, err := client.ConfigMaps(a.Conn).Watch(ctx, &metav1.ListOptions{Namespace: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	defer wa.Stop()
	wb, err := client.ConfigMaps(b.Conn).Watch(ctx, &metav1.ListOptions{Namespace: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Stop()

	if _, err := client.ConfigMaps(b.Conn).Create(ctx, cm("shared", "from-b", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := client.ConfigMaps(a.Conn).Create(ctx, cm("shared", "from-a", nil)); err != nil {
		t.Fatal(err)
	}
	expect(t, wa, "ADDED from-b", "ADDED from-a")
	expect(t, wb, "ADDED from-b", "ADDED from-a")
	got, err := client.ConfigMaps(a.Conn).Get(ctx, "shared", "from-b")
	if err != nil || got.Metadata.Name != "from-b" {
		t.Fatalf("apiserver A cannot read what B wrote: %v %v", got, err)
	}
	// Optimistic concurrency holds across the two: B's stale update conflicts.
	stale, _ := client.ConfigMaps(b.Conn).Get(ctx, "shared", "from-a")
	fresh := stale
	fresh.Data = map[string]string{"k": "a"}
	if _, err := client.ConfigMaps(a.Conn).Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	stale.Data = map[string]string{"k": "b"}
	if _, err := client.ConfigMaps(b.Conn).Update(ctx, stale); err == nil {
		t.Fatal("stale update through the second apiserver succeeded")
	}
}
