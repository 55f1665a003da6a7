package authn

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/apierrors"
	"skiff.dev/services/apiserver/authn/pki"
	"skiff.dev/services/apiserver/user"
)

// harness is a real gRPC server over real TLS (the Material's serving
// configuration) whose interceptor runs the Authenticator and records who
// each call was.
type harness struct {
	m    *Material
	addr string
	a    *Authenticator

	mu   sync.Mutex
	last *user.Info
}

func newHarness(t *testing.T, cfg func(m *Material) Config) *harness {
	t.Helper()
	o := Options{Enabled: true, PKIDir: filepath.Join(t.TempDir(), "pki")}
	m, err := o.Material("", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{m: m, a: New(cfg(m))}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = lis.Addr().String()
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(m.ServerTLS())),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			u, err := h.a.Authenticate(ctx, nil)
			if err != nil {
				return nil, apierrors.FromError(err).GRPCStatus().Err()
			}
			h.mu.Lock()
			h.last = u
			h.mu.Unlock()
			return next(ctx, req)
		}))
	healthpb.RegisterHealthServer(g, health.NewServer())
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return h
}

// call makes one call with the given client TLS certificate (nil: none)
// and token ("" : none) and returns who the server saw.
func (h *harness) call(t *testing.T, cert *tls.Certificate, token string) (*user.Info, error) {
	t.Helper()
	tc := &tls.Config{RootCAs: h.m.ClientCAs, ServerName: "localhost"}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last, nil
}

func issue(t testing.TB, ca *pki.CA, cn string, groups []string, validity time.Duration, now time.Time) *tls.Certificate {
	t.Helper()
	c, k, err := ca.Issue(pki.Request{CommonName: cn, Organizations: groups, Client: true, Validity: validity}, now)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return &pair
}

// wantRefused checks err is Unauthenticated with a message containing
// want and not containing the secret.
func wantRefused(t *testing.T, err error, want, secret string) {
	t.Helper()
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("error %v, want Unauthenticated", err)
	}
	msg := status.Convert(err).Message()
	if !strings.Contains(msg, want) {
		t.Errorf("message %q lacks %q", msg, want)
	}
	if secret != "" && strings.Contains(msg, secret) {
		t.Errorf("message %q echoes the secret", msg)
	}
}

func TestAuthenticatorOverTLS(t *testing.T) {
	sas := map[string]string{"team-a/builder": "uid-1"}
	var saMu sync.Mutex
	tokens, err := ParseTokens(strings.NewReader("# static tokens\nt0ken-alice,alice,u-1,\"dev,ops\"\nt0ken-bob,bob,u-2\n"))
	if err != nil {
		t.Fatal(err)
	}
	var clock time.Time
	now := func() time.Time {
		if clock.IsZero() {
			return time.Now()
		}
		return clock
	}
	h := newHarness(t, func(m *Material) Config {
		return Config{ClientCAs: m.ClientCAs, Tokens: tokens, ServiceAccountKey: &m.ServiceAccountKey.PublicKey, Now: now,
			ServiceAccounts: func(_ context.Context, ns, name string) (string, bool, error) {
				saMu.Lock()
				defer saMu.Unlock()
				uid, ok := sas[ns+"/"+name]
				return uid, ok, nil
			}}
	})
	start := time.Now()

	t.Run("client certificate: CN is the user, O the groups", func(t *testing.T) {
		u, err := h.call(t, issue(t, h.m.CA, "carol", []string{"dev", "system:masters"}, time.Hour, start), "")
		if err != nil {
			t.Fatal(err)
		}
		if u.Name != "carol" || !slices.Equal(u.Groups, []string{"dev", "system:masters", user.AllAuthenticated}) || u.Authenticator != "x509" {
			t.Fatalf("user %+v", u)
		}
	})
	t.Run("a certificate wins over a token", func(t *testing.T) {
		u, err := h.call(t, issue(t, h.m.CA, "carol", nil, time.Hour, start), "t0ken-alice")
		if err != nil || u.Name != "carol" {
			t.Fatalf("user %+v, %v", u, err)
		}
	})
	t.Run("certificate of another CA: refused at the handshake", func(t *testing.T) {
		other, _, err := pki.InitCA(t.TempDir(), start)
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.call(t, issue(t, other, "mallory", []string{user.Masters}, time.Hour, start), "")
		if code := status.Code(err); code != codes.Unavailable && code != codes.Unauthenticated {
			t.Fatalf("error %v, want the handshake refused", err)
		}
	})
	t.Run("static token", func(t *testing.T) {
		u, err := h.call(t, nil, "t0ken-alice")
		if err != nil {
			t.Fatal(err)
		}
		if u.Name != "alice" || u.UID != "u-1" || !slices.Equal(u.Groups, []string{"dev", "ops", user.AllAuthenticated}) {
			t.Fatalf("user %+v", u)
		}
		if u, err := h.call(t, nil, "t0ken-bob"); err != nil || !slices.Equal(u.Groups, []string{user.AllAuthenticated}) {
			t.Fatalf("bob %+v %v", u, err)
		}
	})
	t.Run("unknown token", func(t *testing.T) {
		_, err := h.call(t, nil, "n0pe-secret")
		wantRefused(t, err, "not known", "n0pe-secret")
	})
	t.Run("no credentials", func(t *testing.T) {
		_, err := h.call(t, nil, "")
		wantRefused(t, err, "no credentials", "")
	})
	t.Run("service-account token", func(t *testing.T) {
		tok, err := SignServiceAccountToken(h.m.ServiceAccountKey, "", "team-a", "builder", "uid-1", start, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second time from the cache
			u, err := h.call(t, nil, tok)
			if err != nil {
				t.Fatal(err)
			}
			if u.Name != "system:serviceaccount:team-a:builder" || u.UID != "uid-1" ||
				!slices.Equal(u.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:team-a", user.AllAuthenticated}) {
				t.Fatalf("user %+v", u)
			}
		}
		clock = start.Add(2 * time.Hour)
		_, err = h.call(t, nil, tok)
		clock = time.Time{}
		wantRefused(t, err, "expired", tok)

		saMu.Lock()
		sas["team-a/builder"] = "uid-2"
		saMu.Unlock()
		_, err = h.call(t, nil, tok)
		wantRefused(t, err, "made again", tok)
		saMu.Lock()
		delete(sas, "team-a/builder")
		saMu.Unlock()
		_, err = h.call(t, nil, tok)
		wantRefused(t, err, "no longer exists", tok)
	})
	t.Run("forged service-account token", func(t *testing.T) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := SignServiceAccountToken(key, "", "team-a", "builder", "uid-1", start, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.call(t, nil, tok)
		wantRefused(t, err, "not signed by this cluster", tok)
		// The right key id but another key's signature.
		_, rest, _ := strings.Cut(tok, ".")
		good, err := SignServiceAccountToken(h.m.ServiceAccountKey, "", "team-a", "builder", "uid-1", start, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		goodHead, _, _ := strings.Cut(good, ".")
		_, err = h.call(t, nil, goodHead+"."+rest)
		wantRefused(t, err, "not signed by this cluster", "")
		// alg none is never accepted.
		_, err = h.call(t, nil, "eyJhbGciOiJub25lIn0."+strings.Split(rest, ".")[0]+".")
		wantRefused(t, err, "", "")
	})
	t.Run("client certificate that expires while in use", func(t *testing.T) {
		cert := issue(t, h.m.CA, "dave", nil, time.Hour, start)
		clock = start.Add(2 * time.Hour)
		defer func() { clock = time.Time{} }()
		_, err := h.call(t, cert, "")
		wantRefused(t, err, `client certificate of "dave" expired`, "")
	})
	// Certificates whose dates are wrong at the handshake pass it, so that
	// the client is told why its calls are refused.
	t.Run("expired client certificate", func(t *testing.T) {
		cert := issue(t, h.m.CA, "dave", nil, time.Hour, start.Add(-2*time.Hour))
		_, err := h.call(t, cert, "t0ken-alice")
		wantRefused(t, err, `client certificate of "dave" expired at `+cert.Leaf.NotAfter.UTC().Format(time.RFC3339), "")
	})
	t.Run("client certificate not valid yet", func(t *testing.T) {
		cert := issue(t, h.m.CA, "dave", nil, time.Hour, start.Add(time.Hour))
		_, err := h.call(t, cert, "")
		wantRefused(t, err, `client certificate of "dave" is not valid before `+cert.Leaf.NotBefore.UTC().Format(time.RFC3339), "")
	})
	t.Run("expired certificate of another CA: refused at the handshake", func(t *testing.T) {
		other, _, err := pki.InitCA(t.TempDir(), start)
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.call(t, issue(t, other, "mallory", []string{user.Masters}, time.Hour, start.Add(-2*time.Hour)), "")
		if code := status.Code(err); code != codes.Unavailable {
			t.Fatalf("error %v, want the handshake refused (Unavailable)", err)
		}
	})
}

// TestVerifyClientChain: the handshake's check of client certificates
// lets through wrong dates of the leaf only.
func TestVerifyClientChain(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	ca, _, err := pki.InitCA(filepath.Join(dir, "ca"), now)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := pki.InitCA(filepath.Join(dir, "other"), now)
	if err != nil {
		t.Fatal(err)
	}
	// A CA that expired an hour ago, and its certificate issued while it
	// was valid.
	oldCA, _, err := pki.InitCA(filepath.Join(dir, "old"), now.Add(-pki.CAValidity-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(ca *pki.CA, r pki.Request, issued time.Time) []*x509.Certificate {
		c, k, err := ca.Issue(r, issued)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return []*x509.Certificate{pair.Leaf}
	}
	client := pki.Request{CommonName: "erin", Client: true, Validity: time.Hour}
	for _, tc := range []struct {
		name    string
		roots   *x509.CertPool
		certs   []*x509.Certificate
		wantErr string
	}{
		{"no certificate", ca.Pool(), nil, ""},
		{"valid", ca.Pool(), leaf(ca, client, now), ""},
		{"expired", ca.Pool(), leaf(ca, client, now.Add(-2*time.Hour)), ""},
		{"not valid yet", ca.Pool(), leaf(ca, client, now.Add(time.Hour)), ""},
		{"another CA", ca.Pool(), leaf(other, client, now), "unknown authority"},
		{"another CA, expired", ca.Pool(), leaf(other, client, now.Add(-2*time.Hour)), "unknown authority"},
		{"server usage only", ca.Pool(), leaf(ca, pki.Request{CommonName: "erin", Server: true}, now), "usage"},
		{"the CA expired", oldCA.Pool(), leaf(oldCA, client, now.Add(-pki.CAValidity-time.Hour)), "issuing CA is not valid"},
		{"no client CA", nil, leaf(ca, client, now), "no client CA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := verifyClientChain(tc.roots, tc.certs, now)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

func TestAnonymous(t *testing.T) {
	h := newHarness(t, func(*Material) Config { return Config{Anonymous: true} })
	u, err := h.call(t, nil, "")
	if err != nil || u != AnonymousUser || !u.InGroup(user.AllUnauthenticated) || u.InGroup(user.AllAuthenticated) {
		t.Fatalf("anonymous: %+v %v", u, err)
	}
	// A bad token is refused, never taken for anonymous.
	_, err = h.call(t, nil, "whatever")
	wantRefused(t, err, "not known", "whatever")
}

func TestParseTokens(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"too few fields", "tok,user\n", "line 1: want token,user,uid"},
		{"empty token", ",user,uid\n", "line 1: empty token"},
		{"empty user", "tok,,uid\n", "line 1: empty user name"},
		{"duplicate", "tok,a,1\ntok,b,2\n", `line 2: the token of user "b" is already the token of user "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTokens(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "tok,") {
				t.Errorf("error %v echoes a token", err)
			}
		})
	}
}

// TestMaterialKeptAcrossRestarts: a second start finds the same CA, serving
// certificate and key; a new SAN issues the serving certificate again under
// the same CA; keys are 0600.
func TestMaterialKeptAcrossRestarts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	load := func(sans ...string) *Material {
		o := Options{Enabled: true, PKIDir: dir, TLSSANs: sans}
		m, err := o.Material("", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m1 := load()
	m2 := load()
	if !m1.CA.Cert.Equal(m2.CA.Cert) || !slices.Equal(m1.Serving.Certificate[0], m2.Serving.Certificate[0]) || !m1.ServiceAccountKey.Equal(m2.ServiceAccountKey) {
		t.Fatal("a restart changed the PKI")
	}
	m3 := load("apiserver", "10.0.0.7")
	if slices.Equal(m1.Serving.Certificate[0], m3.Serving.Certificate[0]) || !m1.CA.Cert.Equal(m3.CA.Cert) {
		t.Fatal("a new --tls-san did not reissue the serving certificate under the same CA")
	}
	if err := m3.Serving.Leaf.VerifyHostname("apiserver"); err != nil {
		t.Fatal(err)
	}
	if err := m3.Serving.Leaf.VerifyHostname("10.0.0.7"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{pki.CAKeyFile, ServingName + ".key", NodeAgentClientName + ".key", ServiceAccountKey} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", f, st.Mode().Perm())
		}
	}
	if m3.NodeAgentClient == nil || m3.NodeAgentClient.Leaf.Subject.CommonName != user.APIServer {
		t.Fatalf("node agent client certificate %+v", m3.NodeAgentClient)
	}
}

// TestClientCertificateExpirationMetric: every request with a client
// certificate of the cluster CA observes the certificate's remaining
// lifetime in apiserver_client_certificate_expiration_seconds (Kubernetes'
// histogram and buckets); an expired one lands in the le="0" bucket; a
// request with a token only observes nothing.
func TestClientCertificateExpirationMetric(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	reg := prometheus.NewRegistry()
	h := newHarness(t, func(m *Material) Config {
		return Config{ClientCAs: m.ClientCAs, Tokens: StaticTokens{"t0ken": {Name: "alice"}}, Registerer: reg, Now: func() time.Time { return now }}
	})
	threeDays := issue(t, h.m.CA, "carol", nil, 72*time.Hour, now)
	expired := issue(t, h.m.CA, "dave", nil, time.Hour, now.Add(-2*time.Hour))
	if _, err := h.call(t, threeDays, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := h.call(t, threeDays, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := h.call(t, expired, ""); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("expired certificate: %v, want Unauthenticated", err)
	}
	if _, err := h.call(t, nil, "t0ken"); err != nil {
		t.Fatal(err)
	}

	hist := gatherHistogram(t, reg, "apiserver_client_certificate_expiration_seconds")
	if hist == nil {
		t.Fatal("apiserver_client_certificate_expiration_seconds is not registered")
	}
	if got := hist.GetSampleCount(); got != 3 {
		t.Errorf("observations = %d, want 3 (two calls with carol's certificate, one with dave's)", got)
	}
	want := 2*(72*3600) - 3600.0 // seconds left: carol's twice, dave's (expired an hour ago)
	if got := hist.GetSampleSum(); got != want {
		t.Errorf("sum = %v, want %v", got, want)
	}
	wantBuckets := map[float64]uint64{0: 1, 172800: 1, 345600: 3, 31104000: 3}
	var bounds []float64
	for _, b := range hist.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
		if w, ok := wantBuckets[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
	kubernetes := []float64{0, 1800, 3600, 7200, 21600, 43200, 86400, 172800, 345600, 604800, 2592000, 7776000, 15552000, 31104000}
	if !slices.Equal(bounds, kubernetes) {
		t.Errorf("buckets %v, want Kubernetes' %v", bounds, kubernetes)
	}
}

// gatherHistogram returns the (unlabelled) histogram name of reg, or nil.
func gatherHistogram(t *testing.T, reg prometheus.Gatherer, name string) *dto.Histogram {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetHistogram()
		}
	}
	return nil
}

// TestRenewWhileServing: the certificates the apiserver issued itself are
// issued again once within 30 days of their expiry, and the next
// handshakes show them: the serving certificate (still followed by the
// CA), the loopback's pin, the node agents' client certificate; before
// that, Renew changes nothing.
func TestRenewWhileServing(t *testing.T) {
	o := Options{Enabled: true, PKIDir: filepath.Join(t.TempDir(), "pki")}
	now := time.Now()
	m, err := o.Material("", now)
	if err != nil {
		t.Fatal(err)
	}
	first := m.Serving.Leaf
	if renewed, err := m.Renew(now.Add(24 * time.Hour)); err != nil || len(renewed) != 0 {
		t.Fatalf("a day later: renewed %v, %v; want nothing", renewed, err)
	}
	later := first.NotAfter.Add(-10 * 24 * time.Hour)
	renewed, err := m.Renew(later)
	if err != nil || !slices.Equal(renewed, []string{ServingName, NodeAgentClientName}) {
		t.Fatalf("10 days before expiry: renewed %v, %v", renewed, err)
	}
	cur, err := m.ServerTLS().GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Leaf.Equal(first) || !cur.Leaf.NotAfter.After(first.NotAfter) || len(cur.Certificate) != 2 || !bytes.Equal(cur.Certificate[1], m.CA.Cert.Raw) {
		t.Errorf("served after renewal: until %s, %d certificates", cur.Leaf.NotAfter, len(cur.Certificate))
	}
	pin := m.LoopbackTLS().VerifyPeerCertificate
	if err := pin([][]byte{cur.Certificate[0]}, nil); err != nil {
		t.Errorf("the loopback refuses the renewed certificate: %v", err)
	}
	// A loopback handshake under way while the certificate is renewed:
	// the server showed the one it replaced, which the pin still takes
	// (it failed the apiserver's start when a renewal came then).
	if err := pin([][]byte{first.Raw}, nil); err != nil {
		t.Errorf("the loopback refuses the certificate the renewal just replaced: %v", err)
	}
	// Renewed once more, the first is no longer the apiserver's.
	if renewed, err := m.Renew(cur.Leaf.NotAfter.Add(-10 * 24 * time.Hour)); err != nil || !slices.Contains(renewed, ServingName) {
		t.Fatalf("renewing again: %v, %v", renewed, err)
	}
	if err := pin([][]byte{first.Raw}, nil); err == nil {
		t.Error("the loopback still trusts a certificate replaced two renewals ago")
	}
	if err := pin([][]byte{cur.Certificate[0]}, nil); err != nil {
		t.Errorf("the loopback refuses the certificate the second renewal just replaced: %v", err)
	}
	client, err := m.NodeAgentTLS().GetClientCertificate(nil)
	if err != nil || client.Leaf == nil || client.Leaf.Equal(m.NodeAgentClient.Leaf) {
		t.Errorf("node agents are shown the old client certificate: %v", err)
	}
}
