package certificates_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	"skiff.dev/internal/csr"
	"skiff.dev/internal/informer"
	certificatesv1 "skiff.dev/proto/certificates/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authn/pki"
	"skiff.dev/services/apiserver/authz"
	"skiff.dev/services/apiserver/user"
	"skiff.dev/services/controller-manager/certificates"
	"skiff.dev/services/controller-manager/manager/managertest"
)

const patience = 20 * time.Second

// cluster is an apiserver with authentication on (a token file user in
// group system:bootstrappers stands in for a bootstrap token) and the
// real approver and signer, running as system:kube-controller-manager
// under the bootstrap RBAC policy.
type cluster struct {
	env      *managertest.Env
	s        *apiservertest.Server
	approver *certificates.Approver
	csrs     *informer.Informer[*certificatesv1.CertificateSigningRequest]
	// caDir holds the signer's ca.crt and ca.key.
	caDir string
}

const bootstrapUser = "system:bootstrap:abcdef"

func startCluster(t *testing.T) *cluster {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("abcdef.0123456789abcdef,"+bootstrapUser+",u-boot,\"system:bootstrappers\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Authn.TokenAuthFile = tokens
		c.Authz = authz.Options{Modes: authz.DefaultModes}
	}))
	cmConn := s.ConnAs(t, user.ControllerManager)
	log := zap.NewNop()
	if testing.Verbose() {
		log = zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))
	}
	env := managertest.NewEnv(t, s, cmConn, log)
	// The signer reads the cluster CA as --cluster-signing-* give it.
	dir := t.TempDir()
	keyPEM, err := pki.EncodeKey(s.CA.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), s.CA.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.key"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	ca, err := certificates.LoadCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	review, err := certificates.NewHTTPReviewer(s.ClientConfig(t, user.ControllerManager))
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{env: env, s: s, approver: certificates.NewApprover(env.Manager, review),
		csrs: informer.For(env.Manager.Informers, client.CertificateSigningRequests(cmConn)), caDir: dir}
	signer := certificates.NewSigner(env.Manager, ca, 0)
	managertest.Watch(env, c.csrs)
	env.StartInformers()
	env.GoErr(c.approver.Run)
	env.GoErr(signer.Run)
	return c
}

// request is a PEM certificate request of a new key.
type request struct {
	cn    string
	orgs  []string
	dns   []string
	ips   []net.IP
	key   *ecdsa.PrivateKey
	bytes []byte
}

func newRequest(t *testing.T, cn string, orgs []string, dns []string, ips ...net.IP) *request {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: cn, Organization: orgs}, DNSNames: dns, IPAddresses: ips}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &request{cn: cn, orgs: orgs, dns: dns, ips: ips, key: key, bytes: csr.EncodeRequest(der)}
}

func (r *request) object(name, signer string, usages ...string) *certificatesv1.CertificateSigningRequest {
	hour := int32(3600)
	return &certificatesv1.CertificateSigningRequest{
		Metadata: &metav1.ObjectMeta{Name: name},
		Spec: &certificatesv1.CertificateSigningRequestSpec{Request: r.bytes, SignerName: signer, Usages: usages, ExpirationSeconds: &hour,
			// A forged requester: the apiserver records the real one.
			Username: "system:admin", Groups: []string{user.Masters}},
	}
}

func (c *cluster) create(t *testing.T, conn grpc.ClientConnInterface, obj *certificatesv1.CertificateSigningRequest) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	got, err := client.CertificateSigningRequests(conn).Create(c.env.Ctx, obj)
	if err != nil {
		t.Fatalf("creating csr %s: %v", obj.GetMetadata().GetName(), err)
	}
	return got
}

// issued waits for the CSR's certificate and returns it, parsed.
func (c *cluster) issued(t *testing.T, name string) (*x509.Certificate, []byte) {
	t.Helper()
	var certPEM []byte
	c.env.Await(patience, "certificate of "+name, func() (bool, string) {
		o, ok := c.csrs.Store().GetByName("", name)
		certPEM = o.GetStatus().GetCertificate()
		return ok && len(certPEM) > 0, managertest.Explain("csr %s: %v", name, o.GetStatus())
	})
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("csr %s: certificate %q is no PEM CERTIFICATE", name, certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert, certPEM
}

// autoApproved checks the CSR's Approved condition: the approver's, with
// message.
func (c *cluster) autoApproved(t *testing.T, name, message string) {
	t.Helper()
	o, _ := c.csrs.Store().GetByName("", name)
	approved := csr.Condition(o, csr.Approved)
	if approved.GetReason() != "AutoApproved" || approved.GetMessage() != message || approved.GetLastUpdateTime() == nil || approved.GetLastTransitionTime() == nil {
		t.Errorf("csr %s: Approved condition %v, want reason AutoApproved, message %q and times", name, approved, message)
	}
}

// stillPending runs the approver on the CSR once more, synchronously,
// then reads it: no approval, no certificate.
func (c *cluster) stillPending(t *testing.T, name string) {
	t.Helper()
	c.env.Await(patience, "csr "+name+" in the approver's cache", func() (bool, string) {
		_, ok := c.csrs.Store().GetByName("", name)
		return ok, "not yet"
	})
	if _, err := c.approver.Reconcile(c.env.Ctx, name); err != nil {
		t.Fatalf("approver on %s: %v", name, err)
	}
	o, err := client.CertificateSigningRequests(c.s.Conn).Get(c.env.Ctx, "", name)
	if err != nil {
		t.Fatal(err)
	}
	if !csr.Pending(o) || len(o.GetStatus().GetCertificate()) > 0 {
		t.Errorf("csr %s: %v, want it pending", name, o.GetStatus())
	}
}

// verify checks cert against the cluster CA for usage, with r's subject
// and SANs and a validity of the requested hour plus the backdate.
func (c *cluster) verify(t *testing.T, cert *x509.Certificate, r *request, usage x509.ExtKeyUsage) {
	t.Helper()
	if _, err := cert.Verify(x509.VerifyOptions{Roots: c.s.CA.Pool(), KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		t.Errorf("certificate does not verify against the CA: %v", err)
	}
	if cert.Subject.CommonName != r.cn || !slices.Equal(cert.Subject.Organization, r.orgs) {
		t.Errorf("subject %v, want CN %s O %v", cert.Subject, r.cn, r.orgs)
	}
	if !slices.Equal(cert.DNSNames, r.dns) || len(cert.IPAddresses) != len(r.ips) {
		t.Errorf("SANs %v %v, want %v %v", cert.DNSNames, cert.IPAddresses, r.dns, r.ips)
	}
	if d := cert.NotAfter.Sub(cert.NotBefore); d != time.Hour+5*time.Minute {
		t.Errorf("validity %v (%v to %v), want the hour asked plus 5m backdated", d, cert.NotBefore, cert.NotAfter)
	}
	if cert.KeyUsage != x509.KeyUsageDigitalSignature || !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{usage}) || cert.IsCA {
		t.Errorf("usages %v %v (CA %v), want digital signature and %v", cert.KeyUsage, cert.ExtKeyUsage, cert.IsCA, usage)
	}
	if !cert.PublicKey.(*ecdsa.PublicKey).Equal(&r.key.PublicKey) {
		t.Error("certificate is not of the requested key")
	}
}

// connWith dials the apiserver with a certificate and its request's key.
func (c *cluster) connWith(t *testing.T, certPEM []byte, r *request) *grpc.ClientConn {
	t.Helper()
	keyPEM, err := pki.EncodeKey(r.key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	conn, err := client.Dial(client.Config{Server: c.s.Addr(), CAData: c.s.CA.CertPEM, CertData: certPEM, KeyData: keyPEM})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

var clientUsages = []string{csr.UsageDigitalSignature, csr.UsageClientAuth}

// TestNodeClientCertificates: a bootstrap token's user gets a client
// certificate for system:node:n1, approved and signed by the real
// controllers, with which the node then talks to the apiserver and renews
// it; what is not a node client request of a permitted requester stays
// pending.
func TestNodeClientCertificates(t *testing.T) {
	c := startCluster(t)
	boot := c.s.ConnWithToken(t, "abcdef.0123456789abcdef")
	nodes := []string{csr.NodesGroup}

	n1 := newRequest(t, "system:node:n1", nodes, nil)
	created := c.create(t, boot, n1.object("boot-n1", csr.KubeAPIServerClientKubelet, clientUsages...))
	if s := created.GetSpec(); s.GetUsername() != bootstrapUser || s.GetUid() != "u-boot" || !slices.Contains(s.GetGroups(), "system:bootstrappers") || slices.Contains(s.GetGroups(), user.Masters) {
		t.Errorf("requester recorded as %q %q %v, want the bootstrap token's user, not the forged one", s.GetUsername(), s.GetUid(), s.GetGroups())
	}
	cert, certPEM := c.issued(t, "boot-n1")
	c.verify(t, cert, n1, x509.ExtKeyUsageClientAuth)
	c.autoApproved(t, "boot-n1", "Auto approving kubelet client certificate after SubjectAccessReview.")

	t.Run("the certificate authenticates node n1", func(t *testing.T) {
		n1Conn := c.connWith(t, certPEM, n1)
		if _, err := client.Nodes(n1Conn).Create(c.env.Ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n1"}}); err != nil {
			t.Fatalf("node n1 registering itself with its new certificate: %v", err)
		}
		if _, err := client.Nodes(n1Conn).Create(c.env.Ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n2"}}); !apierrors.IsForbidden(err) {
			t.Fatalf("node n1 registering n2: %v, want forbidden (the node authorizer knows it as n1)", err)
		}
	})

	t.Run("renewal by the node itself", func(t *testing.T) {
		n1Conn := c.connWith(t, certPEM, n1)
		again := newRequest(t, "system:node:n1", nodes, nil)
		c.create(t, n1Conn, again.object("renew-n1", csr.KubeAPIServerClientKubelet, clientUsages...))
		cert, _ := c.issued(t, "renew-n1")
		c.verify(t, cert, again, x509.ExtKeyUsageClientAuth)
		c.autoApproved(t, "renew-n1", "Auto approving self kubelet client certificate after SubjectAccessReview.")
		// n1 asking for n2's certificate: neither self nor bootstrap.
		c.create(t, n1Conn, newRequest(t, "system:node:n2", nodes, nil).object("n1-asks-n2", csr.KubeAPIServerClientKubelet, clientUsages...))
		c.stillPending(t, "n1-asks-n2")
	})

	t.Run("what is not a node client request stays pending", func(t *testing.T) {
		c.create(t, boot, newRequest(t, "system:admin", []string{user.Masters}, nil).object("boot-admin", csr.KubeAPIServerClientKubelet, clientUsages...))
		c.stillPending(t, "boot-admin")
		c.create(t, boot, newRequest(t, "system:node:n3", nodes, nil).object("boot-server-usage", csr.KubeAPIServerClientKubelet, append(clientUsages, csr.UsageServerAuth)...))
		c.stillPending(t, "boot-server-usage")
		c.create(t, boot, newRequest(t, "system:node:n3", nodes, []string{"n3"}).object("boot-san", csr.KubeAPIServerClientKubelet, clientUsages...))
		c.stillPending(t, "boot-san")
	})

	t.Run("a requester without nodeclient stays pending", func(t *testing.T) {
		// mallory may create CSRs (the node-bootstrapper role), not have
		// node client certificates approved.
		bind(t, c, "mallory-creates-csrs", "system:node-bootstrapper", "mallory")
		mallory := c.s.ConnAs(t, "mallory")
		c.create(t, mallory, newRequest(t, "system:node:n4", nodes, nil).object("mallory-n4", csr.KubeAPIServerClientKubelet, clientUsages...))
		c.stillPending(t, "mallory-n4")
	})
}

// bind grants user a ClusterRole.
func bind(t *testing.T, c *cluster, name, role, userName string) {
	t.Helper()
	_, err := client.ClusterRoleBindings(c.s.Conn).Create(c.env.Ctx, &rbacv1.ClusterRoleBinding{
		Metadata: &metav1.ObjectMeta{Name: name},
		RoleRef:  &rbacv1.RoleRef{ApiGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects: []*rbacv1.Subject{{Kind: "User", ApiGroup: "rbac.authorization.k8s.io", Name: userName}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func role(t *testing.T, c *cluster, name string, rules ...*rbacv1.PolicyRule) {
	t.Helper()
	if _, err := client.ClusterRoles(c.s.Conn).Create(c.env.Ctx, &rbacv1.ClusterRole{Metadata: &metav1.ObjectMeta{Name: name}, Rules: rules}); err != nil {
		t.Fatal(err)
	}
}

// TestNodeServingCertificates: a node's own serving certificate request
// is approved when every SAN is an address of its Node, and signed for
// server auth; one naming another address stays pending.
func TestNodeServingCertificates(t *testing.T) {
	c := startCluster(t)
	_, err := client.Nodes(c.s.Conn).Create(c.env.Ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n1"},
		Status: &corev1.NodeStatus{Addresses: []*corev1.NodeAddress{{Type: "InternalIP", Address: "10.0.0.1"}, {Type: "Hostname", Address: "n1.example"}}}})
	if err != nil {
		t.Fatal(err)
	}
	n1 := c.s.ConnAs(t, "system:node:n1", csr.NodesGroup)
	servingUsages := []string{csr.UsageDigitalSignature, csr.UsageKeyEncipherment, csr.UsageServerAuth}
	good := newRequest(t, "system:node:n1", []string{csr.NodesGroup}, []string{"n1", "n1.example"}, net.ParseIP("10.0.0.1"))
	c.create(t, n1, good.object("serving-n1", csr.KubeletServing, servingUsages...))
	cert, _ := c.issued(t, "serving-n1")
	c.autoApproved(t, "serving-n1", "Auto approving kubelet serving certificate: its subject alternative names are addresses of the requesting node.")
	if _, err := cert.Verify(x509.VerifyOptions{Roots: c.s.CA.Pool(), DNSName: "n1.example", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving certificate for n1.example: %v", err)
	}
	if cert.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment || !cert.IPAddresses[0].Equal(net.ParseIP("10.0.0.1")) {
		t.Errorf("key usage %v, IPs %v", cert.KeyUsage, cert.IPAddresses)
	}

	c.create(t, n1, newRequest(t, "system:node:n1", []string{csr.NodesGroup}, []string{"n1"}, net.ParseIP("10.9.9.9")).object("serving-n1-other-ip", csr.KubeletServing, servingUsages...))
	c.stillPending(t, "serving-n1-other-ip")
	c.create(t, n1, newRequest(t, "system:node:n1", []string{csr.NodesGroup}, []string{"evil.example"}).object("serving-n1-other-name", csr.KubeletServing, servingUsages...))
	c.stillPending(t, "serving-n1-other-name")
	// Another node's name: the requester is n1.
	c.create(t, n1, newRequest(t, "system:node:n2", []string{csr.NodesGroup}, []string{"n1"}).object("serving-n2-by-n1", csr.KubeletServing, servingUsages...))
	c.stillPending(t, "serving-n2-by-n1")
}

// TestApprovalAndSigningAuthorization: approving needs the approve verb on
// the signer besides update of certificatesigningrequests/approval; the
// status subresource cannot set a certificate on a request that is not
// Approved, nor approve it.
func TestApprovalAndSigningAuthorization(t *testing.T) {
	c := startCluster(t)
	role(t, c, "csr-approval-only", &rbacv1.PolicyRule{Verbs: []string{"get", "update"}, ApiGroups: []string{"certificates.k8s.io"},
		Resources: []string{"certificatesigningrequests", "certificatesigningrequests/approval"}})
	bind(t, c, "bob-approval", "csr-approval-only", "bob")
	bob := c.s.ConnAs(t, "bob")
	r := newRequest(t, "jane", []string{"developers"}, nil)
	c.create(t, c.s.Conn, r.object("jane", csr.KubeAPIServerClient, clientUsages...))
	c.stillPending(t, "jane") // no automatic approval of kube-apiserver-client

	approve := func(conn grpc.ClientConnInterface) error {
		cur, err := client.CertificateSigningRequests(conn).Get(c.env.Ctx, "", "jane")
		if err != nil {
			return err
		}
		next := proto.Clone(cur).(*certificatesv1.CertificateSigningRequest)
		next.Status = &certificatesv1.CertificateSigningRequestStatus{Conditions: []*certificatesv1.CertificateSigningRequestCondition{
			{Type: csr.Approved, Status: csr.True, Reason: "KubectlApprove", Message: "This CSR was approved by a test."}}}
		_, err = certificatesv1.NewCertificateSigningRequestsClient(conn).UpdateApproval(c.env.Ctx, next)
		return err
	}
	err := approve(bob)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"`) {
		t.Fatalf("approval without the approve verb: %v, want forbidden naming the signer", err)
	}

	t.Run("status cannot set a certificate or approve", func(t *testing.T) {
		cur, err := client.CertificateSigningRequests(c.s.Conn).Get(c.env.Ctx, "", "jane")
		if err != nil {
			t.Fatal(err)
		}
		next := proto.Clone(cur).(*certificatesv1.CertificateSigningRequest)
		next.Status = &certificatesv1.CertificateSigningRequestStatus{Certificate: c.s.CA.CertPEM}
		_, err = client.CertificateSigningRequests(c.s.Conn).UpdateStatus(c.env.Ctx, next)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.certificate") {
			t.Errorf("a certificate on a pending request: %v, want invalid at status.certificate", err)
		}
		next.Status = &certificatesv1.CertificateSigningRequestStatus{Conditions: []*certificatesv1.CertificateSigningRequestCondition{{Type: csr.Approved, Status: csr.True}}}
		_, err = client.CertificateSigningRequests(c.s.Conn).UpdateStatus(c.env.Ctx, next)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `updates may not add a condition of type "Approved"`) {
			t.Errorf("approving through status: %v, want invalid", err)
		}
	})

	// approve on the signers of the domain: bob approves, the signer signs.
	role(t, c, "approve-kubernetes-io", &rbacv1.PolicyRule{Verbs: []string{"approve"}, ApiGroups: []string{"certificates.k8s.io"},
		Resources: []string{"signers"}, ResourceNames: []string{"kubernetes.io/*"}})
	bind(t, c, "bob-approves", "approve-kubernetes-io", "bob")
	// The authorizer sees the new role and binding through its informers:
	// a moment after their creates return.
	var sig await.Signal
	sig.Until(t, 10*time.Second, "approval with approve on kubernetes.io/*", c.env.Ctx.Done(), func() (bool, string) {
		err := approve(bob)
		return err == nil, fmt.Sprint(err)
	})
	cert, _ := c.issued(t, "jane")
	if cert.Subject.CommonName != "jane" || time.Until(cert.NotAfter) > time.Hour {
		t.Errorf("jane's certificate: %v until %v", cert.Subject, cert.NotAfter)
	}

	t.Run("the signer refuses what its signer does not issue", func(t *testing.T) {
		// A client certificate with server auth, approved by the admin.
		obj := newRequest(t, "jane", nil, nil).object("jane-server", csr.KubeAPIServerClient, csr.UsageClientAuth, csr.UsageServerAuth)
		c.create(t, c.s.Conn, obj)
		cur, err := client.CertificateSigningRequests(c.s.Conn).Get(c.env.Ctx, "", "jane-server")
		if err != nil {
			t.Fatal(err)
		}
		cur.Status = &certificatesv1.CertificateSigningRequestStatus{Conditions: []*certificatesv1.CertificateSigningRequestCondition{{Type: csr.Approved, Status: csr.True, Reason: "Test"}}}
		if _, err := certificatesv1.NewCertificateSigningRequestsClient(c.s.Conn).UpdateApproval(c.env.Ctx, cur); err != nil {
			t.Fatal(err)
		}
		c.env.Await(patience, "jane-server Failed", func() (bool, string) {
			o, _ := c.csrs.Store().GetByName("", "jane-server")
			f := csr.Condition(o, csr.Failed)
			return f.GetReason() == "SignerValidationFailure" && f.GetMessage() == "invalid usage for client certificate: server auth" && len(o.GetStatus().GetCertificate()) == 0,
				managertest.Explain("%v", o.GetStatus())
		})
	})
}

// TestSignerReadsNewCAFiles: the signer signs with what its
// --cluster-signing-* files hold when it signs, as Kubernetes' csrsigning
// reloads them: a CA put in their place is used for the next request,
// without a restart; files whose key is not the certificate's sign
// nothing until they are mended.
func TestSignerReadsNewCAFiles(t *testing.T) {
	c := startCluster(t)
	boot := c.s.ConnWithToken(t, "abcdef.0123456789abcdef")
	nodes := []string{csr.NodesGroup}
	first := newRequest(t, "system:node:n1", nodes, nil)
	c.create(t, boot, first.object("before", csr.KubeAPIServerClientKubelet, clientUsages...))
	if cert, _ := c.issued(t, "before"); cert.CheckSignatureFrom(c.s.CA.Cert) != nil {
		t.Fatal("the first certificate is not the cluster CA's")
	}

	next, _, err := pki.InitCA(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	nextKey, err := pki.EncodeKey(next.Key)
	if err != nil {
		t.Fatal(err)
	}
	// The certificate first, the key after: between the two, the files
	// do not make a pair.
	if err := pki.WriteFile(filepath.Join(c.caDir, "ca.crt"), next.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	torn := newRequest(t, "system:node:n2", nodes, nil)
	c.create(t, boot, torn.object("torn", csr.KubeAPIServerClientKubelet, clientUsages...))
	c.env.Await(patience, "csr torn approved", func() (bool, string) {
		o, ok := c.csrs.Store().GetByName("", "torn")
		return ok && csr.IsApproved(o), managertest.Explain("csr torn: %v", o.GetStatus())
	})
	if err := pki.WriteFile(filepath.Join(c.caDir, "ca.key"), nextKey, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"torn", "after"} {
		if name == "after" {
			c.create(t, boot, newRequest(t, "system:node:n3", nodes, nil).object(name, csr.KubeAPIServerClientKubelet, clientUsages...))
		}
		cert, _ := c.issued(t, name)
		if err := cert.CheckSignatureFrom(next.Cert); err != nil {
			t.Errorf("csr %s: the certificate is not signed by the CA now in the files: %v (issuer %s)", name, err, cert.Issuer)
		}
	}
}
