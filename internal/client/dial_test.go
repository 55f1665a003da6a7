package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// testCA makes certificates for the tests (the apiserver's own CA lives in
// services/apiserver/authn/pki, which this module cannot import).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (ca *testCA) issue(t *testing.T, cn string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames, tmpl.IPAddresses = []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// seen is what the test server saw of a call.
type seen struct {
	commonName, authorization string
}

// startTLSServer serves gRPC health over TLS (client certificates verified
// when given) and reports each call's client certificate and token.
func startTLSServer(t *testing.T, ca *testCA) (string, <-chan seen) {
	t.Helper()
	certPEM, keyPEM := ca.issue(t, "server", true)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	calls := make(chan seen, 10)
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool})),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			var s seen
			if p, ok := peer.FromContext(ctx); ok {
				if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.VerifiedChains) > 0 {
					s.commonName = ti.State.VerifiedChains[0][0].Subject.CommonName
				}
			}
			if v := metadata.ValueFromIncomingContext(ctx, "authorization"); len(v) > 0 {
				s.authorization = v[0]
			}
			calls <- s
			return next(ctx, req)
		}))
	return serveHealth(t, g), calls
}

// serveHealth serves gRPC health with g on a loopback port until the test
// ends, and returns its address.
func serveHealth(t *testing.T, g *grpc.Server) string {
	t.Helper()
	healthpb.RegisterHealthServer(g, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return lis.Addr().String()
}

func check(t *testing.T, conn *grpc.ClientConn) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

func TestDialTLS(t *testing.T) {
	ca := newTestCA(t)
	addr, calls := startTLSServer(t, ca)
	dir := t.TempDir()
	certPEM, keyPEM := ca.issue(t, "alice", false)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caFile, certFile, keyFile := write("ca.crt", ca.pem), write("alice.crt", certPEM), write("alice.key", keyPEM)
	tokenFile := write("token", []byte("s3cret\n"))

	for _, tc := range []struct {
		name     string
		cfg      Config
		wantCN   string
		wantAuth string
	}{
		{"client certificate from files", Config{Server: addr, CAFile: caFile, CertFile: certFile, KeyFile: keyFile}, "alice", ""},
		{"token from a file", Config{Server: addr, CAFile: caFile, TokenFile: tokenFile}, "", "Bearer s3cret"},
		{"certificate and token in memory", Config{Server: addr, CAData: ca.pem, CertData: certPEM, KeyData: keyPEM, Token: "t2"}, "alice", "Bearer t2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := Dial(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := check(t, conn); err != nil {
				t.Fatal(err)
			}
			if got := <-calls; got.commonName != tc.wantCN || got.authorization != tc.wantAuth {
				t.Fatalf("server saw %+v, want CN %q and authorization %q", got, tc.wantCN, tc.wantAuth)
			}
		})
	}
	t.Run("a server of another CA is refused", func(t *testing.T) {
		conn, err := Dial(Config{Server: addr, CAData: newTestCA(t).pem})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := check(t, conn); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("error %v, want a certificate failure", err)
		}
	})
	t.Run("plain text against TLS fails", func(t *testing.T) {
		conn, err := Dial(Config{Server: addr, Insecure: true, Token: "x"})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := check(t, conn); status.Code(err) != codes.Unavailable {
			t.Fatalf("error %v, want Unavailable", err)
		}
	})
}

func TestDialConfigErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no server", Config{}, "--server: the apiserver address is required"},
		{"cert without key", Config{Server: "x:1", CertFile: "a.crt"}, "--tls-cert-file and --tls-key-file go together"},
		{"insecure with TLS files", Config{Server: "x:1", Insecure: true, CAFile: "ca.crt"}, "--insecure dials plain text"},
		{"missing CA file", Config{Server: "x:1", CAFile: filepath.Join(dir, "nope.crt")}, "--tls-ca-file: open"},
		{"CA file without PEM", Config{Server: "x:1", CAFile: empty}, "no PEM certificate found"},
		{"missing token file", Config{Server: "x:1", TokenFile: filepath.Join(dir, "nope")}, "--token-file: open"},
		{"empty token file", Config{Server: "x:1", TokenFile: empty}, "empty"},
		{"bad key pair", Config{Server: "x:1", CertFile: empty, KeyFile: empty}, "--tls-cert-file/--tls-key-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Dial(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestAddFlags(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.AddFlags(fs, "127.0.0.1:6443")
	if err := fs.Parse([]string{"--tls-ca-file", "ca", "--tls-cert-file", "c", "--tls-key-file", "k", "--token-file", "t"}); err != nil {
		t.Fatal(err)
	}
	if c.Server != "127.0.0.1:6443" || c.CAFile != "ca" || c.CertFile != "c" || c.KeyFile != "k" || c.TokenFile != "t" || c.Insecure {
		t.Fatalf("config %+v", c)
	}
}

// TestClientsSpreadOverTheServers: clients given the same several
// addresses (node agents given every control-plane member) do not all
// keep to the first: each connection starts at a shuffled address, so
// 60 connections reach each of three servers.
func TestClientsSpreadOverTheServers(t *testing.T) {
	var addrs []string
	counts := make([]atomic.Int32, 3)
	for i := range counts {
		g := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			counts[i].Add(1)
			return next(ctx, req)
		}))
		addrs = append(addrs, serveHealth(t, g))
	}
	for range 60 {
		conn, err := Dial(Config{Server: strings.Join(addrs, ","), Insecure: true})
		if err != nil {
			t.Fatal(err)
		}
		err = check(t, conn)
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	// All 60 on at most two of three: a chance of 3 x (2/3)^60, 1 in 10^10.
	for i := range counts {
		if n := counts[i].Load(); n == 0 {
			t.Errorf("server %d of 3 got none of 60 connections' calls (%d, %d, %d)", i, counts[0].Load(), counts[1].Load(), counts[2].Load())
		}
	}
}
