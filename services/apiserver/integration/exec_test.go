package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	nodev1 "skiff.dev/proto/node/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/audit"
)

// streamAgent is a node agent whose Exec says what it was asked, echoes
// stdin to stdout until stdin's end, writes "bye" to stderr and exits
// with the command's length; Attach the same with no exit code; and
// PortForward answers "port N: " and echoes until the client's half-close.
type streamAgent struct {
	nodev1.UnimplementedNodeAgentServer
}

func (streamAgent) Exec(s grpc.BidiStreamingServer[corev1.ExecRequest, corev1.ExecResponse]) error {
	return fakeExec(s, true)
}

func (streamAgent) Attach(s grpc.BidiStreamingServer[corev1.ExecRequest, corev1.ExecResponse]) error {
	return fakeExec(s, false)
}

func fakeExec(s grpc.BidiStreamingServer[corev1.ExecRequest, corev1.ExecResponse], exit bool) error {
	req, err := s.Recv()
	if err != nil {
		return err
	}
	o := req.GetOptions()
	hello := fmt.Sprintf("%s/%s/%s %v stdin=%v tty=%v\n", o.GetNamespace(), o.GetName(), o.GetContainer(), o.GetCommand(), o.GetStdin(), o.GetTty())
	if err := s.Send(&corev1.ExecResponse{Stdout: []byte(hello)}); err != nil {
		return err
	}
	for o.GetStdin() {
		if len(req.GetStdin()) > 0 {
			if err := s.Send(&corev1.ExecResponse{Stdout: req.GetStdin()}); err != nil {
				return err
			}
		}
		if req.GetStdinClose() {
			break
		}
		if req, err = s.Recv(); err != nil {
			return err
		}
	}
	if err := s.Send(&corev1.ExecResponse{Stderr: []byte("bye\n")}); err != nil {
		return err
	}
	if !exit {
		return nil
	}
	code := int32(len(o.GetCommand()))
	return s.Send(&corev1.ExecResponse{ExitCode: &code})
}

func (streamAgent) PortForward(s grpc.BidiStreamingServer[corev1.PortForwardRequest, corev1.PortForwardResponse]) error {
	req, err := s.Recv()
	if err != nil {
		return err
	}
	if err := s.Send(&corev1.PortForwardResponse{Data: fmt.Appendf(nil, "port %d: ", req.GetOptions().GetPort())}); err != nil {
		return err
	}
	for {
		if len(req.GetData()) > 0 {
			if err := s.Send(&corev1.PortForwardResponse{Data: req.GetData()}); err != nil {
				return err
			}
		}
		if req.GetCloseWrite() {
			return nil
		}
		if req, err = s.Recv(); errors.Is(err, io.EOF) {
			return nil // the client's end is its half-close too
		} else if err != nil {
			return err
		}
	}
}

// execResult is what an exec stream returned.
type execResult struct {
	stdout, stderr string
	code           *int32
	err            error
}

// runExec sends first, then each stdin piece and stdin's end, and reads
// the stream to its end.
func runExec(ctx context.Context, pc corev1.PodsClient, attach bool, first *corev1.ExecRequest, stdin ...string) execResult {
	var s grpc.BidiStreamingClient[corev1.ExecRequest, corev1.ExecResponse]
	var err error
	if attach {
		s, err = pc.Attach(ctx)
	} else {
		s, err = pc.Exec(ctx)
	}
	if err != nil {
		return execResult{err: err}
	}
	if err := s.Send(first); err != nil && !errors.Is(err, io.EOF) {
		return execResult{err: err}
	}
	for _, in := range stdin {
		_ = s.Send(&corev1.ExecRequest{Stdin: []byte(in)})
	}
	if first.GetOptions().GetStdin() {
		_ = s.Send(&corev1.ExecRequest{StdinClose: true})
	}
	var r execResult
	var out, errOut bytes.Buffer
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			r.err = apierrors.FromError(err)
			break
		}
		out.Write(m.GetStdout())
		errOut.Write(m.GetStderr())
		if m.ExitCode != nil {
			r.code = m.ExitCode
		}
	}
	r.stdout, r.stderr = out.String(), errOut.String()
	return r
}

func execOpts(name, container string, stdin bool, cmd ...string) *corev1.ExecRequest {
	return &corev1.ExecRequest{Options: &corev1.PodExecOptions{Namespace: "default", Name: name, Container: container,
		Command: cmd, Stdin: stdin, Stdout: true, Stderr: true}}
}

// startStreamCluster is an apiserver (opts) with a node whose agent is a
// streamAgent and pods on it: "one" (container web, Running), "two" (web
// and sidecar), "done" (Succeeded), "pending" (no node).
func startStreamCluster(t *testing.T, s *apiservertest.Server) {
	t.Helper()
	ctx := testContext(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	nodev1.RegisterNodeAgentServer(g, streamAgent{})
	go g.Serve(l)
	t.Cleanup(g.Stop)
	nodes := client.Nodes(s.Conn)
	n, err := nodes.Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n1"}})
	if err != nil {
		t.Fatal(err)
	}
	n.Status = &corev1.NodeStatus{
		Addresses:       []*corev1.NodeAddress{{Type: "InternalIP", Address: "127.0.0.1"}},
		DaemonEndpoints: &corev1.NodeDaemonEndpoints{KubeletEndpoint: &corev1.DaemonEndpoint{Port: int32(l.Addr().(*net.TCPAddr).Port)}},
	}
	if _, err := nodes.UpdateStatus(ctx, n); err != nil {
		t.Fatal(err)
	}
	pods := client.Pods(s.Conn)
	mkPod := func(name, node, phase string, containers ...string) {
		p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: &corev1.PodSpec{NodeName: node}}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, &corev1.Container{Name: c, Image: "demo"})
		}
		p, err := pods.Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		p.Status = &corev1.PodStatus{Phase: phase}
		if _, err := pods.UpdateStatus(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	mkPod("one", "n1", "Running", "web")
	mkPod("two", "n1", "Running", "web", "sidecar")
	mkPod("done", "n1", "Succeeded", "web")
	mkPod("pending", "", "Pending", "web")
}

func TestPodExecAttachPortForwardAreProxiedToTheNodeAgent(t *testing.T) {
	s := apiservertest.Start(t)
	startStreamCluster(t, s)
	ctx := testContext(t)
	pc := corev1.NewPodsClient(s.Conn)

	r := runExec(ctx, pc, false, execOpts("one", "", true, "cat", "-"), "hello ", "world\n")
	if r.err != nil || r.stdout != "default/one/web [cat -] stdin=true tty=false\nhello world\n" || r.stderr != "bye\n" || r.code == nil || *r.code != 2 {
		t.Errorf("exec: stdout %q stderr %q code %v err %v", r.stdout, r.stderr, r.code, r.err)
	}
	noNS := execOpts("one", "", false, "true")
	noNS.Options.Namespace = ""
	if r := runExec(ctx, pc, false, noNS); r.err != nil || !strings.HasPrefix(r.stdout, "default/one/web [true]") {
		t.Errorf("exec without a namespace (default, as authorized): stdout %q, err %v", r.stdout, r.err)
	}
	r = runExec(ctx, pc, true, execOpts("two", "sidecar", false))
	if r.err != nil || r.stdout != "default/two/sidecar [] stdin=false tty=false\n" || r.code != nil {
		t.Errorf("attach: stdout %q code %v err %v", r.stdout, r.code, r.err)
	}

	pf, err := pc.PortForward(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*corev1.PortForwardRequest{
		{Options: &corev1.PodPortForwardOptions{Namespace: "default", Name: "one", Port: 8080}, Data: []byte("GET / ")},
		{Data: []byte("HTTP/1.0\r\n\r\n"), CloseWrite: true},
	} {
		if err := pf.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	var got bytes.Buffer
	for {
		m, err := pf.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("port-forward: %v", err)
		}
		got.Write(m.GetData())
	}
	if got.String() != "port 8080: GET / HTTP/1.0\r\n\r\n" {
		t.Errorf("port-forward: %q", got.String())
	}

	for _, tc := range []struct {
		name   string
		attach bool
		first  *corev1.ExecRequest
		reason apierrors.Reason
		msg    string
	}{
		{"no such pod", false, execOpts("nope", "", false, "true"), apierrors.ReasonNotFound, `pods "nope" not found`},
		{"container needed", false, execOpts("two", "", false, "true"), apierrors.ReasonBadRequest, "a container name must be specified for pod two, choose one of: [web sidecar]"},
		{"unknown container", false, execOpts("two", "db", false, "true"), apierrors.ReasonBadRequest, "container db is not valid for pod two"},
		{"completed pod", false, execOpts("done", "", false, "true"), apierrors.ReasonBadRequest, "cannot exec into a container in a completed pod; current phase is Succeeded"},
		{"attach to a completed pod", true, execOpts("done", "", false), apierrors.ReasonBadRequest, "cannot attach a container in a completed pod; current phase is Succeeded"},
		{"not scheduled", false, execOpts("pending", "", false, "true"), apierrors.ReasonBadRequest, "pod pending does not have a host assigned"},
		{"no command", false, execOpts("one", "", false), apierrors.ReasonBadRequest, "you must specify at least one command for the container"},
		{"no options", false, &corev1.ExecRequest{Stdin: []byte("x")}, apierrors.ReasonBadRequest, "the first request of a stream must carry its options"},
	} {
		r := runExec(ctx, pc, tc.attach, tc.first)
		if apierrors.ReasonForError(r.err) != tc.reason || r.err == nil || !strings.Contains(r.err.Error(), tc.msg) {
			t.Errorf("%s: error %v (reason %q), want reason %s with %q", tc.name, r.err, apierrors.ReasonForError(r.err), tc.reason, tc.msg)
		}
	}
}

// TestPodExecNeedsCreateOnTheSubresource: a user who may get pods may not
// exec, attach or port-forward; create on pods/exec allows exec only.
func TestPodExecNeedsCreateOnTheSubresource(t *testing.T) {
	s := startAuthorized(t)
	startStreamCluster(t, s)
	ctx := testContext(t)
	mustCreate(t, client.Roles(s.Conn).Create, &rbacv1.Role{Metadata: objMeta("default", "pod-reader"), Rules: []*rbacv1.PolicyRule{
		policyRule("get list watch", "", "pods"),
	}})
	mustCreate(t, client.RoleBindings(s.Conn).Create, &rbacv1.RoleBinding{Metadata: objMeta("default", "bob-reads"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "Role", Name: "pod-reader"}, Subjects: []*rbacv1.Subject{subjectUser("bob"), subjectUser("carol")}})
	mustCreate(t, client.Roles(s.Conn).Create, &rbacv1.Role{Metadata: objMeta("default", "exec"), Rules: []*rbacv1.PolicyRule{
		policyRule("create", "", "pods/exec"),
	}})
	mustCreate(t, client.RoleBindings(s.Conn).Create, &rbacv1.RoleBinding{Metadata: objMeta("default", "carol-execs"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "Role", Name: "exec"}, Subjects: []*rbacv1.Subject{subjectUser("carol")}})
	bob := corev1.NewPodsClient(s.ConnAs(t, "bob"))
	carol := corev1.NewPodsClient(s.ConnAs(t, "carol"))
	eventually(t, "bob may get pods", func() error {
		_, err := client.Pods(s.ConnAs(t, "bob")).Get(ctx, "default", "one")
		return err
	})
	eventually(t, "carol may exec", func() error {
		return runExec(ctx, carol, false, execOpts("one", "", false, "true")).err
	})

	denied(t, "bob exec", runExec(ctx, bob, false, execOpts("one", "", false, "true")).err,
		`pods "one" is forbidden: User "bob" cannot create resource "pods/exec" in API group "" in the namespace "default"`)
	denied(t, "bob attach", runExec(ctx, bob, true, execOpts("one", "", false)).err,
		`pods "one" is forbidden: User "bob" cannot create resource "pods/attach" in API group "" in the namespace "default"`)
	denied(t, "carol attach", runExec(ctx, carol, true, execOpts("one", "", false)).err, `cannot create resource "pods/attach"`)
	for who, pc := range map[string]corev1.PodsClient{"bob": bob, "carol": carol} {
		pf, err := pc.PortForward(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := pf.Send(&corev1.PortForwardRequest{Options: &corev1.PodPortForwardOptions{Namespace: "default", Name: "one", Port: 80}}); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		_, err = pf.Recv()
		denied(t, who+" port-forward", apierrors.FromError(err), `cannot create resource "pods/portforward" in API group "" in the namespace "default"`)
	}
	// Authorized (this agent speaks plain text to a TLS apiserver: the
	// call then fails as Unavailable, past authorization).
	allowed(t, "carol exec", runExec(ctx, carol, false, execOpts("one", "", true, "cat"), "x").err)
}

// TestPodExecAuditHoldsTheOptionsOnly: at level Request, an exec's audit
// line has its options (the command), never the stream's data, even
// stdin sent in the first request.
func TestPodExecAuditHoldsTheOptionsOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Audit = audit.Options{Path: path, Level: audit.LevelRequest}
	}))
	startStreamCluster(t, s)
	ctx := testContext(t)
	first := execOpts("one", "", true, "cat", "-")
	first.Stdin = []byte("TOPSECRET-STDIN")
	// The agent speaks plain text to this TLS apiserver: the call fails
	// past the chain, which has audited it.
	runExec(ctx, corev1.NewPodsClient(s.ConnAs(t, "execer")), false, first, "MORE-SECRET")
	var events []auditEvent
	var sig await.Signal
	sig.Until(t, 10*time.Second, "the exec's audit line", ctx.Done(), func() (bool, string) {
		var err error
		events, err = auditLines(t, path, "execer")
		if err != nil {
			return false, err.Error()
		}
		return len(events) == 1, fmt.Sprintf("%d lines of user execer", len(events))
	})
	e := events[0]
	if e.Verb != "create" || e.ObjectRef.Resource != "pods" || e.ObjectRef.Namespace != "default" || e.ObjectRef.Name != "one" {
		t.Errorf("audit line %+v, want create pods default/one (subresource exec)", e)
	}
	obj := string(e.RequestObject)
	if !strings.Contains(obj, `"cat"`) {
		t.Errorf("requestObject %s lacks the command", obj)
	}
	for _, secret := range []string{"TOPSECRET", base64.StdEncoding.EncodeToString([]byte("TOPSECRET-STDIN")), "MORE-SECRET", base64.StdEncoding.EncodeToString([]byte("MORE-SECRET"))} {
		if strings.Contains(obj, secret) {
			t.Errorf("requestObject %s holds stdin (%s)", obj, secret)
		}
	}
}
