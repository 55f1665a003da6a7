// Package certs gets and renews a component's certificates from the
// cluster, as the kubelet's TLS bootstrap and certificate manager do: the
// node agent's client and serving certificates, and the client
// certificates of the controller-manager and the scheduler
// (--rotate-certificates).
//
// A node that joins (skiff-node-agent --join ADDR --token T --ca-cert-hash
// H) has no credentials but a bootstrap token: it fetches the cluster CA
// from the apiserver's TLS handshake and keeps it only if its hash is H
// (client.FetchPinnedCA), then asks for its client certificate with a
// CertificateSigningRequest (signer kubernetes.io/kube-apiserver-client-
// kubelet, CN system:node:<node>, O system:nodes) sent with the token;
// the controller-manager approves it (the token's group may ask for node
// client certificates) and signs it. Its serving certificate (signer
// kubernetes.io/kubelet-serving, the node's names and addresses) is asked
// for the same way once the node is registered, with its client
// certificate.
//
// Each certificate is a Manager: loaded from its files (the node agent's
// in --cert-dir) at start, asked for when missing, renewed at a random point between 70%
// and 90% of its lifetime (the kubelet's rotation deadline) with the
// current client certificate as credentials, written back (the key before
// the certificate, so that a renewal stopped half-way is finished at the
// next start) and swapped in memory, so every TLS handshake after
// (GetCertificate, GetClientCertificate) shows the new one.
package certs

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/workqueue"
	certificatesv1 "skiff.dev/proto/certificates/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Kubernetes' signers of node certificates, and of other clients'.
const (
	ClientSigner          = "kubernetes.io/kube-apiserver-client-kubelet"
	ServingSigner         = "kubernetes.io/kubelet-serving"
	APIServerClientSigner = "kubernetes.io/kube-apiserver-client"
)

// Config describes one certificate of the node agent.
type Config struct {
	// CertFile and KeyFile hold the certificate and its key (PEM).
	CertFile, KeyFile string
	// SignerName, Usages, Subject: what the CertificateSigningRequest
	// asks for.
	SignerName string
	Usages     []string
	Subject    pkix.Name
	// Hosts are the serving certificate's names and addresses, asked at
	// each request (the node's addresses may change); nil: none.
	Hosts func() []string
	// ExpirationSeconds asks for a lifetime (0: the signer's default).
	ExpirationSeconds int32
	// Clock (nil: the wall clock) and Jitter, a number in [0, 1) that
	// places the rotation deadline (nil: random).
	Clock  workqueue.Clock
	Jitter func() float64
	Log    *zap.Logger
}

// NodeClient is the Config of node's client certificate in dir.
func NodeClient(dir, node string) Config {
	return Config{CertFile: filepath.Join(dir, "node-client.crt"), KeyFile: filepath.Join(dir, "node-client.key"), SignerName: ClientSigner,
		Usages:  []string{"digital signature", "client auth"},
		Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}}
}

// NodeServing is the Config of node's serving certificate in dir, for
// the names and addresses hosts gives.
func NodeServing(dir, node string, hosts func() []string) Config {
	return Config{CertFile: filepath.Join(dir, "node-serving.crt"), KeyFile: filepath.Join(dir, "node-serving.key"), SignerName: ServingSigner,
		Usages:  []string{"digital signature", "server auth"},
		Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}, Hosts: hosts}
}

// ClientRenewal is the Config that renews the client certificate in
// certFile and keyFile for the same user and groups (signer
// kubernetes.io/kube-apiserver-client): a component's, with
// --rotate-certificates. The controller-manager approves a client's
// renewal of its own certificate when it may create
// certificatesigningrequests/selfclient.
func ClientRenewal(certFile, keyFile string) (Config, error) {
	pair, err := loadPair(certFile, keyFile)
	if err != nil {
		return Config{}, err
	}
	return Config{CertFile: certFile, KeyFile: keyFile, SignerName: APIServerClientSigner,
		Usages:  []string{"digital signature", "client auth"},
		Subject: pkix.Name{CommonName: pair.Leaf.Subject.CommonName, Organization: pair.Leaf.Subject.Organization}}, nil
}

// Manager keeps one certificate (see the package comment).
type Manager struct {
	cfg Config
	cur atomic.Pointer[tls.Certificate]
	// deadline is when the current certificate is renewed.
	deadline atomic.Pointer[time.Time]
}

// New makes the manager of cfg and loads the certificate from its files
// when they hold one that has not expired.
func New(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = workqueue.RealClock()
	}
	if cfg.Jitter == nil {
		cfg.Jitter = mathrand.Float64
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	m := &Manager{cfg: cfg}
	if pair, err := loadPair(m.certPath(), m.keyPath()); err == nil && cfg.Clock.Now().Before(pair.Leaf.NotAfter) {
		m.set(&pair)
	}
	return m
}

func (m *Manager) certPath() string { return m.cfg.CertFile }
func (m *Manager) keyPath() string  { return m.cfg.KeyFile }

// SetHosts sets Config.Hosts; call it before Run.
func (m *Manager) SetHosts(hosts func() []string) { m.cfg.Hosts = hosts }

// Files are the certificate's and the key's paths.
func (m *Manager) Files() (cert, key string) { return m.certPath(), m.keyPath() }

// Current is the certificate (nil before the first one).
func (m *Manager) Current() *tls.Certificate { return m.cur.Load() }

// GetCertificate serves the current certificate (tls.Config).
func (m *Manager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := m.cur.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("no serving certificate yet: its CertificateSigningRequest is not signed")
}

// GetClientCertificate shows the current certificate (tls.Config).
func (m *Manager) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if c := m.cur.Load(); c != nil {
		return c, nil
	}
	return &tls.Certificate{}, nil // none: the server refuses or asks for a token
}

// RotationDeadline is when the current certificate is renewed: a random
// point between 70% and 90% of its lifetime (zero without one).
func (m *Manager) RotationDeadline() time.Time {
	if d := m.deadline.Load(); d != nil {
		return *d
	}
	return time.Time{}
}

func (m *Manager) set(pair *tls.Certificate) {
	leaf := pair.Leaf
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	d := leaf.NotBefore.Add(time.Duration(float64(life) * (0.7 + 0.2*m.cfg.Jitter())))
	m.deadline.Store(&d)
	m.cur.Store(pair)
}

// Request asks for a new certificate through conn (with a bootstrap
// token, or the current client certificate), waits until it is signed,
// denied or failed, and keeps it.
func (m *Manager) Request(ctx context.Context, conn grpc.ClientConnInterface) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.CertificateRequest{Subject: m.cfg.Subject}
	if m.cfg.Hosts != nil {
		for _, h := range m.cfg.Hosts() {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else if h != "" {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return err
	}
	spec := &certificatesv1.CertificateSigningRequestSpec{
		Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
		SignerName: m.cfg.SignerName,
		Usages:     m.cfg.Usages,
	}
	if m.cfg.ExpirationSeconds > 0 {
		spec.ExpirationSeconds = &m.cfg.ExpirationSeconds
	}
	csrs := client.CertificateSigningRequests(conn)
	csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{Metadata: &metav1.ObjectMeta{GenerateName: "csr-"}, Spec: spec})
	if err != nil {
		return fmt.Errorf("asking for the %s certificate: %w", filepath.Base(m.cfg.CertFile), err)
	}
	name := csr.GetMetadata().GetName()
	m.cfg.Log.Info("certificate requested", zap.String("csr", name), zap.String("signer", m.cfg.SignerName))
	certPEM, err := awaitCertificate(ctx, csrs, csr)
	if err != nil {
		return fmt.Errorf("CertificateSigningRequest %s: %w", name, err)
	}
	return m.keep(certPEM, key)
}

// awaitCertificate watches the request until it has a certificate, or is
// denied or failed.
func awaitCertificate(ctx context.Context, csrs *client.Resource[*certificatesv1.CertificateSigningRequest, *certificatesv1.CertificateSigningRequestList], csr *certificatesv1.CertificateSigningRequest) ([]byte, error) {
	name := csr.GetMetadata().GetName()
	for {
		for _, c := range csr.GetStatus().GetConditions() {
			if (c.GetType() == "Denied" || c.GetType() == "Failed") && c.GetStatus() == "True" {
				return nil, fmt.Errorf("%s: %s: %s", c.GetType(), c.GetReason(), c.GetMessage())
			}
		}
		if cert := csr.GetStatus().GetCertificate(); len(cert) > 0 {
			return cert, nil
		}
		w, err := csrs.Watch(ctx, &metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: csr.GetMetadata().GetResourceVersion()})
		if err != nil {
			return nil, err
		}
		var changed *certificatesv1.CertificateSigningRequest
		for changed == nil {
			ev, err := w.Next()
			if err != nil {
				if ctx.Err() != nil {
					w.Stop()
					return nil, ctx.Err()
				}
				break // the watch ended: read it again
			}
			if ev.Type == "DELETED" {
				w.Stop()
				return nil, errors.New("deleted before it was signed")
			}
			if ev.Type != "BOOKMARK" {
				changed = ev.Object
			}
		}
		w.Stop()
		if changed != nil {
			csr = changed
			continue
		}
		if csr, err = csrs.Get(ctx, "", name); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, errors.New("deleted before it was signed")
			}
			return nil, err
		}
	}
}

// keep checks the signed certificate against the key and the request,
// writes both (the key first, the certificate finished from its temporary
// file at the next start if it stops between: loadPair) and makes it current.
func (m *Manager) keep(certPEM []byte, key crypto.Signer) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("the signed certificate: %w", err)
	}
	if pair.Leaf.Subject.CommonName != m.cfg.Subject.CommonName {
		return fmt.Errorf("the signed certificate is for %q, not %q", pair.Leaf.Subject.CommonName, m.cfg.Subject.CommonName)
	}
	for _, f := range []string{m.keyPath(), m.certPath()} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			return err
		}
	}
	// Both files are written whole before either replaces its old one,
	// and the key goes first: stopped between the two renames, the new
	// key is beside the new certificate's temporary file, from which
	// loadPair finishes the renewal at the next start.
	keyTmp, err := writeTemp(m.keyPath(), keyPEM, 0o600)
	if err != nil {
		return err
	}
	certTmp, err := writeTemp(m.certPath(), certPEM, 0o644)
	if err != nil {
		return err
	}
	if err := rename(keyTmp, m.keyPath()); err != nil {
		return err
	}
	if err := rename(certTmp, m.certPath()); err != nil {
		return err
	}
	m.set(&pair)
	m.cfg.Log.Info("certificate renewed", zap.String("name", filepath.Base(m.cfg.CertFile)), zap.Time("notAfter", pair.Leaf.NotAfter), zap.Time("rotation", m.RotationDeadline()))
	return nil
}

// writeFile replaces path atomically (a temporary file renamed).
func writeFile(path string, data []byte, perm os.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	return rename(tmp, path)
}

// writeTemp writes data to path's temporary file, on the disk (synced)
// when it returns, and names it.
func writeTemp(path string, data []byte, perm os.FileMode) (string, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// loadPair loads the certificate in certFile with the key in keyFile.
// When they do not make a pair and the certificate's temporary file does
// with the key, a renewal stopped between its two renames (keep) left
// them: loadPair renames that file into place and loads it.
func loadPair(certFile, keyFile string) (tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err == nil {
		return pair, nil
	}
	tmp := certFile + ".tmp"
	next, terr := tls.LoadX509KeyPair(tmp, keyFile)
	if terr != nil {
		return pair, err
	}
	if rerr := rename(tmp, certFile); rerr != nil {
		return pair, fmt.Errorf("%w; %s makes the pair, and renaming it failed: %v", err, tmp, rerr)
	}
	return next, nil
}

// rename is os.Rename; a test stops a renewal between its two renames.
var rename = os.Rename

// Run keeps the certificate: asks for one at once when there is none,
// then renews it at each rotation deadline, through conn, until ctx ends.
// A failed request is asked again after a backoff (1 s doubling to 5
// min).
func (m *Manager) Run(ctx context.Context, conn grpc.ClientConnInterface) {
	backoff := time.Second
	for {
		var wait time.Duration
		if m.Current() != nil {
			wait = m.RotationDeadline().Sub(m.cfg.Clock.Now())
		}
		if wait > 0 {
			t := m.cfg.Clock.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
		}
		if err := m.Request(ctx, conn); err != nil {
			if ctx.Err() != nil {
				return
			}
			m.cfg.Log.Warn("certificate request failed; asking again", zap.String("name", filepath.Base(m.cfg.CertFile)), zap.Duration("after", backoff), zap.Error(err))
			t := m.cfg.Clock.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
			backoff = min(2*backoff, 5*time.Minute)
			continue
		}
		backoff = time.Second
	}
}

// Bootstrap makes sure the node has a client certificate before it
// starts: when the manager has none, it fetches the cluster CA from server
// pinned by caCertHash (written to caFile unless there), and asks for the
// certificate with the bootstrap token. It returns the CA's PEM.
func Bootstrap(ctx context.Context, m *Manager, server, token, caCertHash, caFile string) ([]byte, error) {
	caPEM, err := os.ReadFile(caFile)
	if errors.Is(err, os.ErrNotExist) {
		if caPEM, err = client.FetchPinnedCA(ctx, client.Members(server)[0], caCertHash); err != nil {
			return nil, err
		}
		if err = os.MkdirAll(filepath.Dir(caFile), 0o700); err == nil {
			err = writeFile(caFile, caPEM, 0o644)
		}
	}
	if err != nil {
		return nil, err
	}
	if m.Current() != nil {
		return caPEM, nil
	}
	if token == "" {
		return nil, errors.New("--join: the node has no client certificate yet: give --token (skiff-apiserver token create prints one)")
	}
	conn, err := client.Dial(client.Config{Server: server, CAData: caPEM, Token: token})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := m.Request(ctx, conn); err != nil {
		return nil, err
	}
	return caPEM, nil
}

// RotateFlagUsage is the help of the components' --rotate-certificates.
const RotateFlagUsage = "renew the client certificate of --tls-cert-file before it expires (at 70-90% of its life), by a CertificateSigningRequest for the same user and groups that the controller-manager approves (certificatesigningrequests/selfclient) and signs; the files are rewritten"

// Dial is client.Dial whose client certificate, with rotate, a Manager of
// cfg.CertFile and cfg.KeyFile renews while the connection lives (the
// controller-manager's and the scheduler's --rotate-certificates). stop
// ends the renewal and closes the connection.
func Dial(cfg client.Config, rotate bool, log *zap.Logger, opts ...grpc.DialOption) (conn *grpc.ClientConn, stop func(), err error) {
	var m *Manager
	if rotate {
		if cfg.CertFile == "" || cfg.Insecure {
			return nil, nil, errors.New("--rotate-certificates renews the client certificate of --tls-cert-file: give it (and not --insecure)")
		}
		c, err := ClientRenewal(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
		}
		c.Log = log.Named("certificates")
		m = New(c)
		cfg.GetClientCertificate = m.GetClientCertificate
	}
	if conn, err = client.Dial(cfg, opts...); err != nil {
		return nil, nil, err
	}
	if m == nil {
		return conn, func() { conn.Close() }, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx, conn) }()
	return conn, func() { cancel(); <-done; conn.Close() }, nil
}
