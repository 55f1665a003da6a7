package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/protobuf/proto"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
)

// pods/portforward as kube-apiserver serves it: Kubernetes'
// port-forward protocol (portforward.k8s.io) is SPDY, either tunnelled
// in a WebSocket (subprotocol SPDY/3.1+portforward.k8s.io, what kubectl
// speaks since 1.31) or after a plain HTTP/1.1 upgrade (older kubectl,
// client-go's SPDY dialer, kubectl's fallback). Each forwarded
// connection is a pair of SPDY streams of one requestID, an error stream
// and a data stream, naming the port; each pair becomes one PortForward
// call through the chain (authorization as create on pods/portforward,
// admission, audit) to the pod's node agent, as skiffctl's port-forward.

const (
	portForwardProtocol = "portforward.k8s.io"
	// tunnelProtocol is the WebSocket subprotocol of SPDY tunnelled in
	// it (client-go's constants.WebsocketsSPDYTunnelingPrefix plus the
	// protocol).
	tunnelProtocol = "SPDY/3.1+" + portForwardProtocol
	// portForwardIdleTimeout closes a connection that carried nothing
	// for that long (the kubelet's streaming idle timeout).
	portForwardIdleTimeout = 4 * time.Hour
	// portForwardChunk bounds one PortForwardRequest's data (as the node
	// agent's responses: a message within gRPC's 32 KiB buffers).
	portForwardChunk = 32<<10 - 64
)

var tunnelUpgrader = websocket.Upgrader{
	Subprotocols:    []string{tunnelProtocol},
	ReadBufferSize:  32 << 10,
	WriteBufferSize: 32 << 10,
	CheckOrigin:     func(*http.Request) bool { return true },
}

func (h *Handler) portForward(w http.ResponseWriter, r *http.Request, req resourceRequest) {
	ctx, cancel := context.WithCancel(requestContext(r))
	defer cancel()
	f := &forwarder{h: h, ctx: ctx, req: req, pending: map[string]*streamPair{}}
	var conn httpstream.Connection
	if websocket.IsWebSocketUpgrade(r) {
		if !slices.Contains(websocket.Subprotocols(r), tunnelProtocol) {
			writeError(w, apierrors.NewBadRequest(fmt.Sprintf("port-forward over WebSocket needs the subprotocol %s (SPDY tunnelled in the WebSocket), offered %q",
				tunnelProtocol, websocket.Subprotocols(r))))
			return
		}
		ws, err := tunnelUpgrader.Upgrade(w, r, nil)
		if err != nil {
			return // the upgrader answered
		}
		if conn, err = spdy.NewServerConnection(&tunnelConn{ws: ws}, f.newStream); err != nil {
			ws.Close()
			return
		}
	} else {
		if !httpstream.IsUpgradeRequest(r) {
			writeError(w, apierrors.NewBadRequest("port-forward is served over an upgraded connection: WebSocket (subprotocol "+tunnelProtocol+") or SPDY/3.1"))
			return
		}
		if _, err := httpstream.Handshake(r, w, []string{portForwardProtocol}); err != nil {
			return // Handshake answered 403 with the protocols it speaks
		}
		if conn = spdy.NewResponseUpgrader().UpgradeResponse(w, r, f.newStream); conn == nil {
			return // the upgrader answered
		}
	}
	defer conn.Close()
	conn.SetIdleTimeout(portForwardIdleTimeout)
	select {
	case <-conn.CloseChan():
	case <-ctx.Done():
	}
}

// forwarder pairs one connection's streams by requestID and forwards
// each complete pair.
type forwarder struct {
	h   *Handler
	ctx context.Context
	req resourceRequest

	mu      sync.Mutex
	pending map[string]*streamPair
}

// streamPair is one forwarded connection's streams, with the signals
// that their replies were sent (no data may go before).
type streamPair struct {
	port              int32
	data, errs        httpstream.Stream
	dataSent, errSent <-chan struct{}
}

// newStream takes a stream the client created: its headers name its
// type, port and request; a bad one is refused (the client sees the
// stream reset).
func (f *forwarder) newStream(s httpstream.Stream, replySent <-chan struct{}) error {
	hd := s.Headers()
	port, err := strconv.Atoi(hd.Get("port"))
	if err != nil || port <= 0 || port > 65535 {
		return fmt.Errorf("port-forward stream: port %q is not a port number (1-65535)", hd.Get("port"))
	}
	id := hd.Get("requestID")
	f.mu.Lock()
	p := f.pending[id]
	if p == nil {
		p = &streamPair{port: int32(port)}
		f.pending[id] = p
	}
	switch hd.Get("streamType") {
	case "error":
		if p.errs != nil {
			f.mu.Unlock()
			return fmt.Errorf("port-forward request %s: a second error stream", id)
		}
		p.errs, p.errSent = s, replySent
	case "data":
		if p.data != nil {
			f.mu.Unlock()
			return fmt.Errorf("port-forward request %s: a second data stream", id)
		}
		p.data, p.dataSent = s, replySent
	default:
		f.mu.Unlock()
		return fmt.Errorf("port-forward stream: streamType %q is neither error nor data", hd.Get("streamType"))
	}
	complete := p.errs != nil && p.data != nil
	if complete {
		delete(f.pending, id)
	}
	f.mu.Unlock()
	if complete {
		go f.forward(p)
	}
	return nil
}

// forward relays one pair to the pod's port through the PortForward
// method; a failure is written to the error stream, as the kubelet
// words it, for the client to print.
func (f *forwarder) forward(p *streamPair) {
	defer p.data.Close()
	defer p.errs.Close()
	for _, sent := range []<-chan struct{}{p.dataSent, p.errSent} {
		select {
		case <-sent:
		case <-f.ctx.Done():
			return
		}
	}
	first := &corev1.PortForwardRequest{Options: &corev1.PodPortForwardOptions{Namespace: f.req.namespace, Name: f.req.name, Port: p.port}}
	// One buffer for the pair: the chain copies each request's data
	// before it asks for the next (server.callStream.RecvMsg).
	buf := make([]byte, portForwardChunk)
	recv := func() (proto.Message, error) {
		n, err := p.data.Read(buf)
		if n > 0 {
			return &corev1.PortForwardRequest{Data: buf[:n]}, nil
		}
		if err != nil {
			return nil, io.EOF // the client's half-close (or its end)
		}
		return &corev1.PortForwardRequest{}, nil
	}
	send := func(b []byte) error {
		var resp corev1.PortForwardResponse
		if err := proto.Unmarshal(b, &resp); err != nil {
			return err
		}
		_, err := p.data.Write(resp.GetData())
		return err
	}
	err := f.h.cfg.Methods.Bidi(f.ctx, method(f.req.kind, "PortForward"), first, recv, send)
	if err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(p.errs, "error forwarding port %d to pod %s: %s", p.port, f.req.name, apierrors.FromError(err).Status.GetMessage())
	}
}

// tunnelConn is a WebSocket as the byte stream SPDY runs on: each binary
// message carries some of it, as client-go's TunnelingConnection writes.
type tunnelConn struct {
	ws      *websocket.Conn
	reader  io.Reader // the message being read
	writeMu sync.Mutex
}

var _ net.Conn = (*tunnelConn)(nil)

func (c *tunnelConn) Read(p []byte) (int, error) {
	for {
		if c.reader == nil {
			typ, r, err := c.ws.NextReader()
			if err != nil {
				if ce := (*websocket.CloseError)(nil); errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure {
					return 0, io.EOF
				}
				return 0, err
			}
			if typ != websocket.BinaryMessage {
				return 0, fmt.Errorf("port-forward tunnel: a message of type %d, not binary", typ)
			}
			c.reader = r
		}
		n, err := c.reader.Read(p)
		if errors.Is(err, io.EOF) {
			c.reader = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

func (c *tunnelConn) Write(p []byte) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if err := c.ws.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *tunnelConn) Close() error {
	c.writeMu.Lock()
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	c.writeMu.Unlock()
	return c.ws.Close()
}

func (c *tunnelConn) LocalAddr() net.Addr  { return c.ws.LocalAddr() }
func (c *tunnelConn) RemoteAddr() net.Addr { return c.ws.RemoteAddr() }
func (c *tunnelConn) SetDeadline(t time.Time) error {
	return errors.Join(c.ws.SetReadDeadline(t), c.ws.SetWriteDeadline(t))
}
func (c *tunnelConn) SetReadDeadline(t time.Time) error  { return c.ws.SetReadDeadline(t) }
func (c *tunnelConn) SetWriteDeadline(t time.Time) error { return c.ws.SetWriteDeadline(t) }
