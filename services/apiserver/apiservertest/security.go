package apiservertest

import (
	"crypto/ecdsa"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"

	"skiff.dev/internal/client"
	"skiff.dev/services/apiserver/authn"
	"skiff.dev/services/apiserver/authn/pki"
)

// AdminUser is the user of Server.Conn when security is on (in group
// system:masters).
const AdminUser = "skiff-test-admin"

// Security gives clients of a secure test server (Secure) their
// credentials: certificates issued by the server's CA on the fly, and
// service-account tokens signed by its key.
type Security struct {
	addr   string
	CA     *pki.CA
	saKey  *ecdsa.PrivateKey
	issuer string
}

func newSecurity(addr string, o authn.Options, dataDir string) (*Security, error) {
	dir := o.PKIDirIn(dataDir)
	ca, err := pki.LoadCA(dir)
	if err != nil {
		return nil, err
	}
	keyPath := o.ServiceAccountKeyFile
	if keyPath == "" {
		keyPath = filepath.Join(dir, authn.ServiceAccountKey)
	}
	key, err := pki.ReadKey(keyPath)
	if err != nil {
		return nil, err
	}
	saKey, _ := key.(*ecdsa.PrivateKey)
	return &Security{addr: addr, CA: ca, saKey: saKey, issuer: o.ServiceAccountIssuer}, nil
}

// IssueClient returns a client certificate and key (PEM) for user name
// in groups, signed by the server's CA, valid for a day.
func (s *Security) IssueClient(name string, groups ...string) (certPEM, keyPEM []byte, err error) {
	return s.IssueClientFor(24*time.Hour, name, groups...)
}

// IssueClientFor is IssueClient valid from now for ttl (negative: it was
// valid for -ttl and expired -ttl ago).
func (s *Security) IssueClientFor(ttl time.Duration, name string, groups ...string) (certPEM, keyPEM []byte, err error) {
	now := time.Now()
	if ttl < 0 {
		now, ttl = now.Add(2*ttl), -ttl
	}
	return s.CA.Issue(pki.Request{CommonName: name, Organizations: groups, Client: true, Validity: ttl}, now)
}

// Config is the client config of user name in groups, with the
// certificate in memory.
func (s *Security) Config(name string, groups ...string) (client.Config, error) {
	return s.ConfigFor(24*time.Hour, name, groups...)
}

// ConfigFor is Config with a certificate valid from now for ttl
// (negative: already expired, as IssueClientFor).
func (s *Security) ConfigFor(ttl time.Duration, name string, groups ...string) (client.Config, error) {
	certPEM, keyPEM, err := s.IssueClientFor(ttl, name, groups...)
	if err != nil {
		return client.Config{}, err
	}
	return client.Config{Server: s.addr, CAData: s.CA.CertPEM, CertData: certPEM, KeyData: keyPEM}, nil
}

func (s *Security) dialAs(name string, groups ...string) (*grpc.ClientConn, error) {
	cfg, err := s.Config(name, groups...)
	if err != nil {
		return nil, err
	}
	return client.Dial(cfg)
}

func dialed(tb testing.TB, cfg client.Config) *grpc.ClientConn {
	tb.Helper()
	conn, err := client.Dial(cfg)
	if err != nil {
		tb.Fatalf("dialing the apiserver: %v", err)
	}
	tb.Cleanup(func() { conn.Close() })
	return conn
}

// ConnAs is a connection as user name in groups (a client certificate
// issued on the fly), closed when tb ends.
func (s *Security) ConnAs(tb testing.TB, name string, groups ...string) *grpc.ClientConn {
	tb.Helper()
	cfg, err := s.Config(name, groups...)
	if err != nil {
		tb.Fatalf("issuing a certificate for %q: %v", name, err)
	}
	return dialed(tb, cfg)
}

// ConnWithToken is a connection over TLS that presents a bearer token and
// no certificate ("" for none: an anonymous connection).
func (s *Security) ConnWithToken(tb testing.TB, token string) *grpc.ClientConn {
	tb.Helper()
	return dialed(tb, client.Config{Server: s.addr, CAData: s.CA.CertPEM, Token: token})
}

// ClientConfig writes a certificate for user name in groups, its key and
// the CA into a temporary directory and returns the client config naming
// those files (for programs' --tls-* flags).
func (s *Security) ClientConfig(tb testing.TB, name string, groups ...string) client.Config {
	tb.Helper()
	certPEM, keyPEM, err := s.IssueClient(name, groups...)
	if err != nil {
		tb.Fatalf("issuing a certificate for %q: %v", name, err)
	}
	dir := tb.TempDir()
	if err := pki.WritePair(dir, "client", certPEM, keyPEM); err != nil {
		tb.Fatal(err)
	}
	if err := pki.WriteFile(filepath.Join(dir, pki.CACertFile), s.CA.CertPEM, 0o644); err != nil {
		tb.Fatal(err)
	}
	return client.Config{Server: s.addr, CAFile: filepath.Join(dir, pki.CACertFile),
		CertFile: filepath.Join(dir, "client.crt"), KeyFile: filepath.Join(dir, "client.key")}
}

// ServiceAccountToken signs a token for ServiceAccount namespace/name of
// the given uid, valid from now for ttl (negative: already expired).
func (s *Security) ServiceAccountToken(tb testing.TB, namespace, name, uid string, ttl time.Duration) string {
	tb.Helper()
	now := time.Now()
	if ttl < 0 {
		now, ttl = now.Add(2*ttl), -ttl
	}
	tok, err := authn.SignServiceAccountToken(s.saKey, s.issuer, namespace, name, uid, now, ttl)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}
