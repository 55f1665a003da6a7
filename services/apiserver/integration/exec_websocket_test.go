package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"skiff.dev/services/apiserver/apiservertest"
)

// TestExecOverWebSocket: client-go's WebSocket executor (kubectl exec's,
// channel protocol v5) runs a command through the HTTP API's pods/exec,
// proxied to the node agent: stdin in, stdout and stderr out, the exit
// code as kubectl reports it; attach the same without one.
func TestExecOverWebSocket(t *testing.T) {
	s := apiservertest.Start(t)
	startStreamCluster(t, s)
	ctx := testContext(t)
	rc := &rest.Config{Host: "http://" + s.Addr()}
	run := func(path string, stdin string) (string, string, error) {
		t.Helper()
		ex, err := remotecommand.NewWebSocketExecutor(rc, "GET", "http://"+s.Addr()+path)
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		o := remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}
		if stdin != "" {
			o.Stdin = strings.NewReader(stdin)
		}
		err = ex.StreamWithContext(ctx, o)
		return out.String(), errOut.String(), err
	}
	out, errOut, err := run("/api/v1/namespaces/default/pods/one/exec?command=cat&command=-&stdin=true&stdout=true&stderr=true", "hello world\n")
	var ce utilexec.CodeExitError
	if !errors.As(err, &ce) || ce.Code != 2 || out != "default/one/web [cat -] stdin=true tty=false\nhello world\n" || errOut != "bye\n" {
		t.Errorf("exec: stdout %q stderr %q err %v", out, errOut, err)
	}
	out, _, err = run("/api/v1/namespaces/default/pods/two/attach?container=sidecar&stdout=true&stderr=true", "")
	if err != nil || out != "default/two/sidecar [] stdin=false tty=false\n" {
		t.Errorf("attach: stdout %q err %v", out, err)
	}
	if _, _, err := run("/api/v1/namespaces/default/pods/pending/exec?command=true&stdout=true", ""); err == nil {
		t.Error("exec in a pod with no node succeeded")
	}
}

// TestPortForwardOverHTTP: client-go's port-forwarder (kubectl
// port-forward's) through the HTTP API's pods/portforward, with SPDY
// tunnelled in a WebSocket (kubectl's default) and with plain SPDY (its
// fallback): each local connection is a stream pair relayed to the node
// agent, whose echo comes back; a pod on no node fails on the error
// stream with the apiserver's reason.
func TestPortForwardOverHTTP(t *testing.T) {
	s := apiservertest.Start(t)
	startStreamCluster(t, s)
	rc := &rest.Config{Host: "http://" + s.Addr()}
	dialers := map[string]func(u *url.URL) httpstream.Dialer{
		"websocket": func(u *url.URL) httpstream.Dialer {
			d, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, rc)
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		"spdy": func(u *url.URL) httpstream.Dialer {
			rt, up, err := spdy.RoundTripperFor(rc)
			if err != nil {
				t.Fatal(err)
			}
			return spdy.NewDialerForStreaming(up, &http.Client{Transport: rt}, http.MethodPost, u)
		},
	}
	for name, dialer := range dialers {
		t.Run(name, func(t *testing.T) {
			forward := func(pod string) uint16 {
				u, _ := url.Parse("http://" + s.Addr() + "/api/v1/namespaces/default/pods/" + pod + "/portforward")
				stop, ready := make(chan struct{}), make(chan struct{})
				fw, err := portforward.NewOnAddressesForStreaming(dialer(u), []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- fw.ForwardPorts() }()
				select {
				case <-ready:
					t.Cleanup(func() {
						close(stop)
						<-done
					})
				case err := <-done:
					t.Fatalf("port-forward to %s: %v", pod, err)
				}
				ports, err := fw.GetPorts()
				if err != nil {
					t.Fatal(err)
				}
				return ports[0].Local
			}
			// roundTrip sends msg over a connection to the local port and
			// reads what comes back until the end. failing: the forwarder
			// closes the connection, maybe with msg unread (the kernel then
			// resets it), and that is an end too.
			roundTrip := func(port uint16, msg string, failing bool) string {
				t.Helper()
				c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				reset := func(err error) bool {
					return failing && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
				}
				if _, err := io.WriteString(c, msg); err != nil && !reset(err) {
					t.Fatal(err)
				}
				c.(*net.TCPConn).CloseWrite()
				b, err := io.ReadAll(c)
				if err != nil && !reset(err) {
					t.Fatal(err)
				}
				return string(b)
			}
			port := forward("one")
			for i := range 3 { // three connections over one forwarding
				msg := strings.Repeat(fmt.Sprintf("hello %d ", i), 10_000)
				if got := roundTrip(port, msg, false); got != "port 8080: "+msg {
					t.Errorf("connection %d: got %d bytes %.40q..., want the echo of %d", i, len(got), got, len(msg))
				}
			}
			// The forwarder reports the error stream's message (kubectl
			// prints it) before it closes the local connection.
			var reported lockedBuffer
			saved := utilruntime.ErrorHandlers
			utilruntime.ErrorHandlers = append([]utilruntime.ErrorHandler{func(_ context.Context, err error, msg string, _ ...any) {
				fmt.Fprintf(&reported, "%s: %v\n", msg, err)
			}}, saved...)
			t.Cleanup(func() { utilruntime.ErrorHandlers = saved })
			if got := roundTrip(forward("pending"), "x", true); got != "" {
				t.Errorf("a pod on no node: got %q", got)
			}
			if want := `An error occurred forwarding: error forwarding port 8080 to pod pending: `; !strings.Contains(string(reported.Bytes()), want) {
				t.Errorf("a pod on no node: reported %q, want %q", reported.Bytes(), want)
			}
		})
	}
}
