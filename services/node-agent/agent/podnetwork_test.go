package agent

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/network"
	"skiff.dev/services/node-agent/sim"
)

func TestWithPodNetwork(t *testing.T) {
	ok := &corev1.NodeCondition{Type: "Ready", Status: "True", Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	down := &corev1.NodeCondition{Type: "Ready", Status: "False", Reason: "KubeletNotReady", Message: "container runtime network not ready: NetworkReady=false"}
	if got := withPodNetwork(ok, ""); got != ok {
		t.Errorf("no problem: %v, want the runtime's condition", got)
	}
	got := withPodNetwork(ok, "pod network not ready: no podCIDR")
	if got.GetStatus() != "False" || got.GetReason() != "NetworkNotReady" || got.GetMessage() != "pod network not ready: no podCIDR" {
		t.Errorf("a pod network problem on a ready runtime: %v", got)
	}
	got = withPodNetwork(down, "pod network not ready: no podCIDR")
	if got.GetReason() != "NetworkNotReady" || got.GetMessage() != "pod network not ready: no podCIDR; container runtime network not ready: NetworkReady=false" {
		t.Errorf("both: %v", got)
	}
}

// TestManagedPodNetwork: with ManagePodNetwork the node stays NotReady and
// runs no pod until its Node gets a podCIDR (here from the test, as the
// nodeipam controller would); then the CNI configuration is written, the
// node becomes Ready and the waiting pod runs. Another node's subnet is
// routed through its InternalIP.
func TestManagedPodNetwork(t *testing.T) {
	confDir := filepath.Join(t.TempDir(), "net.d")
	router := &network.MemoryRouter{}
	e := start(t, sim.Options{}, func(c *Config) {
		c.ManagePodNetwork = true
		c.CNIConfDir = confDir
		c.ClusterCIDR = netip.MustParsePrefix("10.244.0.0/16")
		c.Router = router
	})
	e.until("node registered NotReady for want of a podCIDR", func() (bool, string) {
		n, _ := e.nodes.Store().GetByName("", nodeName)
		r := nodeReady(n)
		return r.GetStatus() == "False" && r.GetReason() == "NetworkNotReady" && strings.Contains(r.GetMessage(), "has no spec.podCIDR yet"),
			fmt.Sprintf("Ready %v", r)
	})
	e.create(pod("web", ctr("c", "busybox")))
	e.until("the pod held back by the network", func() (bool, string) {
		l, err := client.Events(e.api.Conn).List(e.ctx, &metav1.ListOptions{Namespace: "default"})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range l.GetItems() {
			if ev.GetReason() == "NetworkNotReady" && ev.GetInvolvedObject().GetName() == "web" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none NetworkNotReady about pod web", len(l.GetItems()))
	})
	if n := len(e.sim.Sandboxes()); n != 0 {
		t.Fatalf("%d sandboxes created before the pod network is ready", n)
	}
	if _, err := os.Stat(filepath.Join(confDir, network.ConflistName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("CNI configuration before the node has a podCIDR: %v", err)
	}

	nodes := client.Nodes(e.api.Conn)
	if _, err := nodes.Create(e.ctx, &corev1.Node{
		Metadata: &metav1.ObjectMeta{Name: "node-2"},
		Spec:     &corev1.NodeSpec{PodCidr: "10.244.2.0/24", PodCidrs: []string{"10.244.2.0/24"}},
		Status:   &corev1.NodeStatus{Addresses: []*corev1.NodeAddress{{Type: "InternalIP", Address: "172.18.0.3"}}},
	}); err != nil {
		t.Fatal(err)
	}
	err := client.RetryOnConflict(e.ctx, client.DefaultRetry, func() error {
		n, err := nodes.Get(e.ctx, "", nodeName)
		if err != nil {
			return err
		}
		n = proto.Clone(n).(*corev1.Node)
		n.Spec.PodCidr, n.Spec.PodCidrs = "10.244.1.0/24", []string{"10.244.1.0/24"}
		_, err = nodes.Update(e.ctx, n)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	e.untilRunning("web")
	e.until("node Ready", func() (bool, string) {
		n, _ := e.nodes.Store().GetByName("", nodeName)
		return nodeReady(n).GetStatus() == "True", fmt.Sprintf("Ready %v", nodeReady(n))
	})
	b, err := os.ReadFile(filepath.Join(confDir, network.ConflistName))
	if err != nil || string(b) != string(network.Conflist(netip.MustParsePrefix("10.244.1.0/24"))) {
		t.Errorf("CNI configuration: %q, %v", b, err)
	}
	e.until("the route to node-2", func() (bool, string) {
		l, _ := router.List(e.ctx)
		return len(l) == 1 && l[0].String() == "10.244.2.0/24 via 172.18.0.3", fmt.Sprintf("routes %v", l)
	})
}
