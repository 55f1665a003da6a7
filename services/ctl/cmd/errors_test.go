package cmd

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// fakeServer answers every call with the error fn returns for its
// metadata, for the errors the apiserver cannot produce yet
// (authentication, authorization, quotas: issue 7).
func fakeServer(t *testing.T, fn func(md metadata.MD) error) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, s grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(s.Context())
		return fn(md)
	}))
	go g.Serve(l)
	t.Cleanup(g.Stop)
	return l.Addr().String()
}

// closedAddr is an address where nothing listens.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestErrorMessages(t *testing.T) {
	c := newCLI(t)
	c.ok("create", "-f", manifestPath("docs/01-configmap.yaml"))
	var b strings.Builder
	record := func(name string, args ...string) {
		t.Helper()
		r := c.run(args...)
		if r.code != 1 {
			t.Errorf("%s: exit code %d, want 1 (stderr %q)", name, r.code, r.err)
		}
		if strings.Count(r.err, "\n") != 1 {
			t.Errorf("%s: want one line on stderr, got %q", name, r.err)
		}
		b.WriteString("== " + name + "\n" + scrub(c, r.err))
	}
	record("not found", "get", "deployment", "nope")
	record("already exists", "create", "-f", manifestPath("docs/01-configmap.yaml"))
	record("conflict", "label", "configmap", "special-config", "a=b", "--resource-version=1")
	c.stdin = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad}\nspec:\n  replicas: -2\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: y}}\n    spec: {containers: [{name: c}]}\n"
	record("invalid, from the server (client validation off)", "apply", "--validate=false", "-f", "-")
	record("bad request", "get", "pods", "--field-selector", "spec.colour=red")
	record("unknown resource type", "get", "gadgets")
	c.ok("label", "configmap", "special-config", "x=1")
	record("label without --overwrite", "label", "configmap", "special-config", "x=2")

	refused := newCLIFor(t, closedAddr(t), "default", epoch)
	r := refused.run("get", "pods")
	b.WriteString("== connection refused\n" + strings.ReplaceAll(r.err, refused.addr, "<server>"))
	if r.code != 1 {
		t.Errorf("connection refused: exit %d", r.code)
	}

	auth := fakeServer(t, func(md metadata.MD) error {
		switch got := md.Get("authorization"); {
		case len(got) == 0 || got[0] != "Bearer good":
			return (&apierrors.StatusError{Status: apiStatus("Unauthorized", "invalid bearer token", 401)}).GRPCStatus().Err()
		}
		return (&apierrors.StatusError{Status: apiStatus("Forbidden", `pods is forbidden: User "alice" cannot list resource "pods" in the namespace "default"`, 403)}).GRPCStatus().Err()
	})
	ac := newCLIFor(t, auth, "default", epoch)
	for _, tc := range []struct{ name, token string }{{"unauthenticated", "bad"}, {"forbidden", "good"}} {
		r := ac.run("get", "pods", "--token", tc.token)
		b.WriteString("== " + tc.name + "\n" + r.err)
		if r.code != 1 {
			t.Errorf("%s: exit %d", tc.name, r.code)
		}
	}
	quota := fakeServer(t, func(metadata.MD) error {
		return (&apierrors.StatusError{Status: apiStatus("Forbidden", `pods "web" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=10, limited: pods=10`, 403)}).GRPCStatus().Err()
	})
	r = newCLIFor(t, quota, "default", epoch).run("get", "pods")
	b.WriteString("== quota exceeded\n" + r.err)
	invalid := fakeServer(t, func(metadata.MD) error {
		return apierrors.NewInvalid("Pod", "web", field.ErrorList{
			field.Required(field.NewPath("spec", "containers").Index(0).Child("image"), ""),
			field.Invalid(field.NewPath("spec", "restartPolicy"), "Sometimes", "must be Always, OnFailure or Never"),
		}).GRPCStatus().Err()
	})
	r = newCLIFor(t, invalid, "default", epoch).run("get", "pods")
	b.WriteString("== invalid, every field\n" + r.err)
	golden(t, "errors.stderr", b.String())
}

func apiStatus(reason, msg string, code int32) *metav1.Status {
	return &metav1.Status{Status: "Failure", Reason: reason, Message: msg, Code: code}
}

// The server's own ServiceUnavailable that quotes a refused connection
// (to a node agent, for logs or top) is the server's answer, not a
// refused connection to the server.
func TestAgentRefusedIsTheServersAnswer(t *testing.T) {
	c := newCLI(t)
	ctx := context.Background()
	node := c.ns + "-down"
	port := closedAddr(t)
	_, p, _ := strings.Cut(port, ":")
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Nodes(shared.Conn).Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: node}, Status: &corev1.NodeStatus{
		Addresses:       []*corev1.NodeAddress{{Type: "InternalIP", Address: "127.0.0.1"}},
		DaemonEndpoints: &corev1.NodeDaemonEndpoints{KubeletEndpoint: &corev1.DaemonEndpoint{Port: int32(n)}},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Pods(shared.Conn).Create(ctx, &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: c.ns, Name: "lost"},
		Spec: &corev1.PodSpec{NodeName: node, Containers: []*corev1.Container{{Name: "app", Image: "demo"}}}}); err != nil {
		t.Fatal(err)
	}
	got := c.fails("logs", "lost")
	if want := `Error from server (ServiceUnavailable): node "` + node + `" agent: `; !strings.HasPrefix(got, want) || !strings.Contains(got, "connection refused") {
		t.Errorf("logs of a pod whose agent refuses:\n%s\nwant it to start %q (and quote the refusal)", got, want)
	}
}
