package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// Config is how a component reaches the apiserver: its address, the CA
// that verifies it, and the credentials to present (a client certificate,
// a bearer token, or both). Files and in-memory data are alternatives:
// the *Data fields (skiffctl's config inlines them) win over the files.
type Config struct {
	Server string
	// CAFile verifies the apiserver's certificate; empty: the system's roots.
	CAFile string
	// CertFile and KeyFile are a client certificate (CN = user, O = groups).
	CertFile, KeyFile string
	// TokenFile holds a bearer token (a service-account token, say).
	TokenFile string
	// Insecure dials plain text (an apiserver started with --insecure).
	Insecure bool

	CAData, CertData, KeyData []byte
	Token                     string
	// ServerName is the name the apiserver's certificate must carry;
	// empty: the host of Server.
	ServerName string
	// InsecureSkipVerify does not verify the apiserver's certificate at
	// all (skiffctl's insecure-skip-tls-verify).
	InsecureSkipVerify bool
	// GetClientCertificate, when set, is asked for the client certificate
	// at each TLS handshake instead of CertFile/CertData: a certificate
	// renewed while the process runs (the node agent's) is used by every
	// connection made after.
	GetClientCertificate func(*tls.CertificateRequestInfo) (*tls.Certificate, error)
}

// AddFlags registers --server, --tls-ca-file, --tls-cert-file,
// --tls-key-file, --token-file and --insecure on fs.
func (c *Config) AddFlags(fs *flag.FlagSet, defaultServer string) {
	fs.StringVar(&c.Server, "server", defaultServer, "apiserver gRPC address (host:port), or several separated by commas (the members of a highly available control plane: the client keeps to one that answers and moves to another when it fails)")
	fs.StringVar(&c.CAFile, "tls-ca-file", "", "CA certificate (PEM) that verifies the apiserver's serving certificate, e.g. <apiserver pki-dir>/ca.crt (default: the system's roots)")
	fs.StringVar(&c.CertFile, "tls-cert-file", "", "client certificate (PEM) presented to the apiserver: CN is the user, O the groups (issue one with `skiff-apiserver certs issue`)")
	fs.StringVar(&c.KeyFile, "tls-key-file", "", "private key of --tls-cert-file")
	fs.StringVar(&c.TokenFile, "token-file", "", "file holding a bearer token presented to the apiserver (instead of, or besides, a client certificate)")
	fs.BoolVar(&c.Insecure, "insecure", false, "DEVELOPMENT ONLY: dial the apiserver in plain text (one started with --insecure); no certificate is checked")
}

// Validate checks the config without reading files: it names the flag at
// fault.
func (c *Config) Validate() error {
	switch {
	case c.Server == "":
		return errors.New("--server: the apiserver address is required")
	case (c.CertFile == "") != (c.KeyFile == ""):
		return errors.New("--tls-cert-file and --tls-key-file go together")
	case (c.CertData == nil) != (c.KeyData == nil):
		return errors.New("client certificate and key go together")
	case c.Insecure && (c.CAFile != "" || c.CertFile != "" || c.CAData != nil || c.CertData != nil):
		return errors.New("--insecure dials plain text: it cannot go with --tls-ca-file, --tls-cert-file or --tls-key-file")
	}
	return nil
}

// Credentials are the dial options of cfg: transport credentials (TLS, or
// plain text with Insecure) and the bearer token, if any.
func (c *Config) Credentials() ([]grpc.DialOption, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	token := c.Token
	if token == "" && c.TokenFile != "" {
		b, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return nil, fmt.Errorf("--token-file %s: empty", c.TokenFile)
		}
	}
	var opts []grpc.DialOption
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{token: token, secure: !c.Insecure}))
	}
	if c.Insecure {
		return append(opts, grpc.WithTransportCredentials(insecure.NewCredentials())), nil
	}
	tc, err := c.TLSConfig()
	if err != nil {
		return nil, err
	}
	return append(opts, grpc.WithTransportCredentials(credentials.NewTLS(tc))), nil
}

// GRPCProtocol is the ALPN protocol Skiff's gRPC clients offer before
// h2: the apiserver's port serves gRPC and Kubernetes' HTTP API, and hands
// a connection that negotiates this protocol to its native gRPC server
// (any other gRPC client is served too, through its HTTP server, slower).
const GRPCProtocol = "skiff-grpc"

// TLSConfig is the TLS configuration of cfg (not for Insecure). It offers
// GRPCProtocol, then h2 (added by gRPC's credentials).
func (c *Config) TLSConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify, NextProtos: []string{GRPCProtocol}}
	ca := c.CAData
	if ca == nil && c.CAFile != "" {
		b, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca-file: %w", err)
		}
		ca = b
	}
	if ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("--tls-ca-file %s: no PEM certificate found", c.CAFile)
		}
		tc.RootCAs = pool
	}
	certPEM, keyPEM := c.CertData, c.KeyData
	if certPEM == nil && c.CertFile != "" {
		var err error
		if certPEM, err = os.ReadFile(c.CertFile); err != nil {
			return nil, fmt.Errorf("--tls-cert-file: %w", err)
		}
		if keyPEM, err = os.ReadFile(c.KeyFile); err != nil {
			return nil, fmt.Errorf("--tls-key-file: %w", err)
		}
	}
	if certPEM != nil {
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	if c.GetClientCertificate != nil {
		tc.Certificates, tc.GetClientCertificate = nil, c.GetClientCertificate
	}
	return tc, nil
}

// Dial connects to the apiserver as cfg says (lazily: grpc.NewClient; the
// first call fails if the apiserver is away or refuses the credentials).
// opts are added after the credentials. Calls refused by the apiserver's
// fairness are retried after its hint (RetryThrottled).
func Dial(cfg Config, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	creds, err := cfg.Credentials()
	if err != nil {
		return nil, err
	}
	// A call the apiserver's fairness refused (ResourceExhausted with a
	// retry hint) is retried after the hint: it never ran.
	dial := append(append(creds, RetryThrottled()...), WindowSizes()...)
	target := cfg.Server
	if members := Members(cfg.Server); len(members) > 1 {
		var more []grpc.DialOption
		target, more = membersTarget(members)
		dial = append(dial, more...)
	}
	dial = append(dial, opts...)
	conn, err := grpc.NewClient(target, dial...)
	if err != nil {
		return nil, fmt.Errorf("--server %q: %w", cfg.Server, err)
	}
	return conn, nil
}

// Members are the apiserver addresses of a --server value: one, or
// several separated by commas (the members of a highly available
// control plane).
func Members(server string) []string {
	var out []string
	for _, m := range strings.Split(server, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// membersTarget is the target and options of a connection to any of
// several apiservers: gRPC's pick_first over all of them, in an order of
// its own for each connection (so that clients spread over the members),
// keeps one connection to a member that answers and, when it breaks,
// connects to the next that does; calls of the broken connection fail
// (Unavailable) and the caller's retry, or an informer's next watch from
// its last revision, goes to the new member. Each member's certificate is
// checked against its own host.
func membersTarget(members []string) (string, []grpc.DialOption) {
	r := manual.NewBuilderWithScheme("skiff-members")
	var st resolver.State
	for _, m := range members {
		host, _, err := net.SplitHostPort(m)
		if err != nil {
			host = m
		}
		st.Addresses = append(st.Addresses, resolver.Address{Addr: m, ServerName: host})
	}
	r.InitialState(st)
	return r.Scheme() + ":///apiservers", []grpc.DialOption{
		grpc.WithResolvers(r),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"pick_first":{"shuffleAddressList":true}}]}`),
	}
}

// HTTP/2 flow-control windows of the API's connections, client and server
// alike. gRPC's default (64 KiB per stream, grown by BDP pings) makes a busy
// watch connection wait a round trip for each WINDOW_UPDATE: with 1,000
// watchers at 1,000 events/s each (bench watch.fanout) the p99 delivery
// went from about 1.2 s to about 0.1 s with these. A window is a bound,
// not an allocation: memory is used only by data a slow reader has not
// taken yet.
const (
	StreamWindowBytes = 1 << 20
	ConnWindowBytes   = 16 << 20
)

// WindowSizes are the dial options setting those windows.
func WindowSizes() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithInitialWindowSize(StreamWindowBytes), grpc.WithInitialConnWindowSize(ConnWindowBytes)}
}

// bearer sends "authorization: Bearer <token>" with every call; over TLS
// only, unless the connection is plain text on purpose (--insecure).
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }
