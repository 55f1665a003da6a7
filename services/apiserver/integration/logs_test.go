package integration

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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
		line := fmt.Sprintf("%s/%s/%s follow=%v tail=%d since=%d timestamps=%v line %d\n", o.GetNamespace(), o.GetName(), o.GetContainer(), o.GetFollow(), o.GetTailLines(), o.GetSinceSeconds(), o.GetTimestamps(), i)
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
	want := "default/one/web follow=true tail=5 since=0 timestamps=false line 0\ndefault/one/web follow=true tail=5 since=0 timestamps=false line 1\ndefault/one/web follow=true tail=5 since=0 timestamps=false line 2\n"
	if got != want {
		t.Errorf("logs of a one-container pod:\n%s\nwant (the container filled in):\n%s", got, want)
	}

	// The same over HTTP, the options as kubectl logs sends them.
	httpLogs := func(query string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + s.Addr() + "/api/v1/namespaces/default/pods/" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	code, body := httpLogs("one/log?follow=true&tailLines=5&sinceSeconds=60&timestamps=true")
	if want := "default/one/web follow=true tail=5 since=60 timestamps=true line 0\n"; code != http.StatusOK || !strings.HasPrefix(body, want) || strings.Count(body, "\n") != 3 {
		t.Errorf("GET log over HTTP: %d %q, want 200 and three lines from %q", code, body, want)
	}
	if code, body := httpLogs("two/log?container=sidecar"); code != http.StatusOK || !strings.Contains(body, "default/two/sidecar follow=false") {
		t.Errorf("GET log of a named container over HTTP: %d %q", code, body)
	}
	for query, msg := range map[string]string{
		"two/log":               "a container name must be specified for pod two, choose one of: [web sidecar]",
		"one/log?tailLines=ten": `tailLines: invalid value \"ten\"`,
	} {
		if code, body := httpLogs(query); code != http.StatusBadRequest || !strings.Contains(body, msg) {
			t.Errorf("GET %s over HTTP: %d %s, want 400 saying %s", query, code, body, msg)
		}
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
