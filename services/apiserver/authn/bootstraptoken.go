package authn

import (
	"context"
	"crypto/subtle"
	"fmt"
	"strings"
	"time"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/bootstraptoken"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/apiserver/user"
)

// Bootstrap tokens (package bootstraptoken has their form): a machine
// joining the cluster presents one as its bearer token and is user
// system:bootstrap:<id> in group system:bootstrappers (and the secret's
// auth-extra-groups): enough to ask for its certificate (a
// CertificateSigningRequest), nothing more.

// SecretLookup reads a Secret; ok is false when it does not exist.
type SecretLookup func(ctx context.Context, namespace, name string) (s *corev1.Secret, ok bool, err error)

// errBootstrapToken is every refusal of a bootstrap token: as Kubernetes,
// it does not say which check failed (the id is in the log line the
// request's failure makes, never the secret).
var errBootstrapToken = apierrors.NewUnauthorized("Unauthorized: the bootstrap token is not known, expired, revoked or not for authentication")

// BootstrapTokenUser checks a bootstrap token against its Secret and says
// whom it authenticates (a control-plane member checks a join's so).
func BootstrapTokenUser(ctx context.Context, lookup SecretLookup, tok string, now time.Time) (*user.Info, error) {
	if _, _, ok := bootstraptoken.Parse(tok); !ok {
		return nil, errBootstrapToken
	}
	return bootstrapAuthenticate(ctx, lookup, tok, now)
}

// bootstrapAuthenticate checks a bootstrap token against its Secret.
func bootstrapAuthenticate(ctx context.Context, lookup SecretLookup, tok string, now time.Time) (*user.Info, error) {
	id, secret, _ := bootstraptoken.Parse(tok)
	s, ok, err := lookup(ctx, bootstraptoken.Namespace, bootstraptoken.SecretPrefix+id)
	if err != nil {
		return nil, apierrors.NewInternal(fmt.Errorf("reading bootstrap token %s: %w", id, err))
	}
	if !ok || s.GetType() != bootstraptoken.SecretType || s.GetMetadata().GetDeletionTimestamp() != nil {
		return nil, errBootstrapToken
	}
	d := s.GetData()
	if string(d[bootstraptoken.IDKey]) != id || subtle.ConstantTimeCompare(d[bootstraptoken.SecretKey], []byte(secret)) != 1 ||
		string(d[bootstraptoken.UsageAuthKey]) != "true" || bootstraptoken.Expired(s, now) {
		return nil, errBootstrapToken
	}
	groups := []string{bootstraptoken.Group}
	for _, g := range strings.Split(string(d[bootstraptoken.ExtraGroupsKey]), ",") {
		if g = strings.TrimSpace(g); strings.HasPrefix(g, bootstraptoken.Group+":") {
			groups = append(groups, g)
		}
	}
	return &user.Info{Name: bootstraptoken.UserPrefix + id, Groups: append(groups, user.AllAuthenticated), Authenticator: "bootstrap-token"}, nil
}
