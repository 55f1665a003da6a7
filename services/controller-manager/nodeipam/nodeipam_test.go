package nodeipam_test

import (
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/nodeipam"
)

// patience bounds each wait; every step takes milliseconds.
const patience = 15 * time.Second

// start runs a node IPAM controller with o on env (a fresh cluster when
// nil) and returns env.
func start(t *testing.T, env *managertest.Env, o nodeipam.Options) (*managertest.Env, *nodeipam.Controller) {
	t.Helper()
	if env == nil {
		env = managertest.Start(t)
	}
	c := nodeipam.New(env.Manager, o)
	env.StartInformers()
	env.GoErr(c.Run)
	return env, c
}

func options(cluster string, mask int) nodeipam.Options {
	return nodeipam.Options{ClusterCIDR: netip.MustParsePrefix(cluster), NodeCIDRMaskSize: mask}
}

// createNode creates a node, with podCIDR when not "".
func createNode(t *testing.T, env *managertest.Env, name, podCIDR string) {
	t.Helper()
	n := &corev1.Node{Metadata: &metav1.ObjectMeta{Name: name}}
	if podCIDR != "" {
		n.Spec = &corev1.NodeSpec{PodCidr: podCIDR, PodCidrs: []string{podCIDR}}
	}
	if _, err := client.Nodes(env.Conn).Create(env.Ctx, n); err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
}

func deleteNode(t *testing.T, env *managertest.Env, name string) {
	t.Helper()
	if _, err := client.Nodes(env.Conn).Delete(env.Ctx, &metav1.DeleteRequest{Name: name}); err != nil {
		t.Fatalf("delete node %s: %v", name, err)
	}
}

func nodeInformer(env *managertest.Env) *informer.Informer[*corev1.Node] {
	return informer.For(env.Manager.Informers, client.Nodes(env.Conn))
}

// podCIDRs are the nodes' podCIDRs by name, as env's informer has them.
func podCIDRs(env *managertest.Env, names ...string) map[string]string {
	out := map[string]string{}
	for _, name := range names {
		n, _ := nodeInformer(env).Store().Get(name)
		out[name] = n.GetSpec().GetPodCidr()
	}
	return out
}

// awaitAllocated waits until every named node has a podCIDR, and returns
// them.
func awaitAllocated(env *managertest.Env, names ...string) map[string]string {
	env.T.Helper()
	env.Await(patience, "pod CIDRs for "+strings.Join(names, ", "), func() (bool, string) {
		got := podCIDRs(env, names...)
		for _, c := range got {
			if c == "" {
				return false, managertest.Explain("podCIDRs %v", got)
			}
		}
		return true, ""
	})
	return podCIDRs(env, names...)
}

// checkDistinct fails unless the CIDRs are distinct /mask subnets of cluster.
func checkDistinct(t *testing.T, got map[string]string, cluster string, mask int) {
	t.Helper()
	c := netip.MustParsePrefix(cluster)
	seen := map[string]string{}
	for name, s := range got {
		p, err := netip.ParsePrefix(s)
		if err != nil || p.Bits() != mask || !c.Contains(p.Addr()) || p != p.Masked() {
			t.Errorf("node %s: podCIDR %q, want a /%d subnet of %s", name, s, mask, cluster)
		}
		if other, dup := seen[s]; dup {
			t.Errorf("nodes %s and %s share podCIDR %s", name, other, s)
		}
		seen[s] = name
	}
}

func awaitEvent(env *managertest.Env, node, reason, wantInMessage string) {
	env.T.Helper()
	env.Await(patience, "event "+reason+" about node "+node, func() (bool, string) {
		ev := env.EventReasons("Node", "", node)
		msg, ok := ev[reason]
		return ok && strings.Contains(msg, wantInMessage), managertest.Explain("events %v", ev)
	})
}

// gauge is the value of an unlabelled gauge or counter of env's registry.
func gauge(t *testing.T, env *managertest.Env, name string) float64 {
	t.Helper()
	mfs, err := env.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			return m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return -1
}

// TestDistinctSubnets: nodes created at once, some before the controller
// starts, each get their own subnet, written to podCIDR and podCIDRs.
func TestDistinctSubnets(t *testing.T) {
	env := managertest.Start(t)
	createNode(t, env, "early", "")
	env, _ = start(t, env, nodeipam.Options{}) // the defaults: 10.244.0.0/16 in /24s
	names := []string{"early"}
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		names = append(names, name)
		wg.Go(func() { createNode(t, env, name, "") })
	}
	wg.Wait()
	got := awaitAllocated(env, names...)
	checkDistinct(t, got, nodeipam.DefaultClusterCIDR, nodeipam.DefaultNodeCIDRMaskSize)
	for _, name := range names {
		n, _ := nodeInformer(env).Store().Get(name)
		if !slices.Equal(n.GetSpec().GetPodCidrs(), []string{got[name]}) {
			t.Errorf("node %s: podCIDRs %v, want [%s]", name, n.GetSpec().GetPodCidrs(), got[name])
		}
	}
	if v := gauge(t, env, "nodeipam_cidrs_capacity"); v != 256 {
		t.Errorf("nodeipam_cidrs_capacity = %v, want 256", v)
	}
	if v := gauge(t, env, "nodeipam_cidrs_allocated"); v != 7 {
		t.Errorf("nodeipam_cidrs_allocated = %v, want 7", v)
	}
	// Counted once the node's update returns, which the informer may see
	// first.
	env.Await(patience, "nodeipam_cidr_allocations_total 7", func() (bool, string) {
		v := gauge(t, env, "nodeipam_cidr_allocations_total")
		return v == 7, managertest.Explain("%v", v)
	})
	awaitEvent(env, "a", nodeipam.ReasonCIDRAssigned, "Assigned pod CIDR "+got["a"])
}

// TestRestartKeepsAllocations: a controller started over nodes that have
// subnets (its own earlier ones, and one set by hand) keeps them and hands
// the next node a free one; it writes nothing to the nodes that have one.
func TestRestartKeepsAllocations(t *testing.T) {
	const cluster, mask = "10.99.0.0/22", 24     // 4 subnets
	env := managertest.Start(t)                  // the apiserver, and a client for the test's writes
	createNode(t, env, "manual", "10.99.0.0/24") // the first one a fresh set would hand out
	first, _ := start(t, managertest.NewEnv(t, env.Server, env.Conn, env.Logger), options(cluster, mask))
	createNode(t, env, "a", "")
	createNode(t, env, "b", "")
	before := awaitAllocated(first, "manual", "a", "b")
	checkDistinct(t, before, cluster, mask)
	versions := map[string]string{}
	for name := range before {
		n, _ := nodeInformer(first).Store().Get(name)
		versions[name] = n.GetMetadata().GetResourceVersion()
	}
	first.Stop()

	createNode(t, env, "c", "") // while no controller runs
	second, c := start(t, managertest.NewEnv(t, env.Server, env.Conn, env.Logger), options(cluster, mask))
	after := awaitAllocated(second, "manual", "a", "b", "c")
	checkDistinct(t, after, cluster, mask)
	for name, cidr := range before {
		n, _ := nodeInformer(second).Store().Get(name)
		if after[name] != cidr || n.GetMetadata().GetResourceVersion() != versions[name] {
			t.Errorf("node %s after the restart: podCIDR %s (was %s), resourceVersion %s (was %s)",
				name, after[name], cidr, n.GetMetadata().GetResourceVersion(), versions[name])
		}
	}
	if used, total := c.Usage(); used != 4 || total != 4 {
		t.Errorf("usage after the restart: %d of %d, want 4 of 4", used, total)
	}
}

// TestExhaustionAndRelease: a /23 in /24s holds two nodes; a third gets
// CIDRNotAvailable and waits; deleting a node frees its subnet, which the
// waiting node then gets.
func TestExhaustionAndRelease(t *testing.T) {
	const cluster, mask = "10.50.0.0/23", 24
	env, c := start(t, nil, options(cluster, mask))
	createNode(t, env, "a", "")
	createNode(t, env, "b", "")
	got := awaitAllocated(env, "a", "b")
	checkDistinct(t, got, cluster, mask)

	createNode(t, env, "c", "")
	awaitEvent(env, "c", nodeipam.ReasonCIDRNotAvailable, "no /24 pod subnet left in the cluster CIDR 10.50.0.0/23 (2 of 2 in use)")
	if cidr := podCIDRs(env, "c")["c"]; cidr != "" {
		t.Fatalf("node c got %s from a full range", cidr)
	}

	deleteNode(t, env, "a")
	after := awaitAllocated(env, "c")
	if after["c"] != got["a"] {
		t.Errorf("node c got %s, want the freed %s", after["c"], got["a"])
	}
	if used, total := c.Usage(); used != 2 || total != 2 {
		t.Errorf("usage: %d of %d, want 2 of 2", used, total)
	}
	if v := gauge(t, env, "nodeipam_cidr_releases_total"); v != 1 {
		t.Errorf("nodeipam_cidr_releases_total = %v, want 1", v)
	}
}

// TestForeignSubnets: a node whose podCIDR lies outside the cluster CIDR,
// or overlaps an older node's, gets a Warning and keeps it; neither takes
// a subnet from the others. When the older node goes, the overlapping one
// is accounted for. Creation timestamps have whole seconds (as
// Kubernetes'); nodes created in the same second are ordered by name, so
// the older node's name sorts first.
func TestForeignSubnets(t *testing.T) {
	const cluster, mask = "10.60.0.0/22", 24
	env := managertest.Start(t)
	createNode(t, env, "elder", "10.60.1.0/24")
	createNode(t, env, "outside", "192.168.7.0/24")
	createNode(t, env, "overlap", "10.60.1.128/25")
	env, c := start(t, env, options(cluster, mask))
	awaitEvent(env, "outside", nodeipam.ReasonInvalidPodCIDR, "outside the cluster CIDR 10.60.0.0/22")
	awaitEvent(env, "overlap", nodeipam.ReasonPodCIDRConflict, "overlaps node elder's 10.60.1.0/24")
	if used, _ := c.Usage(); used != 1 {
		t.Errorf("subnets in use: %d, want 1 (elder's)", used)
	}
	got := podCIDRs(env, "elder", "outside", "overlap")
	if got["elder"] != "10.60.1.0/24" || got["outside"] != "192.168.7.0/24" || got["overlap"] != "10.60.1.128/25" {
		t.Errorf("podCIDRs changed: %v", got)
	}

	deleteNode(t, env, "elder")
	env.Await(patience, "the overlapping node accounted for once the elder is gone", func() (bool, string) {
		used, _ := c.Usage()
		released := gauge(t, env, "nodeipam_cidr_releases_total")
		return used == 1 && released == 1, managertest.Explain("used %d, released %v", used, released)
	})
	createNode(t, env, "new", "")
	if cidr := awaitAllocated(env, "new")["new"]; cidr == "10.60.1.0/24" {
		t.Errorf("new node got %s, the overlapping node's subnet", cidr)
	}
}
