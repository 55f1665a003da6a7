package authn

import (
	"context"
	"crypto/x509"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"skiff.dev/internal/apierrors"
	"skiff.dev/services/apiserver/user"
)

// certUsers is the client-certificate authenticator. The TLS handshake has
// verified the chain against the client CAs (a certificate of another CA
// never gets that far); what is left is to read the user from the leaf:
// CN = user, O = groups. The user of each leaf is kept (one leaf per
// connection), so a request costs a map lookup and a clock read.
type certUsers struct {
	cache sync.Map // *x509.Certificate -> *certUser
	n     atomic.Int64
}

// maxCertUsers bounds the cache; past it, it starts over.
const maxCertUsers = 4096

type certUser struct {
	info                *user.Info
	notBefore, notAfter time.Time
}

// verifiedLeaf is the client certificate of the request's connection,
// when one was given and verified.
func verifiedLeaf(ctx context.Context) *x509.Certificate {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.VerifiedChains[0]) == 0 {
		return nil
	}
	return ti.State.VerifiedChains[0][0]
}

// authenticate returns the certificate's user, or ok false when the
// connection has no verified client certificate.
func (c *certUsers) authenticate(ctx context.Context, now time.Time) (u *user.Info, ok bool, err error) {
	leaf := verifiedLeaf(ctx)
	if leaf == nil {
		return nil, false, nil
	}
	cu := c.lookup(leaf)
	switch {
	case now.After(cu.notAfter):
		return nil, true, apierrors.NewUnauthorized(fmt.Sprintf("Unauthorized: the client certificate of %q expired at %s", cu.info.Name, cu.notAfter.UTC().Format(time.RFC3339)))
	case now.Before(cu.notBefore):
		return nil, true, apierrors.NewUnauthorized(fmt.Sprintf("Unauthorized: the client certificate of %q is not valid before %s", cu.info.Name, cu.notBefore.UTC().Format(time.RFC3339)))
	case cu.info.Name == "":
		return nil, true, apierrors.NewUnauthorized("Unauthorized: the client certificate has no common name (CN): it names no user")
	}
	return cu.info, true, nil
}

func (c *certUsers) lookup(leaf *x509.Certificate) *certUser {
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
