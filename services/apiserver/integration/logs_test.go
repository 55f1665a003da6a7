package integration

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	nodev1 "skiff.dev/proto/node/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// fakeAgent is a node agent's NodeAgent service that answers with the
// options it was asked for, in three chunks.
type fakeAgent struct {
	nodev1.UnimplementedNodeAgentServer
}

func (fakeAgent) Logs(o *corev1.PodLogOptions, s grpc.ServerStreamingServer[corev1.LogChunk]) error {
	if o.GetContainer() == "missing" {
		return apierrors.NewNotFound("containers", "missing")
	}
	for i := range 3 {
		line := fmt.Sprintf("%s/%s/%s follow=%v tail=%d line %d\n", o.GetNamespace(), o.GetName(), o.GetContainer(), o.GetFollow(), o.GetTailLines(), i)
		if err := s.Send(&corev1.LogChunk{Data: []byte(line)}); err != nil {
			return err
		}
	}
	return nil
}

func startFakeAgent(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	nodev1.RegisterNodeAgentServer(g, fakeAgent{})
	go g.Serve(l)
	t.Cleanup(g.Stop)
	return l.Addr().(*net.TCPAddr).Port
}

func readLogs(t *testing.T, s corev1.PodsClient, o *corev1.PodLogOptions) (string, error) {
	t.Helper()
	stream, err := s.Logs(testContext(t), o)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return b.String(), apierrors.FromError(err)
		}
		b.Write(c.GetData())
	}
}

func TestPodLogsAreProxiedToTheNodeAgent(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	port := startFakeAgent(t)
	nodes := client.Nodes(s.Conn)
	mkNode := func(name string, port int32, addr string) {
		n, err := nodes.Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		n.Status = &corev1.NodeStatus{
			Addresses:       []*corev1.NodeAddress{{Type: "InternalIP", Address: addr}},
			DaemonEndpoints: &corev1.NodeDaemonEndpoints{KubeletEndpoint: &corev1.DaemonEndpoint{Port: port}},
		}
		if _, err := nodes.UpdateStatus(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	mkNode("n1", int32(port), "127.0.0.1")
	mkNode("silent", 0, "127.0.0.1")
	pods := client.Pods(s.Conn)
	mkPod := func(name, node string, containers ...string) {
		p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: &corev1.PodSpec{NodeName: node}}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, &corev1.Container{Name: c, Image: "demo"})
		}
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	mkPod("one", "n1", "web")
	mkPod("two", "n1", "web", "sidecar")
	mkPod("pending", "", "web")
	mkPod("stranded", "silent", "web")

	pc := corev1.NewPodsClient(s.Conn)
	got, err := readLogs(t, pc, &corev1.PodLogOptions{Namespace: "default", Name: "one", Follow: true, TailLines: ptr(int64(5))})
	if err != nil {
		t.Fatal(err)
	}
	want := "default/one/web follow=true tail=5 line 0\ndefault/one/web follow=true tail=5 line 1\ndefault/one/web follow=true tail=5 line 2\n"
	if got != want {
		t.Errorf("logs of a one-container pod:\n%s\nwant (the container filled in):\n%s", got, want)
	}
	if got, err := readLogs(t, pc, &corev1.PodLogOptions{Namespace: "default", Name: "two", Container: "sidecar"}); err != nil || !strings.Contains(got, "two/sidecar") {
		t.Errorf("logs of a named container: %q, %v", got, err)
	}

	errCases := []struct {
		name   string
		o      *corev1.PodLogOptions
		reason apierrors.Reason
		msg    string
	}{
		{"no such pod", &corev1.PodLogOptions{Namespace: "default", Name: "nope"}, apierrors.ReasonNotFound, "nope"},
		{"container needed", &corev1.PodLogOptions{Namespace: "default", Name: "two"}, apierrors.ReasonBadRequest, "a container name must be specified for pod two, choose one of: [web sidecar]"},
		{"unknown container", &corev1.PodLogOptions{Namespace: "default", Name: "two", Container: "db"}, apierrors.ReasonBadRequest, "container db is not valid for pod two"},
		{"not scheduled", &corev1.PodLogOptions{Namespace: "default", Name: "pending"}, apierrors.ReasonBadRequest, "not scheduled"},
		{"node without an agent endpoint", &corev1.PodLogOptions{Namespace: "default", Name: "stranded"}, apierrors.ReasonServiceUnavailable, "advertises no agent endpoint"},
	}
	for _, tc := range errCases {
		_, err := readLogs(t, pc, tc.o)
		if apierrors.ReasonForError(err) != tc.reason || err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v (reason %q), want reason %s with %q", tc.name, err, apierrors.ReasonForError(err), tc.reason, tc.msg)
		}
	}
}

func ptr[T any](v T) *T { return &v }
