package authn

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"skiff.dev/internal/apierrors"
	"skiff.dev/services/apiserver/user"
)

// verifyClientChain checks a client's certificates (the leaf first, then
// intermediates, as sent in the handshake) chain to roots for client
// authentication, at now for every certificate but the leaf, whose
// validity dates are left to the authenticator: an expired (or not yet
// valid) certificate of the cluster CA passes the handshake, so that each
// call can be refused with the reason instead of a failed handshake (which
// a client sees as a broken pipe). A certificate of another CA, or one
// whose signature does not hold, is refused here.
func verifyClientChain(roots *x509.CertPool, certs []*x509.Certificate, now time.Time) error {
	if len(certs) == 0 {
		return nil
	}
	if roots == nil {
		return errors.New("no client CA is configured to verify client certificates")
	}
	leaf := certs[0]
	opts := x509.VerifyOptions{
		Roots:         roots,
		Intermediates: x509.NewCertPool(),
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	switch {
	case now.After(leaf.NotAfter):
		opts.CurrentTime = leaf.NotAfter
	case now.Before(leaf.NotBefore):
		opts.CurrentTime = leaf.NotBefore
	}
	chains, err := leaf.Verify(opts)
	if err != nil {
		return fmt.Errorf("client certificate %q: %w", leaf.Subject, err)
	}
	if opts.CurrentTime.Equal(now) {
		return nil
	}
	// Verified at the leaf's edge of validity: the CAs above it must be
	// valid now.
	for _, chain := range chains {
		if validAt(chain[1:], now) {
			return nil
		}
	}
	return fmt.Errorf("client certificate %q: its issuing CA is not valid at %s", leaf.Subject, now.UTC().Format(time.RFC3339))
}

func validAt(certs []*x509.Certificate, now time.Time) bool {
	for _, c := range certs {
		if now.Before(c.NotBefore) || now.After(c.NotAfter) {
			return false
		}
	}
	return true
}

// certUsers is the client-certificate authenticator. The TLS handshake
// (Material.ServerTLS) has checked the chain against the client CAs but
// for the leaf's validity dates (verifyClientChain): a certificate of
// another CA never gets this far. The chain is checked here again, once
// per connection, so that nothing unverified is trusted whatever the TLS
// configuration; then the user is read from the leaf (CN = user, O =
// groups) and kept per leaf (one per connection), so a request costs a map
// lookup and a clock read, and its validity dates are checked on every
// request.
type certUsers struct {
	roots *x509.CertPool
	log   *zap.Logger
	// expiration observes the remaining lifetime of the certificate of
	// every request whose chain verified (expired or not).
	expiration prometheus.Histogram
	cache      sync.Map // *x509.Certificate -> *certUser
	n          atomic.Int64
}

// maxCertUsers bounds the cache; past it, it starts over.
const maxCertUsers = 4096

type certUser struct {
	info                *user.Info
	notBefore, notAfter time.Time
	// err refuses every request: the chain did not verify.
	err error
	// logged says a refusal for the dates was logged (once per leaf).
	logged atomic.Bool
}

// peerChain is the client's certificate chain on the request's
// connection, leaf first; verified says the TLS stack verified it,
// dates included (a configuration with ClientAuth
// VerifyClientCertIfGiven).
func peerChain(ctx context.Context) (certs []*x509.Certificate, verified bool, remote net.Addr) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil, false, nil
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok {
		return nil, false, nil
	}
	if vc := ti.State.VerifiedChains; len(vc) > 0 && len(vc[0]) > 0 {
		return vc[0], true, p.Addr
	}
	return ti.State.PeerCertificates, false, p.Addr
}

// authenticate returns the certificate's user, or ok false when the
// connection has no client certificate.
func (c *certUsers) authenticate(ctx context.Context, now time.Time) (u *user.Info, ok bool, err error) {
	certs, verified, remote := peerChain(ctx)
	if len(certs) == 0 {
		return nil, false, nil
	}
	cu := c.lookup(certs, verified, now)
	if cu.err != nil {
		return nil, true, cu.err
	}
	c.expiration.Observe(cu.notAfter.Sub(now).Seconds())
	switch {
	case now.After(cu.notAfter):
		c.logRefusal(cu, certs[0], remote, "a client certificate has expired: its requests are refused until it is renewed")
		return nil, true, apierrors.NewUnauthorized(fmt.Sprintf("Unauthorized: the client certificate of %q expired at %s", cu.info.Name, cu.notAfter.UTC().Format(time.RFC3339)))
	case now.Before(cu.notBefore):
		c.logRefusal(cu, certs[0], remote, "a client certificate is not valid yet (is a clock wrong?): its requests are refused until then")
		return nil, true, apierrors.NewUnauthorized(fmt.Sprintf("Unauthorized: the client certificate of %q is not valid before %s", cu.info.Name, cu.notBefore.UTC().Format(time.RFC3339)))
	case cu.info.Name == "":
		return nil, true, apierrors.NewUnauthorized("Unauthorized: the client certificate has no common name (CN): it names no user")
	}
	return cu.info, true, nil
}

// logRefusal logs, once per leaf (connection), why its certificate's
// requests are refused: its subject, serial and dates, never more.
func (c *certUsers) logRefusal(cu *certUser, leaf *x509.Certificate, remote net.Addr, msg string) {
	if c.log == nil || cu.logged.Swap(true) {
		return
	}
	fields := []zap.Field{
		zap.String("subject", leaf.Subject.String()),
		zap.String("serial", leaf.SerialNumber.Text(16)),
		zap.String("notBefore", cu.notBefore.UTC().Format(time.RFC3339)),
		zap.String("notAfter", cu.notAfter.UTC().Format(time.RFC3339)),
	}
	if remote != nil {
		fields = append(fields, zap.String("remote", remote.String()))
	}
	c.log.Warn(msg, fields...)
}

func (c *certUsers) lookup(certs []*x509.Certificate, verified bool, now time.Time) *certUser {
	leaf := certs[0]
	if v, ok := c.cache.Load(leaf); ok {
		return v.(*certUser)
	}
	cu := &certUser{
		info: &user.Info{
			Name:          leaf.Subject.CommonName,
			Groups:        withAuthenticated(leaf.Subject.Organization),
			Authenticator: "x509",
		},
		notBefore: leaf.NotBefore,
		notAfter:  leaf.NotAfter,
	}
	if !verified {
		if err := verifyClientChain(c.roots, certs, now); err != nil {
			cu.err = apierrors.NewUnauthorized(fmt.Sprintf("Unauthorized: the client certificate does not verify against the client CA: %v", err))
		}
	}
	if c.n.Add(1) > maxCertUsers {
		c.cache.Clear()
		c.n.Store(1)
	}
	c.cache.Store(leaf, cu)
	return cu
}

// withAuthenticated is groups plus system:authenticated (once), in a new slice.
func withAuthenticated(groups []string) []string {
	out := make([]string, 0, len(groups)+1)
	for _, g := range groups {
		if g != user.AllAuthenticated {
			out = append(out, g)
		}
	}
	return append(out, user.AllAuthenticated)
}
