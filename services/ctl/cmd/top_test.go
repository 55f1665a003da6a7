package cmd

import (
	"context"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	nodev1 "skiff.dev/proto/node/v1"
)

// usageAgent is a node agent answering Usage with fixed figures: the
// node's, and per pod (by uid) its containers'.
type usageAgent struct {
	nodev1.UnimplementedNodeAgentServer
	node *nodev1.ResourceUsage
	pods map[string]*nodev1.PodUsage
}

func (a *usageAgent) Usage(_ context.Context, req *nodev1.UsageRequest) (*nodev1.UsageResponse, error) {
	out := &nodev1.UsageResponse{Node: a.node}
	if !req.GetNodeOnly() {
		for _, p := range a.pods {
			out.Pods = append(out.Pods, p)
		}
	}
	return out, nil
}

func TestTop(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	agent := &usageAgent{node: &nodev1.ResourceUsage{NanoCores: 1_500_000_000, WorkingSetBytes: 2 << 30}, pods: map[string]*nodev1.PodUsage{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	nodev1.RegisterNodeAgentServer(g, agent)
	go g.Serve(l)
	t.Cleanup(g.Stop)
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down.Close()

	mkNode := func(name string, port int) {
		if _, err := client.Nodes(shared.Conn).Create(ctx, &corev1.Node{
			Metadata: &metav1.ObjectMeta{Name: name, Labels: map[string]string{"suite": c.ns}},
			Status: &corev1.NodeStatus{
				Allocatable:     map[string]string{"cpu": "4", "memory": "8Gi"},
				Addresses:       []*corev1.NodeAddress{{Type: "InternalIP", Address: "127.0.0.1"}},
				DaemonEndpoints: &corev1.NodeDaemonEndpoints{KubeletEndpoint: &corev1.DaemonEndpoint{Port: int32(port)}},
			}}); err != nil {
			t.Fatal(err)
		}
	}
	mkNode(c.ns+"-n1", l.Addr().(*net.TCPAddr).Port)
	mkNode(c.ns+"-n2", down.Addr().(*net.TCPAddr).Port)

	mkPod := func(name, node string, usage map[string][2]uint64, names ...string) {
		p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: c.ns, Name: name, Labels: map[string]string{"suite": c.ns, "app": name}},
			Spec: &corev1.PodSpec{NodeName: node}}
		for _, n := range names {
			p.Spec.Containers = append(p.Spec.Containers, &corev1.Container{Name: n, Image: "demo"})
		}
		p, err := client.Pods(shared.Conn).Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if usage == nil {
			return
		}
		pu := &nodev1.PodUsage{Namespace: c.ns, Name: name, Uid: p.GetMetadata().GetUid()}
		for _, n := range names {
			pu.Containers = append(pu.Containers, &nodev1.ContainerUsage{Name: n, Usage: &nodev1.ResourceUsage{NanoCores: usage[n][0], WorkingSetBytes: usage[n][1]}})
		}
		agent.pods[pu.Uid] = pu
	}
	mkPod("db", c.ns+"-n1", map[string][2]uint64{"db": {1_200_000_000, 512 << 20}}, "db")
	// 250m plus 10.5m (rounded up, as kubectl does: 11m); 64 MiB plus 8.5 MiB.
	mkPod("web", c.ns+"-n1", map[string][2]uint64{"app": {250_000_000, 64 << 20}, "sidecar": {10_500_000, 17 << 19}}, "app", "sidecar")
	mkPod("lost", c.ns+"-n2", nil, "app")

	var b strings.Builder
	for _, args := range [][]string{
		{"top", "pod"},
		{"top", "pods", "--containers", "--sort-by=memory"},
		{"top", "pod", "web"},
		{"top", "po", "-A", "-l", "app=web,suite=" + c.ns},
		{"top", "node", "-l", "suite=" + c.ns},
		{"top", "nodes", c.ns + "-n1", "--no-headers"},
		{"top", "pod", "-l", "app=nothing"},
	} {
		r := c.run(args...)
		if r.code != 0 {
			t.Fatalf("skiffctl %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.out, r.err)
		}
		b.WriteString("$ skiffctl " + scrub(c, strings.Join(args, " ")) + "\n" + scrub(c, r.out+r.err))
	}
	for _, args := range [][]string{
		{"top", "pod", "lost"},
		{"top", "pod", "nope"},
		{"top", "pod", "--sort-by=disk"},
		{"top", "pod", "web", "-A"},
	} {
		b.WriteString("$ skiffctl " + strings.Join(args, " ") + "\n" + scrub(c, regexp127(c.fails(args...))))
	}
	golden(t, "top", b.String())
}

// regexp127 hides the port of an address on 127.0.0.1 (it changes from run
// to run).
func regexp127(s string) string {
	i := strings.Index(s, "127.0.0.1:")
	if i < 0 {
		return s
	}
	j := i + len("127.0.0.1:")
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	return s[:i] + "127.0.0.1:<port>" + s[j:]
}
