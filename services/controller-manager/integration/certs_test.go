package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"skiff.dev/internal/bootstraptoken"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/await"
	"skiff.dev/internal/certs"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authn/pki"
	"skiff.dev/services/controller-manager/certificates"
	"skiff.dev/services/controller-manager/manager"
)

// cluster is a secure apiserver with the controller-manager's real CSR
// approver and signer.
type cluster struct {
	*apiservertest.Server
	caFile string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	s := apiservertest.Start(t, apiservertest.Secure())
	ctx, cancel := context.WithCancel(context.Background())
	factory := informer.NewFactory(informer.FactoryOptions{})
	mc := &manager.Context{Conn: s.Conn, Informers: factory}
	review, err := certificates.NewHTTPReviewer(s.ClientConfig(t, "csr-reviewer", "system:masters"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.DataDir, "pki")
	ca, err := certificates.LoadCA(filepath.Join(dir, pki.CACertFile), filepath.Join(dir, pki.CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	approver, signer := certificates.NewApprover(mc, review), certificates.NewSigner(mc, ca, 365*24*time.Hour)
	done := make(chan struct{}, 2)
	for _, c := range []interface{ Run(context.Context) error }{approver, signer} {
		go func() { defer func() { done <- struct{}{} }(); _ = c.Run(ctx) }()
	}
	factory.Start(ctx)
	t.Cleanup(func() { cancel(); <-done; <-done; factory.Wait() })
	return &cluster{Server: s, caFile: filepath.Join(dir, pki.CACertFile)}
}

// token makes a bootstrap token for joining nodes.
func (c *cluster) token(t *testing.T, ttl time.Duration) string {
	t.Helper()
	tok := bootstraptoken.New()
	sec, err := bootstraptoken.Secret(tok, bootstraptoken.Options{TTL: ttl, ExtraGroups: []string{bootstraptoken.DefaultNodeGroup}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Secrets(c.Conn).Create(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
	return tok
}

func (c *cluster) pin(t *testing.T) string { return client.CACertHash(c.CA.Cert) }

// TestJoinWithBootstrapToken: a node with only a bootstrap token and the
// CA's hash fetches the CA, gets a client certificate for
// system:node:<node> (approved and signed by the controller-manager),
// registers its Node with it, then gets a serving certificate naming the
// Node's addresses; a restart loads both from the files; a revoked token
// joins no node.
func TestJoinWithBootstrapToken(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	m := certs.New(certs.NodeClient(dir, "n1"))
	if m.Current() != nil {
		t.Fatal("a certificate before the join")
	}
	tok := c.token(t, time.Hour)
	if _, err := certs.Bootstrap(ctx, m, c.Addr(), tok, c.pin(t), caFile); err != nil {
		t.Fatalf("join: %v", err)
	}
	leaf := m.Current().Leaf
	if leaf.Subject.CommonName != "system:node:n1" || !slices.Equal(leaf.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("client certificate for %v", leaf.Subject)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: c.CA.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if b, err := os.ReadFile(caFile); err != nil || string(b) != string(c.CA.CertPEM) {
		t.Errorf("ca.crt written: %v", err)
	}

	conn := c.dialAs(t, m)
	node := &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n1"}, Status: &corev1.NodeStatus{Addresses: []*corev1.NodeAddress{{Type: "InternalIP", Address: "10.1.2.3"}, {Type: "Hostname", Address: "n1"}}}}
	created, err := client.Nodes(conn).Create(ctx, node)
	if err != nil {
		t.Fatalf("registering the Node with the joined certificate: %v", err)
	}
	created.Status = node.Status
	if _, err := client.Nodes(conn).UpdateStatus(ctx, created); err != nil {
		t.Fatal(err)
	}
	sm := certs.New(certs.NodeServing(dir, "n1", func() []string { return []string{"n1", "10.1.2.3"} }))
	if err := sm.Request(ctx, conn); err != nil {
		t.Fatalf("serving certificate: %v", err)
	}
	if err := sm.Current().Leaf.VerifyHostname("10.1.2.3"); err != nil {
		t.Errorf("serving certificate: %v", err)
	}
	if _, err := sm.Current().Leaf.Verify(x509.VerifyOptions{Roots: c.CA.Pool(), DNSName: "n1"}); err != nil {
		t.Errorf("serving certificate: %v", err)
	}
	// Restarted: both from the files, nothing asked.
	if again := certs.New(certs.NodeClient(dir, "n1")); again.Current() == nil || !again.Current().Leaf.Equal(leaf) {
		t.Error("the client certificate is not loaded from its files")
	}

	// A revoked token: the join is refused as unauthenticated.
	revoked := c.token(t, time.Hour)
	if _, err := client.Secrets(c.Conn).Delete(ctx, &metav1.DeleteRequest{Namespace: "kube-system", Name: "bootstrap-token-" + revoked[:6]}); err != nil {
		t.Fatal(err)
	}
	other := certs.New(certs.NodeClient(t.TempDir(), "n2"))
	if _, err := certs.Bootstrap(ctx, other, c.Addr(), revoked, c.pin(t), filepath.Join(t.TempDir(), "ca.crt")); status.Code(err) != codes.Unauthenticated {
		t.Errorf("join with a revoked token: %v, want Unauthenticated", err)
	}
	// Another CA's hash: refused before the token is sent.
	if _, err := certs.Bootstrap(ctx, other, c.Addr(), tok, "sha256:"+fmt.Sprintf("%064x", 7), filepath.Join(t.TempDir(), "ca.crt")); err == nil {
		t.Error("join pinning another CA succeeded")
	}
}

// dialAs connects with m's current certificate, renewed or not.
func (c *cluster) dialAs(t *testing.T, m *certs.Manager) *grpc.ClientConn {
	t.Helper()
	conn, err := client.Dial(client.Config{Server: c.Addr(), CAData: c.CA.CertPEM, GetClientCertificate: m.GetClientCertificate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// renewAtDeadline runs m with a connection that shows m's certificate,
// steps clk past its rotation deadline and waits until m holds another
// certificate.
func (c *cluster) renewAtDeadline(ctx context.Context, t *testing.T, m *certs.Manager, clk *workqueue.FakeClock) {
	t.Helper()
	first := m.Current().Leaf
	conn := c.dialAs(t, m)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); m.Run(runCtx, conn) }()
	t.Cleanup(func() { stop(); <-done })
	clk.SetTime(m.RotationDeadline().Add(time.Second))
	var sig await.Signal
	sig.Until(t, 30*time.Second, "the certificate renewed", ctx.Done(), func() (bool, string) {
		cur := m.Current().Leaf
		return !cur.Equal(first), "serial " + cur.SerialNumber.String()
	})
}

// TestRotation: the client certificate is renewed at its rotation
// deadline (a fake clock stepped there), with the current certificate as
// credentials (the request's user is the node, not a bootstrap token), to
// new files; connections made after show the new one.
func TestRotation(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	clk := workqueue.NewFakeClock(time.Now())
	cfg := certs.NodeClient(dir, "n1")
	cfg.Clock, cfg.Jitter = clk, func() float64 { return 0.5 }
	m := certs.New(cfg)
	if _, err := certs.Bootstrap(ctx, m, c.Addr(), c.token(t, time.Hour), c.pin(t), filepath.Join(dir, "ca.crt")); err != nil {
		t.Fatal(err)
	}
	first := m.Current().Leaf
	life := first.NotAfter.Sub(first.NotBefore)
	if want := first.NotBefore.Add(life * 8 / 10); m.RotationDeadline().Sub(want).Abs() > time.Millisecond {
		t.Errorf("rotation deadline %s, want 80%% of the lifetime: %s", m.RotationDeadline(), want)
	}
	c.renewAtDeadline(ctx, t, m, clk)
	pair, err := tls.LoadX509KeyPair(m.Files())
	if err != nil || !pair.Leaf.Equal(m.Current().Leaf) {
		t.Errorf("the renewed certificate is not in the files: %v", err)
	}
	list, err := client.CertificateSigningRequests(c.Conn).List(ctx, &metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, r := range list.GetItems() {
		users = append(users, r.GetSpec().GetUsername())
	}
	if !slices.Contains(users, "system:node:n1") {
		t.Errorf("requesters %v: the renewal was not asked as the node", users)
	}
	// A new connection authenticates with the renewed certificate.
	fresh := c.dialAs(t, m)
	if _, err := client.Nodes(fresh).Get(ctx, "", "n1"); err != nil && status.Code(err) != codes.NotFound {
		t.Errorf("with the renewed certificate: %v", err)
	}
}

// TestComponentRotation: the scheduler's client certificate (issued by
// hand, "skiff-apiserver certs issue") is renewed at its rotation deadline
// by a request for its own subject that the controller-manager approves
// as a self client renewal (Skiff's selfclient) and signs.
func TestComponentRotation(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	certPEM, keyPEM, err := c.CA.Issue(pki.Request{CommonName: "system:kube-scheduler", Client: true, Validity: 24 * time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WritePair(dir, "scheduler", certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	cfg, err := certs.ClientRenewal(filepath.Join(dir, "scheduler.crt"), filepath.Join(dir, "scheduler.key"))
	if err != nil {
		t.Fatal(err)
	}
	clk := workqueue.NewFakeClock(time.Now())
	cfg.Clock, cfg.Jitter = clk, func() float64 { return 0 }
	m := certs.New(cfg)
	c.renewAtDeadline(ctx, t, m, clk)
	if got := m.Current().Leaf.Subject.CommonName; got != "system:kube-scheduler" {
		t.Errorf("renewed for %q", got)
	}
	list, err := client.CertificateSigningRequests(c.Conn).List(ctx, &metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.GetItems() {
		if r.GetSpec().GetUsername() != "system:kube-scheduler" {
			continue
		}
		conds := r.GetStatus().GetConditions()
		if len(conds) == 0 || conds[0].GetReason() != "AutoApproved" || conds[0].GetMessage() != "Auto approving self client certificate after SubjectAccessReview." {
			t.Errorf("the scheduler's renewal: conditions %v", conds)
		}
	}
}
