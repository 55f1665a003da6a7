package scenarios

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// kubeClient is the HTTP scenarios' client: real client-go, configured as
// a Kubernetes program configures it from a kubeconfig (one clientset, so
// one transport: over TLS one HTTP/2 connection that every goroutine's
// requests share), in JSON, with the benchmark's credentials. It counts
// the connections it dials and the protocol of each response, so a figure
// can say what it was measured over instead of assuming it.
type kubeClient struct {
	*kubernetes.Clientset
	tls   bool
	conns *connCounter
	h2    atomic.Int64 // responses over HTTP/2
	h1    atomic.Int64 // responses over HTTP/1.x
}

// newKubeClient builds the client of env's apiserver. Over TLS (env.Client
// set: the cluster CA, a client certificate or token) client-go negotiates
// h2; in plain text (an --insecure apiserver) Go's transport speaks
// HTTP/1.1 only, one request per connection at a time.
func newKubeClient(env *Env) (*kubeClient, error) {
	cfg := &rest.Config{Host: "http://" + env.Addr}
	if c := env.Client; c != nil && !c.Insecure {
		cfg.Host = "https://" + env.Addr
		cfg.TLSClientConfig = rest.TLSClientConfig{
			CAFile: c.CAFile, CAData: c.CAData,
			CertFile: c.CertFile, CertData: c.CertData,
			KeyFile: c.KeyFile, KeyData: c.KeyData,
			ServerName: c.ServerName, Insecure: c.InsecureSkipVerify,
		}
		cfg.BearerToken, cfg.BearerTokenFile = c.Token, c.TokenFile
	}
	return kubeClientFor(cfg)
}

// kubeClientFor completes cfg (its host and credentials set) as every
// HTTP scenario's client is configured.
func kubeClientFor(cfg *rest.Config) (*kubeClient, error) {
	k := &kubeClient{conns: &connCounter{open: map[*countedConn]struct{}{}}, tls: strings.HasPrefix(cfg.Host, "https://")}
	cfg.ContentConfig = rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"}
	// No client-side rate limit: the server is what is measured.
	cfg.QPS = -1
	cfg.Dial = k.conns.dial
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return &protoCounter{rt: rt, k: k}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client-go for %s: %w", cfg.Host, err)
	}
	k.Clientset = cs
	return k, nil
}

// close closes every connection the client dialed (client-go keeps its
// transport's idle connections for good).
func (k *kubeClient) close() { k.conns.closeAll() }

// wire says what the requests went over so far: the protocol of the
// responses and the connections dialed, e.g. "client-go, JSON, HTTP/2 over
// TLS, connections dialed 1 (at most 1 open), responses 12345".
func (k *kubeClient) wire() string {
	h2, h1 := k.h2.Load(), k.h1.Load()
	proto := "HTTP/2"
	switch {
	case h1 > 0 && h2 > 0:
		proto = fmt.Sprintf("HTTP/2 (%d responses) and HTTP/1.1 (%d)", h2, h1)
	case h1 > 0:
		proto = "HTTP/1.1"
	}
	security := "TLS"
	if !k.tls {
		security = "plain text (--insecure apiserver: no h2c in Go's client)"
	}
	dialed, maxOpen := k.conns.counts()
	return fmt.Sprintf("client-go, JSON, %s over %s, connections dialed %d (at most %d open), responses %d",
		proto, security, dialed, maxOpen, h1+h2)
}

// protoCounter counts responses by protocol version.
type protoCounter struct {
	rt http.RoundTripper
	k  *kubeClient
}

func (p *protoCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.rt.RoundTrip(r)
	if err == nil {
		if resp.ProtoMajor == 2 {
			p.k.h2.Add(1)
		} else {
			p.k.h1.Add(1)
		}
	}
	return resp, err
}

// WrappedRoundTripper lets client-go's utilities (CloseIdleConnectionsFor)
// reach the transport under it.
func (p *protoCounter) WrappedRoundTripper() http.RoundTripper { return p.rt }

// connCounter dials TCP connections and counts them: how many were dialed,
// how many are open, and the most open at once.
type connCounter struct {
	mu      sync.Mutex
	dialed  int
	maxOpen int
	open    map[*countedConn]struct{}
}

func (c *connCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cc := &countedConn{Conn: conn, c: c}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dialed++
	c.open[cc] = struct{}{}
	c.maxOpen = max(c.maxOpen, len(c.open))
	return cc, nil
}

func (c *connCounter) counts() (dialed, maxOpen int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dialed, c.maxOpen
}

func (c *connCounter) closeAll() {
	c.mu.Lock()
	open := make([]*countedConn, 0, len(c.open))
	for cc := range c.open {
		open = append(open, cc)
	}
	c.mu.Unlock()
	for _, cc := range open {
		_ = cc.Close()
	}
}

// countedConn leaves its counter's open set when it closes.
type countedConn struct {
	net.Conn
	c    *connCounter
	once sync.Once
}

func (cc *countedConn) Close() error {
	cc.once.Do(func() {
		cc.c.mu.Lock()
		delete(cc.c.open, cc)
		cc.c.mu.Unlock()
	})
	return cc.Conn.Close()
}
