package authn

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"regexp"
	"strings"
	"time"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/user"
)

// Bootstrap tokens, as Kubernetes' (kubeadm token): "<id>.<secret>", an id
// of 6 and a secret of 16 characters of [a-z0-9], kept as the Secret
// kube-system/bootstrap-token-<id> of type bootstrap.kubernetes.io/token
// with the keys below. A machine joining the cluster presents one as its
// bearer token and is user system:bootstrap:<id> in group
// system:bootstrappers (and the secret's auth-extra-groups): enough to
// ask for its certificate (a CertificateSigningRequest), nothing more. The
// token expires at its "expiration"; deleting the Secret revokes it.

const (
	// BootstrapTokenSecretType is the type of a bootstrap token's Secret.
	BootstrapTokenSecretType = "bootstrap.kubernetes.io/token"
	// BootstrapTokenSecretPrefix + id is its name, in namespace
	// kube-system.
	BootstrapTokenSecretPrefix = "bootstrap-token-"
	// BootstrapTokenNamespace is where the Secrets live.
	BootstrapTokenNamespace = "kube-system"

	// The Secret's keys.
	BootstrapTokenIDKey           = "token-id"
	BootstrapTokenSecretKey       = "token-secret"
	BootstrapTokenExpirationKey   = "expiration"
	BootstrapTokenDescriptionKey  = "description"
	BootstrapTokenUsageAuthKey    = "usage-bootstrap-authentication"
	BootstrapTokenUsageSigningKey = "usage-bootstrap-signing"
	BootstrapTokenExtraGroupsKey  = "auth-extra-groups"

	// BootstrapUserPrefix + id is the user a bootstrap token
	// authenticates; every such user is in BootstrapGroup.
	BootstrapUserPrefix = "system:bootstrap:"
	BootstrapGroup      = "system:bootstrappers"
	// BootstrapDefaultNodeGroup is the extra group of tokens made for
	// joining nodes (kubeadm's default).
	BootstrapDefaultNodeGroup = "system:bootstrappers:kubeadm:default-node-token"
	// BootstrapControlPlaneGroup is the extra group of tokens made for
	// joining control-plane members (token create --control-plane): a
	// member answers a join that presents one.
	BootstrapControlPlaneGroup = "system:bootstrappers:skiff:control-plane"
)

var bootstrapTokenRE = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)

// ParseBootstrapToken splits a bootstrap token into its id and secret;
// ok is false when tok does not have a bootstrap token's form.
func ParseBootstrapToken(tok string) (id, secret string, ok bool) {
	m := bootstrapTokenRE.FindStringSubmatch(tok)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// NewBootstrapToken makes a random token ("abcdef.0123456789abcdef").
func NewBootstrapToken() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 22)
	for i := range b {
		// rand.Text would do but has another alphabet; 252 = 7*36 keeps
		// the choice uniform.
		for {
			var c [1]byte
			_, _ = rand.Read(c[:])
			if c[0] < 252 {
				b[i] = alphabet[int(c[0])%len(alphabet)]
				break
			}
		}
	}
	return string(b[:6]) + "." + string(b[6:])
}

// BootstrapTokenOptions describe a token's Secret.
type BootstrapTokenOptions struct {
	// TTL from now; 0: the token never expires.
	TTL         time.Duration
	Description string
	// ExtraGroups, each "system:bootstrappers:...".
	ExtraGroups []string
}

// BootstrapTokenSecret is the Secret that makes tok a bootstrap token.
func BootstrapTokenSecret(tok string, o BootstrapTokenOptions, now time.Time) (*corev1.Secret, error) {
	id, secret, ok := ParseBootstrapToken(tok)
	if !ok {
		return nil, fmt.Errorf("token %q: want [a-z0-9]{6}.[a-z0-9]{16}", tok)
	}
	for _, g := range o.ExtraGroups {
		if !strings.HasPrefix(g, BootstrapGroup+":") {
			return nil, fmt.Errorf("group %q: a bootstrap token's extra groups start with %q", g, BootstrapGroup+":")
		}
	}
	data := map[string][]byte{
		BootstrapTokenIDKey:           []byte(id),
		BootstrapTokenSecretKey:       []byte(secret),
		BootstrapTokenUsageAuthKey:    []byte("true"),
		BootstrapTokenUsageSigningKey: []byte("true"),
	}
	if o.TTL > 0 {
		data[BootstrapTokenExpirationKey] = []byte(now.Add(o.TTL).UTC().Format(time.RFC3339))
	}
	if o.Description != "" {
		data[BootstrapTokenDescriptionKey] = []byte(o.Description)
	}
	if len(o.ExtraGroups) > 0 {
		data[BootstrapTokenExtraGroupsKey] = []byte(strings.Join(o.ExtraGroups, ","))
	}
	return &corev1.Secret{
		Metadata: &metav1.ObjectMeta{Namespace: BootstrapTokenNamespace, Name: BootstrapTokenSecretPrefix + id},
		Type:     BootstrapTokenSecretType,
		Data:     data,
	}, nil
}

// SecretLookup reads a Secret; ok is false when it does not exist.
type SecretLookup func(ctx context.Context, namespace, name string) (s *corev1.Secret, ok bool, err error)

// errBootstrapToken is every refusal of a bootstrap token: as Kubernetes,
// it does not say which check failed (the id is in the log line the
// request's failure makes, never the secret).
var errBootstrapToken = apierrors.NewUnauthorized("Unauthorized: the bootstrap token is not known, expired, revoked or not for authentication")

// BootstrapTokenUser checks a bootstrap token against its Secret and says
// whom it authenticates (a control-plane member checks a join's so).
func BootstrapTokenUser(ctx context.Context, lookup SecretLookup, tok string, now time.Time) (*user.Info, error) {
	if _, _, ok := ParseBootstrapToken(tok); !ok {
		return nil, errBootstrapToken
	}
	return bootstrapAuthenticate(ctx, lookup, tok, now)
}

// bootstrapAuthenticate checks a bootstrap token against its Secret.
func bootstrapAuthenticate(ctx context.Context, lookup SecretLookup, tok string, now time.Time) (*user.Info, error) {
	id, secret, _ := ParseBootstrapToken(tok)
	s, ok, err := lookup(ctx, BootstrapTokenNamespace, BootstrapTokenSecretPrefix+id)
	if err != nil {
		return nil, apierrors.NewInternal(fmt.Errorf("reading bootstrap token %s: %w", id, err))
	}
	if !ok || s.GetType() != BootstrapTokenSecretType || s.GetMetadata().GetDeletionTimestamp() != nil {
		return nil, errBootstrapToken
	}
	d := s.GetData()
	if string(d[BootstrapTokenIDKey]) != id || subtle.ConstantTimeCompare(d[BootstrapTokenSecretKey], []byte(secret)) != 1 ||
		string(d[BootstrapTokenUsageAuthKey]) != "true" || BootstrapTokenExpired(s, now) {
		return nil, errBootstrapToken
	}
	groups := []string{BootstrapGroup}
	for _, g := range strings.Split(string(d[BootstrapTokenExtraGroupsKey]), ",") {
		if g = strings.TrimSpace(g); strings.HasPrefix(g, BootstrapGroup+":") {
			groups = append(groups, g)
		}
	}
	return &user.Info{Name: BootstrapUserPrefix + id, Groups: append(groups, user.AllAuthenticated), Authenticator: "bootstrap-token"}, nil
}

// BootstrapTokenExpired says whether the token's Secret is past its
// expiration (an unreadable one counts as expired).
func BootstrapTokenExpired(s *corev1.Secret, now time.Time) bool {
	exp, ok := s.GetData()[BootstrapTokenExpirationKey]
	if !ok {
		return false
	}
	t, err := time.Parse(time.RFC3339, string(exp))
	return err != nil || !now.Before(t)
}
