package cmd

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	nodev1 "skiff.dev/proto/node/v1"
)

// fakeAgent is a node agent's NodeAgent service (none exists yet) that
// answers with the options it was asked for.
type fakeAgent struct {
	nodev1.UnimplementedNodeAgentServer
}

func (fakeAgent) Logs(o *corev1.PodLogOptions, s grpc.ServerStreamingServer[corev1.LogChunk]) error {
	for i := range 3 {
		prefix := ""
		if o.GetTimestamps() {
			prefix = fmt.Sprintf("2024-05-01T12:00:0%dZ ", i)
		}
		line := fmt.Sprintf("%s%s/%s follow=%v tail=%d line %d\n", prefix, o.GetName(), o.GetContainer(), o.GetFollow(), o.GetTailLines(), i)
		if err := s.Send(&corev1.LogChunk{Data: []byte(line)}); err != nil {
			return err
		}
	}
	return nil
}

func startFakeAgent(t *testing.T) int32 {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	nodev1.RegisterNodeAgentServer(g, fakeAgent{})
	go g.Serve(l)
	t.Cleanup(g.Stop)
	return int32(l.Addr().(*net.TCPAddr).Port)
}

func TestLogs(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	node := c.ns + "-node"
	nodes := client.Nodes(shared.Conn)
	if _, err := nodes.Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: node}, Status: &corev1.NodeStatus{
		Addresses:       []*corev1.NodeAddress{{Type: "InternalIP", Address: "127.0.0.1"}},
		DaemonEndpoints: &corev1.NodeDaemonEndpoints{KubeletEndpoint: &corev1.DaemonEndpoint{Port: startFakeAgent(t)}},
	}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		name, node string
		containers []string
	}{{"one", node, []string{"web"}}, {"two", node, []string{"web", "sidecar"}}, {"pending", "", []string{"web"}}} {
		pod := &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: c.ns, Name: p.name}, Spec: &corev1.PodSpec{NodeName: p.node}}
		for _, ct := range p.containers {
			pod.Spec.Containers = append(pod.Spec.Containers, &corev1.Container{Name: ct, Image: "demo"})
		}
		if _, err := client.Pods(shared.Conn).Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	for _, args := range [][]string{
		{"logs", "one"},
		{"logs", "pod/two", "-c", "sidecar", "--tail=5", "--timestamps"},
		{"logs", "-f", "two", "web"},
	} {
		b.WriteString("$ skiffctl " + strings.Join(args, " ") + "\n" + c.ok(args...))
	}
	for _, args := range [][]string{{"logs", "two"}, {"logs", "pending"}, {"logs", "nope"}} {
		b.WriteString("$ skiffctl " + strings.Join(args, " ") + "\n" + scrub(c, c.fails(args...)))
	}
	golden(t, "logs", b.String())
}
