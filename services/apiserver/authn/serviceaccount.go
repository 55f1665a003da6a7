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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"skiff.dev/internal/apierrors"
	"skiff.dev/services/apiserver/user"
)

// Service-account tokens are JWTs (RFC 7519) signed with ES256 by the
// apiserver's key. Claims: iss (the issuer), sub
// ("system:serviceaccount:<namespace>:<name>"), iat, nbf, exp, and either
//
//   - uid (the ServiceAccount's uid): a legacy token (SignServiceAccountToken,
//     skiff-apiserver's "token" command), without audiences; or
//   - aud and the private claim "kubernetes.io" ({namespace,
//     serviceaccount{name,uid}, pod{name,uid} or secret{name,uid}}): a bound
//     token (SignToken, ServiceAccounts.CreateToken), as Kubernetes' bound
//     service-account tokens.
//
// The token authenticates user system:serviceaccount:<namespace>:<name> in
// groups system:serviceaccounts and system:serviceaccounts:<namespace>,
// while the ServiceAccount exists with that uid; a bound token also needs
// one of its audiences to be the apiserver's and the object it is bound to
// to exist with its uid (a pod deleted more than a minute past its grace
// period no longer counts, as Kubernetes'). A pod-bound token's user has
// the extras authentication.kubernetes.io/pod-name and pod-uid.

type jwtHeader struct {
	Alg string `json:"alg"`
	Typ string `json:"typ,omitempty"`
	Kid string `json:"kid,omitempty"`
}

type saClaims struct {
	Iss string     `json:"iss"`
	Sub string     `json:"sub"`
	Aud audiences  `json:"aud,omitempty"`
	UID string     `json:"uid,omitempty"`
	Iat int64      `json:"iat,omitempty"`
	Nbf int64      `json:"nbf,omitempty"`
	Exp int64      `json:"exp"`
	K8s *k8sClaims `json:"kubernetes.io,omitempty"`
}

// k8sClaims is a bound token's private claim, as Kubernetes'.
type k8sClaims struct {
	Namespace      string       `json:"namespace"`
	ServiceAccount *BoundObject `json:"serviceaccount"`
	Pod            *BoundObject `json:"pod,omitempty"`
	Secret         *BoundObject `json:"secret,omitempty"`
}

// BoundObject names an object by name and uid.
type BoundObject struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// audiences is aud: a string or an array of strings (RFC 7519 4.1.3).
type audiences []string

func (a *audiences) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*a = audiences{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*a = many
	return nil
}

// User extras of a pod-bound token, as Kubernetes'.
const (
	ExtraPodName = "authentication.kubernetes.io/pod-name"
	ExtraPodUID  = "authentication.kubernetes.io/pod-uid"
)

// BoundToken is what SignToken puts in a bound token.
type BoundToken struct {
	Issuer    string // "": DefaultIssuer
	Audiences []string
	// Namespace, Name and UID are the ServiceAccount's.
	Namespace, Name, UID string
	// Pod or Secret is the object the token is bound to (at most one).
	Pod, Secret *BoundObject
	// IssuedAt is iat and nbf; the token expires TTL later.
	IssuedAt time.Time
	TTL      time.Duration
}

// SignToken makes a bound token (ServiceAccounts.CreateToken).
func SignToken(key *ecdsa.PrivateKey, t BoundToken) (string, error) {
	if t.Namespace == "" || t.Name == "" || t.UID == "" {
		return "", errors.New("service-account token: namespace, name and uid are required")
	}
	if len(t.Audiences) == 0 {
		return "", errors.New("service-account token: a bound token needs an audience")
	}
	if t.Pod != nil && t.Secret != nil {
		return "", errors.New("service-account token: bound to a pod or a secret, not both")
	}
	if t.TTL <= 0 {
		return "", errors.New("service-account token: the lifetime must be positive")
	}
	if t.Issuer == "" {
		t.Issuer = DefaultIssuer
	}
	return sign(key, saClaims{Iss: t.Issuer, Sub: user.ServiceAccountsUser + t.Namespace + ":" + t.Name, Aud: t.Audiences,
		Iat: t.IssuedAt.Unix(), Nbf: t.IssuedAt.Unix(), Exp: t.IssuedAt.Add(t.TTL).Unix(),
		K8s: &k8sClaims{Namespace: t.Namespace, ServiceAccount: &BoundObject{Name: t.Name, UID: t.UID}, Pod: t.Pod, Secret: t.Secret}})
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
	return sign(key, saClaims{Iss: issuer, Sub: user.ServiceAccountsUser + namespace + ":" + name, UID: uid,
		Iat: now.Unix(), Nbf: now.Unix(), Exp: now.Add(ttl).Unix()})
}

func sign(key *ecdsa.PrivateKey, claims saClaims) (string, error) {
	h, err := json.Marshal(jwtHeader{Alg: "ES256", Typ: "JWT", Kid: keyID(&key.PublicKey)})
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
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

// BoundObjectLookup finds the object a bound token names (kind "Pod" or
// "Secret") in namespace: its uid and, when it is being deleted, its
// deletionTimestamp; found is false when it does not exist. It must be
// cheap (an informer's store): it runs on every request of such a token.
type BoundObjectLookup func(ctx context.Context, kind, namespace, name string) (uid string, deletion time.Time, found bool, err error)

// boundObjectStaleness: a bound token stays valid this long after its
// object's deletionTimestamp (Kubernetes' staleness leeway, 60 s).
const boundObjectStaleness = time.Minute

// saTokens verifies service-account tokens. A verified token is kept until
// it expires (signature checks are slow); every use still checks the
// ServiceAccount exists with the token's uid.
type saTokens struct {
	pub    *ecdsa.PublicKey
	kid    string
	issuer string
	lookup ServiceAccountLookup
	// audiences are the apiserver's: a bound token must name one
	// (empty: the issuer).
	audiences []string
	// objects finds the objects bound tokens are bound to (nil: bound
	// tokens are refused).
	objects BoundObjectLookup

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
	// bound: the token has audiences and the kubernetes.io claim; kind
	// and object name what it is bound to ("" for none).
	bound   bool
	aud     []string
	kind    string
	object  BoundObject
	revoked atomic.Bool // the bound object is gone: refused for good
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
	if e.revoked.Load() {
		return nil, errInvalidated
	}
	if e.bound && !t.audienceMatches(e.aud) {
		return nil, apierrors.NewUnauthorized(fmt.Sprintf("Unauthorized: the service-account token is for audiences %q, none of them this apiserver's", e.aud))
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
	if e.kind != "" {
		if err := t.checkBound(ctx, e, now); err != nil {
			return nil, err
		}
	}
	return e.info, nil
}

var errInvalidated = apierrors.NewUnauthorized("Unauthorized: the service-account token has been invalidated: the object it is bound to no longer exists")

// checkBound checks the object a bound token is bound to still exists with
// its uid, and is not deleted past its grace period (plus a minute).
func (t *saTokens) checkBound(ctx context.Context, e *saEntry, now time.Time) error {
	if t.objects == nil {
		return apierrors.NewUnauthorized("Unauthorized: this apiserver does not check tokens bound to objects")
	}
	uid, deletion, found, err := t.objects(ctx, e.kind, e.namespace, e.object.Name)
	switch {
	case err != nil:
		return apierrors.NewServiceUnavailable(fmt.Sprintf("checking the %s %s/%s a token is bound to: %v", strings.ToLower(e.kind), e.namespace, e.object.Name, err))
	case !found || uid != e.object.UID:
		// A uid never comes back: the token is refused for good, without
		// another lookup.
		e.revoked.Store(true)
		return errInvalidated
	case !deletion.IsZero() && deletion.Before(now.Add(-boundObjectStaleness)):
		return errInvalidated
	}
	return nil
}

func (t *saTokens) audienceMatches(aud []string) bool {
	mine := t.audiences
	if len(mine) == 0 {
		mine = []string{t.issuer}
	}
	for _, a := range aud {
		if slices.Contains(mine, a) {
			return true
		}
	}
	return false
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
	uid := c.UID
	bound := c.K8s != nil
	if bound {
		if len(c.Aud) == 0 || c.K8s.ServiceAccount == nil || c.K8s.Namespace != ns || c.K8s.ServiceAccount.Name != name || (c.K8s.Pod != nil && c.K8s.Secret != nil) {
			return nil, apierrors.NewUnauthorized("Unauthorized: the bound service-account token's claims disagree (sub, aud, kubernetes.io)")
		}
		uid = c.K8s.ServiceAccount.UID
	}
	if !strings.HasPrefix(c.Sub, user.ServiceAccountsUser) || !ok || ns == "" || name == "" || uid == "" || c.Exp == 0 {
		return nil, apierrors.NewUnauthorized("Unauthorized: the service-account token lacks sub (system:serviceaccount:<namespace>:<name>), uid or exp")
	}
	e := &saEntry{
		info: &user.Info{
			Name:          c.Sub,
			UID:           uid,
			Groups:        []string{user.ServiceAccountsAll, user.ServiceAccountsNS + ns, user.AllAuthenticated},
			Authenticator: "serviceaccount",
		},
		namespace: ns, name: name, uid: uid,
		nbf: time.Unix(c.Nbf, 0), exp: time.Unix(c.Exp, 0),
		bound: bound, aud: c.Aud,
	}
	if bound {
		switch {
		case c.K8s.Pod != nil:
			e.kind, e.object = "Pod", *c.K8s.Pod
			e.info.Extra = map[string][]string{ExtraPodName: {c.K8s.Pod.Name}, ExtraPodUID: {c.K8s.Pod.UID}}
		case c.K8s.Secret != nil:
			e.kind, e.object = "Secret", *c.K8s.Secret
		}
		if e.kind != "" && (e.object.Name == "" || e.object.UID == "") {
			return nil, apierrors.NewUnauthorized("Unauthorized: the bound service-account token names its object without a name or uid")
		}
	}
	return e, nil
}
