// Package bootstraptoken is the form of Kubernetes' bootstrap tokens
// (kubeadm token): the token itself and the Secret that makes it one.
// The apiserver authenticates them (authn); skiff-apiserver token makes
// them; the controller-manager's tokencleaner deletes expired ones.
package bootstraptoken

import (
	"crypto/rand"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Bootstrap tokens, as Kubernetes' (kubeadm token): "<id>.<secret>", an id
// of 6 and a secret of 16 characters of [a-z0-9], kept as the Secret
// kube-system/bootstrap-token-<id> of type bootstrap.kubernetes.io/token
// with the keys below. A machine joining the cluster presents one as its
// bearer token and is user system:bootstrap:<id> in group
// system:bootstrappers (and the secret's auth-extra-groups): enough to
// ask for its certificate (a CertificateSigningRequest), nothing more. The
// token expires at its "expiration" (the controller-manager's tokencleaner
// then deletes the Secret); deleting the Secret revokes it.

const (
	// SecretType is the type of a bootstrap token's Secret.
	SecretType = "bootstrap.kubernetes.io/token"
	// SecretPrefix + id is its name, in namespace
	// kube-system.
	SecretPrefix = "bootstrap-token-"
	// Namespace is where the Secrets live.
	Namespace = "kube-system"

	// The Secret's keys.
	IDKey           = "token-id"
	SecretKey       = "token-secret"
	ExpirationKey   = "expiration"
	DescriptionKey  = "description"
	UsageAuthKey    = "usage-bootstrap-authentication"
	UsageSigningKey = "usage-bootstrap-signing"
	ExtraGroupsKey  = "auth-extra-groups"

	// UserPrefix + id is the user a bootstrap token
	// authenticates; every such user is in Group.
	UserPrefix = "system:bootstrap:"
	Group      = "system:bootstrappers"
	// DefaultNodeGroup is the extra group of tokens made for
	// joining nodes (kubeadm's default).
	DefaultNodeGroup = "system:bootstrappers:kubeadm:default-node-token"
	// ControlPlaneGroup is the extra group of tokens made for
	// joining control-plane members (token create --control-plane): a
	// member answers a join that presents one.
	ControlPlaneGroup = "system:bootstrappers:skiff:control-plane"
)

var bootstrapTokenRE = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)

// Parse splits a bootstrap token into its id and secret;
// ok is false when tok does not have a bootstrap token's form.
func Parse(tok string) (id, secret string, ok bool) {
	m := bootstrapTokenRE.FindStringSubmatch(tok)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// New makes a random token ("abcdef.0123456789abcdef").
func New() string {
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

// Options describe a token's Secret.
type Options struct {
	// TTL from now; 0: the token never expires.
	TTL         time.Duration
	Description string
	// ExtraGroups, each "system:bootstrappers:...".
	ExtraGroups []string
}

// Secret is the Secret that makes tok a bootstrap token.
func Secret(tok string, o Options, now time.Time) (*corev1.Secret, error) {
	id, secret, ok := Parse(tok)
	if !ok {
		return nil, fmt.Errorf("token %q: want [a-z0-9]{6}.[a-z0-9]{16}", tok)
	}
	for _, g := range o.ExtraGroups {
		if !strings.HasPrefix(g, Group+":") {
			return nil, fmt.Errorf("group %q: a bootstrap token's extra groups start with %q", g, Group+":")
		}
	}
	data := map[string][]byte{
		IDKey:           []byte(id),
		SecretKey:       []byte(secret),
		UsageAuthKey:    []byte("true"),
		UsageSigningKey: []byte("true"),
	}
	if o.TTL > 0 {
		data[ExpirationKey] = []byte(now.Add(o.TTL).UTC().Format(time.RFC3339))
	}
	if o.Description != "" {
		data[DescriptionKey] = []byte(o.Description)
	}
	if len(o.ExtraGroups) > 0 {
		data[ExtraGroupsKey] = []byte(strings.Join(o.ExtraGroups, ","))
	}
	return &corev1.Secret{
		Metadata: &metav1.ObjectMeta{Namespace: Namespace, Name: SecretPrefix + id},
		Type:     SecretType,
		Data:     data,
	}, nil
}

// Expired says whether the token's Secret is past its
// expiration (an unreadable one counts as expired).
func Expired(s *corev1.Secret, now time.Time) bool {
	t, ok := Expiration(s)
	return ok && !now.Before(t)
}

// Expiration is when the token of s expires; ok is false when it never
// does. An expiration that does not parse is the zero time: long past.
func Expiration(s *corev1.Secret) (t time.Time, ok bool) {
	exp, ok := s.GetData()[ExpirationKey]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, string(exp))
	if err != nil {
		return time.Time{}, true
	}
	return t, true
}
