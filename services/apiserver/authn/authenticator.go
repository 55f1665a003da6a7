package authn

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"skiff.dev/internal/bootstraptoken"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc/metadata"

	"skiff.dev/internal/apierrors"
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/user"
)

// Config is what the authenticator checks credentials against.
type Config struct {
	// ClientCAs verify client certificates (nil: a client certificate is
	// refused, unless the TLS stack verified it).
	ClientCAs *x509.CertPool
	// Tokens are the static bearer tokens (nil: none).
	Tokens StaticTokens
	// ServiceAccountKey verifies service-account tokens (nil: none are
	// accepted); Issuer is their iss claim; ServiceAccounts finds the
	// ServiceAccount a token names.
	ServiceAccountKey *ecdsa.PublicKey
	Issuer            string
	ServiceAccounts   ServiceAccountLookup
	// Audiences are the apiserver's (--api-audiences): a bound token must
	// name one (empty: Issuer). BoundObjects finds the pods and secrets
	// bound tokens are bound to (nil: bound tokens are refused).
	Audiences    []string
	BoundObjects BoundObjectLookup
	// BootstrapTokens reads bootstrap tokens' Secrets (nil: bootstrap
	// tokens are refused).
	BootstrapTokens SecretLookup
	// Anonymous lets requests without credentials through as
	// system:anonymous.
	Anonymous bool
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger logs, once per connection, a client certificate refused for
	// its dates (nil: no logs).
	Logger *zap.Logger
	// Registerer gets the authenticator's metrics (nil: not registered).
	Registerer prometheus.Registerer
}

// Authenticator says who sent a request, trying in order: the verified
// client certificate of the connection, a bearer token (static, then
// service account) in the "authorization: Bearer <token>" metadata, and,
// when enabled, anonymous. Presented credentials that do not hold fail the
// request (Unauthenticated, with the reason but never the secret); they
// never fall back to anonymous.
type Authenticator struct {
	certs     certUsers
	tokens    StaticTokens
	sa        *saTokens
	bootstrap SecretLookup
	anonymous bool
	now       func() time.Time
}

var _ server.Authenticator = (*Authenticator)(nil)

// AnonymousUser is who a request without credentials is, when allowed.
var AnonymousUser = &user.Info{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}, Authenticator: "anonymous"}

// New returns the authenticator of cfg.
func New(cfg Config) *Authenticator {
	a := &Authenticator{certs: certUsers{roots: cfg.ClientCAs, log: cfg.Logger, expiration: newCertExpiration(cfg.Registerer)}, tokens: cfg.Tokens, bootstrap: cfg.BootstrapTokens, anonymous: cfg.Anonymous, now: cfg.Now}
	if a.now == nil {
		a.now = time.Now
	}
	if cfg.ServiceAccountKey != nil && cfg.ServiceAccounts != nil {
		a.sa = newSATokens(cfg.ServiceAccountKey, cfg.Issuer, cfg.ServiceAccounts)
		a.sa.audiences, a.sa.objects = cfg.Audiences, cfg.BoundObjects
	}
	return a
}

var (
	errNoCredentials = apierrors.NewUnauthorized("Unauthorized: the request has no credentials: present a client certificate signed by the cluster CA or an \"authorization: Bearer <token>\" header (anonymous requests are refused)")
	errUnknownToken  = apierrors.NewUnauthorized("Unauthorized: the bearer token is not known (neither a static token, a service-account token nor a bootstrap token)")
	errBadHeader     = apierrors.NewUnauthorized("Unauthorized: the authorization header must be \"Bearer <token>\"")
)

// Authenticate implements server.Authenticator.
func (a *Authenticator) Authenticate(ctx context.Context, _ *server.RequestInfo) (*user.Info, error) {
	now := a.now()
	if u, ok, err := a.certs.authenticate(ctx, now); ok {
		return u, err
	}
	if tok, ok, err := bearerToken(ctx); ok {
		if err != nil {
			return nil, err
		}
		return a.token(ctx, tok, now)
	}
	if a.anonymous {
		return AnonymousUser, nil
	}
	return nil, errNoCredentials
}

func (a *Authenticator) token(ctx context.Context, tok string, now time.Time) (*user.Info, error) {
	if u := a.tokens[tok]; u != nil {
		return u, nil
	}
	if a.sa != nil && looksLikeJWT(tok) {
		return a.sa.authenticate(ctx, tok, now)
	}
	if _, _, ok := bootstraptoken.Parse(tok); ok && a.bootstrap != nil {
		return bootstrapAuthenticate(ctx, a.bootstrap, tok, now)
	}
	return nil, errUnknownToken
}

// bearerToken reads "authorization: Bearer <token>"; ok says a header
// was there.
func bearerToken(ctx context.Context) (tok string, ok bool, err error) {
	vals := metadata.ValueFromIncomingContext(ctx, "authorization")
	if len(vals) == 0 {
		return "", false, nil
	}
	scheme, tok, found := strings.Cut(vals[0], " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", true, errBadHeader
	}
	if tok = strings.TrimSpace(tok); tok == "" {
		return "", true, errBadHeader
	}
	return tok, true, nil
}
