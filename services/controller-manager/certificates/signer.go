package certificates

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/csr"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	certificatesv1 "skiff.dev/proto/certificates/v1"
	"skiff.dev/services/apiserver/authn/pki"
	"skiff.dev/services/controller-manager/manager"
)

// SigningName is the signer's name in --controllers, as Kubernetes'.
const SigningName = "csrsigning"

// DefaultSigningDuration is --cluster-signing-duration's default, as
// Kubernetes' (a year).
const DefaultSigningDuration = 365 * 24 * time.Hour

// minDuration is the shortest certificate issued whatever
// expirationSeconds asks (twice pki.Backdate), as Kubernetes'.
const minDuration = 10 * time.Minute

// CA is a signing certificate and its key. One LoadCA made reads its
// files again whenever it signs, and signs with what they then hold, as
// Kubernetes' csrsigning reloads --cluster-signing-cert-file and
// --cluster-signing-key-file: a CA put in their place is used without a
// restart.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer

	// certFile and keyFile are where LoadCA read Cert and Key, and
	// certPEM and keyPEM what they held then.
	certFile, keyFile string
	mu                sync.Mutex
	certPEM, keyPEM   []byte
}

// LoadCA reads a PEM certificate and its PEM private key.
func LoadCA(certFile, keyFile string) (*CA, error) {
	ca := &CA{certFile: certFile, keyFile: keyFile}
	if _, _, err := ca.current(); err != nil {
		return nil, err
	}
	return ca, nil
}

// current is the certificate and key to sign with: a CA of LoadCA's
// reads its files, and parses them again when they changed. Files whose
// key is not the certificate's are an error (a CA being replaced, one
// file written and not yet the other): nothing is signed with either
// until they make a pair.
func (ca *CA) current() (*x509.Certificate, crypto.Signer, error) {
	if ca.certFile == "" {
		return ca.Cert, ca.Key, nil
	}
	certPEM, err := os.ReadFile(ca.certFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--cluster-signing-cert-file: %w", err)
	}
	keyPEM, err := os.ReadFile(ca.keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--cluster-signing-key-file: %w", err)
	}
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if ca.Cert != nil && bytes.Equal(certPEM, ca.certPEM) && bytes.Equal(keyPEM, ca.keyPEM) {
		return ca.Cert, ca.Key, nil
	}
	cert, err := pki.ParseCert(certPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("--cluster-signing-cert-file %s: %w", ca.certFile, err)
	}
	key, err := pki.ParseKey(keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("--cluster-signing-key-file %s: %w", ca.keyFile, err)
	}
	if !pki.KeyMatches(cert, key) {
		return nil, nil, fmt.Errorf("--cluster-signing-key-file %s is not the key of --cluster-signing-cert-file %s", ca.keyFile, ca.certFile)
	}
	ca.Cert, ca.Key, ca.certPEM, ca.keyPEM = cert, key, certPEM, keyPEM
	return cert, key, nil
}

// signerChecks are the signers csrsigning issues for, each with what a
// request to it must be (Kubernetes' isRequestForSignerFn).
var signerChecks = map[string]func(req *x509.CertificateRequest, usages []string) error{
	csr.KubeAPIServerClientKubelet: csr.ValidateKubeletClient,
	csr.KubeletServing:             csr.ValidateKubeletServing,
	csr.KubeAPIServerClient:        func(_ *x509.CertificateRequest, usages []string) error { return csr.ValidateAPIServerClient(usages) },
}

// Signer is the csrsigning controller.
type Signer struct {
	log      *zap.Logger
	clock    workqueue.Clock
	ca       *CA
	duration time.Duration
	csrs     *informer.Informer[*csrType]
	client   *client.Resource[*csrType, *certificatesv1.CertificateSigningRequestList]
	queue    *controller.Controller
}

// NewSigner builds the signer on the shared CSR informer; it issues
// certificates of at most duration (0: DefaultSigningDuration).
func NewSigner(mc *manager.Context, ca *CA, duration time.Duration) *Signer {
	if duration <= 0 {
		duration = DefaultSigningDuration
	}
	parts := mc.For(SigningName)
	s := &Signer{
		log: parts.Logger, clock: parts.Clock, ca: ca, duration: duration,
		csrs:   informer.For(mc.Informers, client.CertificateSigningRequests(mc.Conn)),
		client: client.CertificateSigningRequests(mc.Conn),
	}
	s.queue = parts.Runner(SigningName, 2, controller.ReconcileFunc(s.Reconcile))
	enqueue := func(c *csrType) {
		if toSign(c) {
			s.queue.Enqueue(informer.Key(c))
		}
	}
	s.csrs.AddHandler(informer.Handler[*csrType]{OnAdd: enqueue, OnUpdate: func(_, c *csrType) { enqueue(c) }})
	return s
}

// toSign: approved, not failed, no certificate yet, for one of our signers.
func toSign(c *csrType) bool {
	_, ours := signerChecks[c.GetSpec().GetSignerName()]
	return ours && csr.IsApproved(c) && !csr.HasTrue(c, csr.Failed) && len(c.GetStatus().GetCertificate()) == 0
}

// Run waits for the informer, then works until ctx ends.
func (s *Signer) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, s.csrs) {
		return nil
	}
	return s.queue.Run(ctx)
}

// Reconcile signs the CSR key, or marks it Failed when its signer does
// not issue what it asks.
func (s *Signer) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	_, name, err := controller.SplitKey(key)
	if err != nil {
		return controller.Result{}, controller.Terminal(err)
	}
	c, ok := s.csrs.Store().GetByName("", name)
	if !ok || !toSign(c) {
		return controller.Result{}, nil
	}
	next := proto.Clone(c).(*csrType)
	if next.Status == nil {
		next.Status = &certificatesv1.CertificateSigningRequestStatus{}
	}
	req, err := csr.ParseRequest(c.GetSpec().GetRequest())
	if err != nil {
		return controller.Result{}, controller.Terminal(fmt.Errorf("csr %s: %w", name, err))
	}
	if err := signerChecks[c.GetSpec().GetSignerName()](req, c.GetSpec().GetUsages()); err != nil {
		next.Status.Conditions = append(next.Status.Conditions, &certificatesv1.CertificateSigningRequestCondition{
			Type: csr.Failed, Status: csr.True, Reason: "SignerValidationFailure", Message: err.Error(),
		})
		s.log.Info("refused to sign", zap.String("csr", name), zap.Error(err))
	} else {
		cert, err := s.ca.Sign(req, c.GetSpec().GetUsages(), s.certDuration(c.GetSpec().ExpirationSeconds), s.clock.Now())
		if err != nil {
			return controller.Result{}, fmt.Errorf("signing csr %s: %w", name, err)
		}
		next.Status.Certificate = cert
	}
	_, err = s.client.UpdateStatus(ctx, next)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return controller.Result{}, nil // gone, or changed: the informer brings the new one
	}
	if err != nil {
		return controller.Result{}, fmt.Errorf("writing csr %s: %w", name, err)
	}
	if len(next.Status.Certificate) > 0 {
		s.log.Info("signed", zap.String("csr", name), zap.String("signer", c.GetSpec().GetSignerName()))
	}
	return controller.Result{}, nil
}

// certDuration is the signer's duration, shortened to what the request
// asks (but never below minDuration), as Kubernetes' signer.duration.
func (s *Signer) certDuration(expirationSeconds *int32) time.Duration {
	if expirationSeconds == nil {
		return s.duration
	}
	d := time.Duration(*expirationSeconds) * time.Second
	switch {
	case d > s.duration:
		return s.duration
	case d < minDuration:
		return minDuration
	}
	return d
}

// Sign issues the PEM certificate of req for usages (pki.CA.Sign), valid
// from pki.Backdate before now for d, and never beyond the CA's own expiry. The subject and
// subject alternative names are the request's; no extension it asks for
// is copied.
func (ca *CA) Sign(req *x509.CertificateRequest, usages []string, d time.Duration, now time.Time) ([]byte, error) {
	ku, ext, err := csr.X509Usages(usages)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               req.Subject,
		DNSNames:              req.DNSNames,
		IPAddresses:           req.IPAddresses,
		EmailAddresses:        req.EmailAddresses,
		URIs:                  req.URIs,
		KeyUsage:              ku,
		ExtKeyUsage:           ext,
		BasicConstraintsValid: true,
	}
	cert, key, err := ca.current()
	if err != nil {
		return nil, err
	}
	return (&pki.CA{Cert: cert, Key: key}).Sign(tmpl, req.PublicKey, d, now)
}
