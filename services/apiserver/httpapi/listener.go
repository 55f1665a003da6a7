package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/credentials"

	"skiff.dev/internal/client"
)

// One port, two protocols. The apiserver's port serves gRPC (Skiff's own
// clients, the fast path) and Kubernetes' HTTP API (kubectl, client-go,
// Helm) over the same TLS listener. With TLS the handshake tells them
// apart: Skiff's clients offer the ALPN protocol client.GRPCProtocol
// before h2 and the server prefers it, so their connections go to the
// native gRPC server; every other client negotiates h2 or http/1.1 and
// goes to the HTTP server, which still hands a gRPC request
// (content-type application/grpc, a third-party gRPC client offering
// only h2) to the gRPC server (slower, but served). In plain text
// (--insecure) the first bytes tell: HTTP/2's connection preface is gRPC
// (prior-knowledge h2c), anything else HTTP/1.1.

// NextProtos are the ALPN protocols the server offers, in its preference.
var NextProtos = []string{client.GRPCProtocol, "h2", "http/1.1"}

// handshakeTimeout bounds a connection's TLS handshake (or, in plain
// text, its first bytes), so a client that sends nothing holds nothing
// but its own goroutine for long.
const handshakeTimeout = 10 * time.Second

// h2Preface starts every HTTP/2 connection.
var h2Preface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")

// Split accepts l's connections and hands each, once its TLS handshake is
// done (tlsConfig nil: plain text), to the gRPC listener or the HTTP
// listener. Both end when l does. tlsConfig's NextProtos are set to
// NextProtos.
func Split(l net.Listener, tlsConfig *tls.Config, log *zap.Logger) (grpcL, httpL net.Listener) {
	if tlsConfig != nil {
		tlsConfig = tlsConfig.Clone()
		tlsConfig.NextProtos = NextProtos
	}
	s := &splitter{l: l, tls: tlsConfig, log: log, done: make(chan struct{})}
	s.grpc = &subListener{s: s, conns: make(chan net.Conn)}
	s.http = &subListener{s: s, conns: make(chan net.Conn)}
	go s.run()
	return s.grpc, s.http
}

type splitter struct {
	l          net.Listener
	tls        *tls.Config
	log        *zap.Logger
	grpc, http *subListener
	closeOnce  sync.Once
	done       chan struct{}
	err        error // why accepting ended; set before done closes
}

func (s *splitter) run() {
	var tempDelay time.Duration
	for {
		c, err := s.l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				tempDelay = min(max(2*tempDelay, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(tempDelay):
					continue
				case <-s.done:
				}
			}
			s.stop(err)
			return
		}
		tempDelay = 0
		go s.route(c)
	}
}

func (s *splitter) stop(err error) {
	s.closeOnce.Do(func() {
		s.err = err
		close(s.done)
		_ = s.l.Close()
	})
}

// route finds a connection's protocol and hands it over.
func (s *splitter) route(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	conn, toGRPC, err := s.identify(c)
	if err != nil {
		if s.log != nil {
			s.log.Debug("connection dropped before its protocol was known", zap.Stringer("remote", c.RemoteAddr()), zap.Error(err))
		}
		_ = c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	to := s.http
	if toGRPC {
		to = s.grpc
	}
	select {
	case to.conns <- conn:
	case <-s.done:
		_ = conn.Close()
	}
}

func (s *splitter) identify(c net.Conn) (net.Conn, bool, error) {
	if s.tls != nil {
		tc := tls.Server(c, s.tls)
		if err := tc.HandshakeContext(context.Background()); err != nil {
			return nil, false, err
		}
		return tc, tc.ConnectionState().NegotiatedProtocol == client.GRPCProtocol, nil
	}
	br := bufio.NewReaderSize(c, len(h2Preface))
	first, err := br.Peek(len(h2Preface))
	if err != nil && len(first) == 0 {
		return nil, false, err
	}
	return &peekedConn{Conn: c, r: br}, bytes.Equal(first, h2Preface), nil
}

// peekedConn is a connection whose first bytes were read to identify it:
// reads drain them first.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// subListener is one protocol's side of a Split.
type subListener struct {
	s     *splitter
	conns chan net.Conn
}

func (l *subListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.s.done:
		return nil, net.ErrClosed
	}
}

// Close closes the shared listener: both sides end.
func (l *subListener) Close() error {
	l.s.stop(net.ErrClosed)
	return nil
}

func (l *subListener) Addr() net.Addr { return l.s.l.Addr() }

// Handshaken are the gRPC server's transport credentials for connections
// a Split has already secured: a TLS connection's state becomes the
// call's credentials.TLSInfo (client certificates included, as the
// authenticator reads them); a plain connection has none.
type Handshaken struct{}

var _ credentials.TransportCredentials = Handshaken{}

func (Handshaken) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return c, plainInfo{credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}, nil
	}
	return c, credentials.TLSInfo{State: tc.ConnectionState(), CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}, nil
}

func (Handshaken) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("httpapi.Handshaken: server credentials only")
}

func (Handshaken) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

func (h Handshaken) Clone() credentials.TransportCredentials { return h }

func (Handshaken) OverrideServerName(string) error { return nil }

type plainInfo struct{ credentials.CommonAuthInfo }

func (plainInfo) AuthType() string { return "insecure" }
