package agent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/node-agent/cri"
)

// NodeAgent.Exec, Attach and PortForward: the agent asks the runtime (CRI
// Exec, Attach, PortForward) for a URL of its streaming server, then
// speaks Kubernetes' streaming protocols to it (remotecommand over SPDY
// with the v4 exit status for exec and attach; port-forward's error and
// data streams over SPDY) and relays each side to the gRPC stream. The
// agent never sees what the streams carry beyond copying it; nothing of
// it is logged.

// chunk bounds one ExecResponse's or PortForwardResponse's data: the
// message then fits gRPC's 32 KiB receive buffers (a 32 KiB payload plus
// its framing would take, and zero, a 1 MiB one: a third of
// port-forward's throughput went to clearing them).
const chunk = 32<<10 - 64

// Exec runs a command in a container: the first request names it; later
// ones carry stdin, its end, and terminal sizes; responses carry stdout
// and stderr, and last the exit code. Cancelling the call ends the
// runtime stream.
func (s *nodeAgentServer) Exec(stream grpc.BidiStreamingServer[corev1.ExecRequest, corev1.ExecResponse]) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	o := first.GetOptions()
	if len(o.GetCommand()) == 0 {
		return apierrors.NewBadRequest("you must specify at least one command for the container")
	}
	c, err := s.a.streamTarget(stream.Context(), o.GetNamespace(), o.GetName(), o.GetContainer())
	if err != nil {
		return err
	}
	since := time.Now()
	defer execs.add(execKey{c.ID, cmdlineOf(o.GetCommand())})()
	u, err := s.a.rt.Exec(stream.Context(), &runtimeapi.ExecRequest{ContainerId: c.ID, Cmd: o.GetCommand(),
		Tty: o.GetTty(), Stdin: o.GetStdin(), Stdout: o.GetStdout(), Stderr: o.GetStderr() && !o.GetTty()})
	if err != nil {
		return runtimeError("exec", err)
	}
	err = relayRemoteCommand(stream, first, u, true)
	if stream.Context().Err() != nil {
		// Cancelled: the runtime would let the command run on.
		s.a.reapExec(c.ID, o.GetCommand(), since)
	}
	return err
}

// Attach attaches to a running container's main process, as Exec does
// without a command; its end carries no exit code.
func (s *nodeAgentServer) Attach(stream grpc.BidiStreamingServer[corev1.ExecRequest, corev1.ExecResponse]) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	o := first.GetOptions()
	c, err := s.a.streamTarget(stream.Context(), o.GetNamespace(), o.GetName(), o.GetContainer())
	if err != nil {
		return err
	}
	u, err := s.a.rt.Attach(stream.Context(), &runtimeapi.AttachRequest{ContainerId: c.ID,
		Tty: o.GetTty(), Stdin: o.GetStdin(), Stdout: o.GetStdout(), Stderr: o.GetStderr() && !o.GetTty()})
	if err != nil {
		return runtimeError("attach", err)
	}
	return relayRemoteCommand(stream, first, u, false)
}

// runtimeError maps a streaming call's failure.
func runtimeError(op string, err error) error {
	if cri.IsNotFound(err) {
		return apierrors.NewNotFound("containers", cri.Message(err))
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("container runtime %s: %s", op, cri.Message(err)))
}

// streamTarget is the running container name (or the only one) of a pod on
// this node.
func (a *Agent) streamTarget(ctx context.Context, namespace, name, container string) (*containerInfo, error) {
	pod, ok := a.pods.Store().GetByName(namespace, name)
	if !ok {
		return nil, apierrors.NewNotFound("pods", name)
	}
	if container == "" {
		cs := pod.GetSpec().GetContainers()
		if len(cs) != 1 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", name))
		}
		container = cs[0].GetName()
	}
	all, err := a.obs.observe(ctx, namespace, name)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("container runtime: %v", err))
	}
	c := all.forUID(pod.GetMetadata().GetUid()).latest(container, "")
	if c == nil || !c.running() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("container not found (%q)", container))
	}
	return c, nil
}

// relayRemoteCommand speaks remotecommand to the runtime's URL u and
// relays it to stream (whose first request, the options, was read).
func relayRemoteCommand(stream grpc.BidiStreamingServer[corev1.ExecRequest, corev1.ExecResponse], first *corev1.ExecRequest, u string, exitCode bool) error {
	o := first.GetOptions()
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	target, err := url.Parse(u)
	if err != nil {
		return apierrors.NewInternal(fmt.Errorf("runtime streaming URL: %w", err))
	}
	exec, err := remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, target)
	if err != nil {
		return apierrors.NewInternal(fmt.Errorf("runtime streaming: %w", err))
	}
	out := &responder{stream: stream}
	opts := remotecommand.StreamOptions{Tty: o.GetTty()}
	if o.GetStdout() {
		opts.Stdout = out.writer(false)
	}
	if o.GetStderr() && !o.GetTty() {
		opts.Stderr = out.writer(true)
	}
	var stdinW *io.PipeWriter
	if o.GetStdin() {
		var r *io.PipeReader
		r, stdinW = io.Pipe()
		opts.Stdin = r
		defer r.Close()
	}
	sizes := newSizeQueue(ctx)
	if o.GetTty() {
		opts.TerminalSizeQueue = sizes
	}
	// The client's later requests: stdin, its end, resizes. The end of
	// the client's sending is the end of stdin too.
	handle := func(req *corev1.ExecRequest) error {
		if r := req.GetResize(); r != nil {
			sizes.push(remotecommand.TerminalSize{Width: uint16(r.GetWidth()), Height: uint16(r.GetHeight())})
		}
		if d := req.GetStdin(); len(d) > 0 && stdinW != nil {
			if _, err := stdinW.Write(d); err != nil {
				return err
			}
		}
		if req.GetStdinClose() && stdinW != nil {
			stdinW.Close()
		}
		return nil
	}
	go func() {
		defer func() {
			if stdinW != nil {
				stdinW.Close()
			}
		}()
		for req := first; ; {
			if err := handle(req); err != nil {
				return
			}
			var err error
			if req, err = stream.Recv(); err != nil {
				return
			}
		}
	}()
	err = exec.StreamWithContext(ctx, opts)
	if stream.Context().Err() != nil {
		return stream.Context().Err()
	}
	var code int32
	var ee utilexec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = int32(ee.ExitStatus())
	default:
		return apierrors.NewServiceUnavailable(fmt.Sprintf("container runtime stream: %v", err))
	}
	if !exitCode {
		return nil
	}
	return out.send(&corev1.ExecResponse{ExitCode: &code})
}

// responder serializes sends on an exec stream.
type responder struct {
	mu     sync.Mutex
	stream grpc.BidiStreamingServer[corev1.ExecRequest, corev1.ExecResponse]
}

func (r *responder) send(m *corev1.ExecResponse) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stream.Send(m)
}

func (r *responder) writer(stderr bool) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		n := len(p)
		for len(p) > 0 {
			b := p[:min(len(p), chunk)]
			p = p[len(b):]
			m := &corev1.ExecResponse{Stdout: b}
			if stderr {
				m = &corev1.ExecResponse{Stderr: b}
			}
			if err := r.send(m); err != nil {
				return 0, err
			}
		}
		return n, nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// sizeQueue hands terminal sizes to remotecommand, the newest first
// (older sizes not yet taken are replaced).
type sizeQueue struct {
	ctx context.Context
	ch  chan remotecommand.TerminalSize
}

func newSizeQueue(ctx context.Context) *sizeQueue {
	return &sizeQueue{ctx: ctx, ch: make(chan remotecommand.TerminalSize, 1)}
}

func (q *sizeQueue) push(s remotecommand.TerminalSize) {
	for {
		select {
		case q.ch <- s:
			return
		default:
		}
		select {
		case <-q.ch:
		default:
		}
	}
}

// Next blocks until a size arrives; nil ends the queue.
func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case s := <-q.ch:
		return &s
	case <-q.ctx.Done():
		return nil
	}
}

// PortForward carries one TCP connection to a port of a pod's network
// namespace: the first request names the pod and port; later ones carry
// the client's bytes and its half-close; responses carry the pod's bytes.
func (s *nodeAgentServer) PortForward(stream grpc.BidiStreamingServer[corev1.PortForwardRequest, corev1.PortForwardResponse]) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	o := first.GetOptions()
	if o.GetPort() <= 0 || o.GetPort() > 65535 {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid port %d", o.GetPort()))
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	a := s.a
	pod, ok := a.pods.Store().GetByName(o.GetNamespace(), o.GetName())
	if !ok {
		return apierrors.NewNotFound("pods", o.GetName())
	}
	all, err := a.obs.observe(ctx, o.GetNamespace(), o.GetName())
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("container runtime: %v", err))
	}
	sb := all.forUID(pod.GetMetadata().GetUid()).newestSandbox()
	if sb == nil || !sb.Ready {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s has no running sandbox", o.GetName()))
	}
	u, err := a.rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sb.ID, Port: []int32{o.GetPort()}})
	if err != nil {
		return runtimeError("port-forward", err)
	}
	target, err := url.Parse(u)
	if err != nil {
		return apierrors.NewInternal(fmt.Errorf("runtime streaming URL: %w", err))
	}
	conn, err := dialSPDY(ctx, target, portforward.PortForwardProtocolV1Name)
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("container runtime port-forward: %v", err))
	}
	defer conn.Close()
	go func() {
		<-ctx.Done()
		conn.Close()
	}()
	// Kubernetes' port-forward streams (k8s.io/api/core/v1's StreamType,
	// PortHeader and PortForwardRequestIDHeader): an error stream, then a
	// data stream, of one request.
	h := http.Header{}
	h.Set("streamType", "error")
	h.Set("port", strconv.Itoa(int(o.GetPort())))
	h.Set("requestID", "0")
	errStream, err := conn.CreateStream(h)
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("port-forward error stream: %v", err))
	}
	errStream.Close()
	errc := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(errStream)
		errc <- b
	}()
	h.Set("streamType", "data")
	data, err := conn.CreateStream(h)
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("port-forward data stream: %v", err))
	}
	// Client -> pod, from the first request's data on.
	go func() {
		for req := first; ; {
			if len(req.GetData()) > 0 {
				if _, err := data.Write(req.GetData()); err != nil {
					return
				}
			}
			if req.GetCloseWrite() {
				data.Close()
			}
			var err error
			if req, err = stream.Recv(); err != nil {
				if errors.Is(err, io.EOF) {
					data.Close()
				}
				return
			}
		}
	}()
	// Pod -> client, until the pod's side ends.
	buf := make([]byte, chunk)
	for {
		n, rerr := data.Read(buf)
		if n > 0 {
			if err := stream.Send(&corev1.PortForwardResponse{Data: buf[:n]}); err != nil {
				return err
			}
		}
		if rerr != nil {
			break
		}
	}
	_ = data.Reset()
	select {
	case msg := <-errc:
		if len(msg) > 0 {
			return apierrors.NewServiceUnavailable(fmt.Sprintf("port-forward to port %d: %s", o.GetPort(), msg))
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// spdyReadBuffer is how much of the runtime's SPDY stream one read of
// the connection may take. spdystream reads a frame's 8-byte header and
// its payload with a read each: unbuffered, two system calls a frame,
// the largest cost of reading the runtime's port-forward.
const spdyReadBuffer = 256 << 10

// dialSPDY opens the runtime's streaming URL target as an SPDY connection
// speaking protocol, as client-go's spdy dialer does (an upgrade request
// answered 101 Switching Protocols, no proxy: the runtime is local), with
// the connection's reads buffered. Cancelling ctx abandons the upgrade.
func dialSPDY(ctx context.Context, target *url.URL, protocol string) (httpstream.Connection, error) {
	port := map[string]string{"http": "80", "https": "443"}[target.Scheme]
	if port == "" {
		return nil, fmt.Errorf("runtime streaming URL %s: scheme not http or https", target.Redacted())
	}
	if target.Port() != "" {
		port = target.Port()
	}
	d := &net.Dialer{}
	var conn net.Conn
	var err error
	if addr := net.JoinHostPort(target.Hostname(), port); target.Scheme == "https" {
		conn, err = (&tls.Dialer{NetDialer: d}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	c, err := upgradeSPDY(conn, target, protocol)
	if !stop() || err != nil {
		conn.Close()
		return nil, errors.Join(err, ctx.Err())
	}
	return c, nil
}

// upgradeSPDY asks the server at the other end of conn to switch to SPDY
// and protocol.
func upgradeSPDY(conn net.Conn, target *url.URL, protocol string) (httpstream.Connection, error) {
	req, err := http.NewRequest(http.MethodPost, target.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(httpstream.HeaderConnection, httpstream.HeaderUpgrade)
	req.Header.Set(httpstream.HeaderUpgrade, spdy.HeaderSpdy31)
	req.Header.Set(httpstream.HeaderProtocolVersion, protocol)
	if err := req.Write(conn); err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(conn, spdyReadBuffer)
	resp, err := http.ReadResponse(r, req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("unable to upgrade connection: %s: %s", resp.Status, bytes.TrimSpace(body))
	}
	if got := resp.Header.Get(httpstream.HeaderProtocolVersion); got != protocol {
		return nil, fmt.Errorf("unable to negotiate protocol: client supports %q, server returned %q", protocol, got)
	}
	return spdy.NewClientConnection(bufferedConn{conn, r})
}

// bufferedConn reads a connection through its buffer.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
