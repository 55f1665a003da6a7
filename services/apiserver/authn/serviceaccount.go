package authn

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"skiff.dev/internal/apierrors"
	"skiff.dev/services/apiserver/user"
)

// Service-account tokens are JWTs (RFC 7519) signed with ES256 by the
// apiserver's key. Claims: iss (the issuer), sub
// ("system:serviceaccount:<namespace>:<name>"), uid (the ServiceAccount's
// uid), iat, nbf, exp. The token authenticates user
// system:serviceaccount:<namespace>:<name> in groups
// system:serviceaccounts and system:serviceaccounts:<namespace>, while the
// ServiceAccount exists with that uid.

type jwtHeader struct {
	Alg string `json:"alg"`
	Typ string `json:"typ,omitempty"`
	Kid string `json:"kid,omitempty"`
}

type saClaims struct {
	Iss string `json:"iss"`
	Sub string `json:"sub"`
	UID string `json:"uid"`
	Iat int64  `json:"iat,omitempty"`
	Nbf int64  `json:"nbf,omitempty"`
	Exp int64  `json:"exp"`
}

var b64 = base64.RawURLEncoding

// keyID names a public key: the start of its PKIX DER's SHA-256.
func keyID(pub *ecdsa.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(der)
	return b64.EncodeToString(sum[:16])
}

// SignServiceAccountToken makes a token for ServiceAccount namespace/name
// (of the given uid), valid from now for ttl.
func SignServiceAccountToken(key *ecdsa.PrivateKey, issuer, namespace, name, uid string, now time.Time, ttl time.Duration) (string, error) {
	if namespace == "" || name == "" || uid == "" {
		return "", errors.New("service-account token: namespace, name and uid are required")
	}
	if ttl <= 0 {
		return "", errors.New("service-account token: the lifetime must be positive")
	}
	if issuer == "" {
		issuer = DefaultIssuer
	}
	h, err := json.Marshal(jwtHeader{Alg: "ES256", Typ: "JWT", Kid: keyID(&key.PublicKey)})
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(saClaims{Iss: issuer, Sub: user.ServiceAccountsUser + namespace + ":" + name, UID: uid,
		Iat: now.Unix(), Nbf: now.Unix(), Exp: now.Add(ttl).Unix()})
	if err != nil {
		return "", err
	}
	signed := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
	sum := sha256.Sum256([]byte(signed))
	r, s, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		return "", err
	}
	var sig [64]byte
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signed + "." + b64.EncodeToString(sig[:]), nil
}

// ServiceAccountLookup finds the uid of ServiceAccount namespace/name;
// found is false when it does not exist.
type ServiceAccountLookup func(ctx context.Context, namespace, name string) (uid string, found bool, err error)

// saTokens verifies service-account tokens. A verified token is kept until
// it expires (signature checks are slow); every use still checks the
// ServiceAccount exists with the token's uid.
type saTokens struct {
	pub    *ecdsa.PublicKey
	kid    string
	issuer string
	lookup ServiceAccountLookup

	mu    sync.RWMutex
	cache map[string]*saEntry // token -> verified claims
}

// maxSATokens bounds the cache of verified tokens.
const maxSATokens = 10000

// notBeforeLeeway tolerates clocks a little apart.
const notBeforeLeeway = time.Minute

type saEntry struct {
	info            *user.Info
	namespace, name string
	uid             string
	nbf, exp        time.Time
}

func newSATokens(pub *ecdsa.PublicKey, issuer string, lookup ServiceAccountLookup) *saTokens {
	if issuer == "" {
		issuer = DefaultIssuer
	}
	return &saTokens{pub: pub, kid: keyID(pub), issuer: issuer, lookup: lookup, cache: map[string]*saEntry{}}
}

// looksLikeJWT: three base64url parts, the first a JSON object.
func looksLikeJWT(tok string) bool {
	return strings.HasPrefix(tok, "eyJ") && strings.Count(tok, ".") == 2
}

func (t *saTokens) authenticate(ctx context.Context, tok string, now time.Time) (*user.Info, error) {
	t.mu.RLock()
	e := t.cache[tok]
	t.mu.RUnlock()
	if e == nil {
		var err error
		if e, err = t.verify(tok); err != nil {
			return nil, err
		}
		t.remember(tok, e, now)
	}
	if now.After(e.exp) {
		return nil, apierrors.NewUnauthorized(fmt.Sprintf("Unauthorized: the service-account token of %s expired at %s", e.info.Name, e.exp.UTC().Format(time.RFC3339)))
	}
	if now.Add(notBeforeLeeway).Before(e.nbf) {
		return nil, apierrors.NewUnauthorized(fmt.Sprintf("Unauthorized: the service-account token of %s is not valid before %s", e.info.Name, e.nbf.UTC().Format(time.RFC3339)))
	}
	uid, found, err := t.lookup(ctx, e.namespace, e.name)
	switch {
	case err != nil:
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("checking service account %s/%s of a token: %v", e.namespace, e.name, err))
	case !found:
		return nil, apierrors.NewUnauthorized(fmt.Sprintf("Unauthorized: the token's service account %s/%s no longer exists", e.namespace, e.name))
	case uid != e.uid:
		return nil, apierrors.NewUnauthorized(fmt.Sprintf("Unauthorized: the token's service account %s/%s was deleted and made again since the token was issued (uid %s, the token names %s)", e.namespace, e.name, uid, e.uid))
	}
	return e.info, nil
}

func (t *saTokens) remember(tok string, e *saEntry, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.cache) >= maxSATokens {
		for k, old := range t.cache {
			if now.After(old.exp) {
				delete(t.cache, k)
			}
		}
		if len(t.cache) >= maxSATokens {
			clear(t.cache)
		}
	}
	t.cache[tok] = e
}

var errForeignKey = apierrors.NewUnauthorized("Unauthorized: the service-account token's signature does not verify: it was not signed by this cluster's service-account key")

var errMalformed = apierrors.NewUnauthorized("Unauthorized: the bearer token is not a well-formed service-account token (JWT)")

// verify checks a token's form, signature, issuer and subject (not its
// times nor its ServiceAccount: those change, the rest does not).
func (t *saTokens) verify(tok string) (*saEntry, error) {
	hb64, rest, _ := strings.Cut(tok, ".")
	cb64, sb64, _ := strings.Cut(rest, ".")
	hb, err1 := b64.DecodeString(hb64)
	cb, err2 := b64.DecodeString(cb64)
	sig, err3 := b64.DecodeString(sb64)
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, errMalformed
	}
	var h jwtHeader
	if json.Unmarshal(hb, &h) != nil {
		return nil, errMalformed
	}
	if h.Alg != "ES256" {
		return nil, apierrors.NewUnauthorized(fmt.Sprintf("Unauthorized: service-account tokens are signed with ES256, this one says %q", h.Alg))
	}
	if len(sig) != 64 {
		return nil, errMalformed
	}
	if h.Kid != "" && h.Kid != t.kid {
		return nil, errForeignKey
	}
	sum := sha256.Sum256([]byte(tok[:len(hb64)+1+len(cb64)]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(t.pub, sum[:], r, s) {
		return nil, errForeignKey
	}
	var c saClaims
	if json.Unmarshal(cb, &c) != nil {
		return nil, errMalformed
	}
	if c.Iss != t.issuer {
		return nil, apierrors.NewUnauthorized(fmt.Sprintf("Unauthorized: the service-account token's issuer is %q, not %q", c.Iss, t.issuer))
	}
	ns, name, ok := strings.Cut(strings.TrimPrefix(c.Sub, user.ServiceAccountsUser), ":")
	if !strings.HasPrefix(c.Sub, user.ServiceAccountsUser) || !ok || ns == "" || name == "" || c.UID == "" || c.Exp == 0 {
		return nil, apierrors.NewUnauthorized("Unauthorized: the service-account token lacks sub (system:serviceaccount:<namespace>:<name>), uid or exp")
	}
	return &saEntry{
		info: &user.Info{
			Name:          c.Sub,
			UID:           c.UID,
			Groups:        []string{user.ServiceAccountsAll, user.ServiceAccountsNS + ns, user.AllAuthenticated},
			Authenticator: "serviceaccount",
		},
		namespace: ns, name: name, uid: c.UID,
		nbf: time.Unix(c.Nbf, 0), exp: time.Unix(c.Exp, 0),
	}, nil
}
