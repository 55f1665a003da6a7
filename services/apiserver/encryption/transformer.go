package encryption

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/nacl/secretbox"
)

// Prefixes of the stored forms (each followed by the key's name and ':').
const (
	AESGCMPrefix    = "k8s:enc:aesgcm:v1:"
	SecretboxPrefix = "k8s:enc:secretbox:v1:"
	encPrefix       = "k8s:enc:"
)

// Metrics counts transformations as Kubernetes'
// apiserver_storage_transformation_operations_total.
type Metrics struct {
	ops *prometheus.CounterVec
}

// NewMetrics registers the metric on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{ops: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_storage_transformation_operations_total",
		Help: "Total number of transformations, by resource, transformation type (to_storage, from_storage), transformer prefix and status (OK, Unknown).",
	}, []string{"resource", "transformation_type", "transformer_prefix", "status"})}
	if reg != nil {
		reg.MustRegister(m.ops)
	}
	return m
}

func (m *Metrics) record(resource, typ, prefix string, err error) {
	if m == nil {
		return
	}
	status := "OK"
	if err != nil {
		status = "Unknown"
	}
	m.ops.WithLabelValues(resource, typ, prefix, status).Inc()
}

// Set is a loaded configuration: a Transformer per matched resource.
type Set struct {
	rules   []rule
	metrics *Metrics
}

type rule struct {
	resources []string
	providers []*provider
}

// New builds the providers of a checked configuration.
func New(c *Configuration, m *Metrics) (*Set, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &Set{metrics: m}
	for _, rc := range c.Resources {
		r := rule{resources: rc.Resources}
		for _, pc := range rc.Providers {
			switch {
			case pc.Identity != nil:
				r.providers = append(r.providers, identityProvider())
			case pc.AESGCM != nil:
				for _, k := range pc.AESGCM.Keys {
					p, err := aesgcmProvider(k)
					if err != nil {
						return nil, err
					}
					r.providers = append(r.providers, p)
				}
			case pc.Secretbox != nil:
				for _, k := range pc.Secretbox.Keys {
					p, err := secretboxProvider(k)
					if err != nil {
						return nil, err
					}
					r.providers = append(r.providers, p)
				}
			}
		}
		s.rules = append(s.rules, r)
	}
	return s, nil
}

// For returns the Transformer of a resource of an API group ("" is the
// core group), or nil when no rule names it (stored plain). Rules are
// tried in the file's order; within one, "resource.group" (just
// "resource" in the core group), "*.group" ("*." for the core group) and
// "*.*" match.
func (s *Set) For(group, resource string) *Transformer {
	if s == nil {
		return nil
	}
	for _, r := range s.rules {
		for _, pat := range r.resources {
			if matches(pat, group, resource) {
				name := resource
				if group != "" {
					name += "." + group
				}
				return &Transformer{resource: name, providers: r.providers, metrics: s.metrics}
			}
		}
	}
	return nil
}

func matches(pat, group, resource string) bool {
	if pat == "*.*" {
		return true
	}
	if g, ok := strings.CutPrefix(pat, "*."); ok {
		return g == group
	}
	if group == "" {
		return pat == resource
	}
	return pat == resource+"."+group
}

// Transformer encrypts and decrypts one resource's stored values.
type Transformer struct {
	resource  string
	providers []*provider // the first writes
	metrics   *Metrics
}

// ToStorage encrypts plain (the encoded object) stored under key.
func (t *Transformer) ToStorage(key string, plain []byte) ([]byte, error) {
	p := t.providers[0]
	out, err := p.seal(key, plain)
	t.metrics.record(t.resource, "to_storage", p.label, err)
	if err != nil {
		return nil, fmt.Errorf("%s: encrypting with %s: %w", t.resource, p.label, err)
	}
	return out, nil
}

// FromStorage decrypts a stored value of key with the provider its prefix
// names; stale says it was not written with the first provider (a
// rewrite would re-encrypt it). Errors never carry the value.
func (t *Transformer) FromStorage(key string, stored []byte) (plain []byte, stale bool, err error) {
	for i, p := range t.providers {
		if p.prefix == nil {
			if bytes.HasPrefix(stored, []byte(encPrefix)) {
				continue // identity does not read encrypted values
			}
		} else if !bytes.HasPrefix(stored, p.prefix) {
			continue
		}
		plain, err := p.open(key, stored[len(p.prefix):])
		t.metrics.record(t.resource, "from_storage", p.label, err)
		if err != nil {
			return nil, false, fmt.Errorf("%s: decrypting %s with %s: %w", t.resource, key, p.label, err)
		}
		return plain, i != 0, nil
	}
	err = fmt.Errorf("%s: %s: no matching prefix found: the value is %s, and no configured provider reads it (was its key removed from --encryption-provider-config?)", t.resource, key, describe(stored))
	t.metrics.record(t.resource, "from_storage", "unknown", err)
	return nil, false, err
}

// describe names how a value is stored without showing any of it beyond
// an encryption prefix and key name.
func describe(stored []byte) string {
	s := string(stored[:min(len(stored), 128)])
	if rest, ok := strings.CutPrefix(s, encPrefix); ok {
		// k8s:enc:<provider>:v1:<name>:
		parts := strings.SplitN(rest, ":", 4)
		if len(parts) == 4 {
			return fmt.Sprintf("encrypted by %s key %q", parts[0], parts[2])
		}
		return "encrypted (malformed prefix)"
	}
	return "not encrypted"
}

// provider is one key of a provider (or identity): its prefix and
// functions; open gets the value without the prefix.
type provider struct {
	prefix []byte // nil: identity
	label  string // the metrics' transformer_prefix
	seal   func(key string, plain []byte) ([]byte, error)
	open   func(key string, data []byte) ([]byte, error)
}

func identityProvider() *provider {
	return &provider{
		label: "identity",
		seal:  func(_ string, plain []byte) ([]byte, error) { return plain, nil },
		open:  func(_ string, data []byte) ([]byte, error) { return data, nil },
	}
}

var errDecrypt = errors.New("the value does not decrypt with this key (a different key of the same name, or a corrupted value)")

// aesgcmProvider seals as Kubernetes' GCM transformer: a random 12-byte
// nonce, then the sealed value authenticated with the etcd key.
func aesgcmProvider(k Key) (*provider, error) {
	secret, err := base64.StdEncoding.DecodeString(k.Secret)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(secret)
	if err != nil {
		return nil, fmt.Errorf("aesgcm key %q: %w", k.Name, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("aesgcm key %q: %w", k.Name, err)
	}
	prefix := []byte(AESGCMPrefix + k.Name + ":")
	ns := aead.NonceSize()
	return &provider{
		prefix: prefix,
		label:  string(prefix),
		seal: func(key string, plain []byte) ([]byte, error) {
			out := make([]byte, len(prefix)+ns, len(prefix)+ns+len(plain)+aead.Overhead())
			copy(out, prefix)
			nonce := out[len(prefix):]
			if _, err := rand.Read(nonce); err != nil {
				return nil, err
			}
			return aead.Seal(out, nonce, plain, []byte(key)), nil
		},
		open: func(key string, data []byte) ([]byte, error) {
			if len(data) < ns {
				return nil, errors.New("the value is shorter than a nonce")
			}
			plain, err := aead.Open(nil, data[:ns], data[ns:], []byte(key))
			if err != nil {
				return nil, errDecrypt
			}
			return plain, nil
		},
	}, nil
}

// secretboxProvider seals as Kubernetes' secretbox transformer: a random
// 24-byte nonce, then the sealed value.
func secretboxProvider(k Key) (*provider, error) {
	secret, err := base64.StdEncoding.DecodeString(k.Secret)
	if err != nil {
		return nil, err
	}
	if len(secret) != 32 {
		return nil, fmt.Errorf("secretbox key %q: %d bytes, want 32", k.Name, len(secret))
	}
	var sk [32]byte
	copy(sk[:], secret)
	prefix := []byte(SecretboxPrefix + k.Name + ":")
	const ns = 24
	return &provider{
		prefix: prefix,
		label:  string(prefix),
		seal: func(_ string, plain []byte) ([]byte, error) {
			out := make([]byte, len(prefix)+ns, len(prefix)+ns+len(plain)+secretbox.Overhead)
			copy(out, prefix)
			var nonce [ns]byte
			if _, err := rand.Read(nonce[:]); err != nil {
				return nil, err
			}
			copy(out[len(prefix):], nonce[:])
			return secretbox.Seal(out, plain, &nonce, &sk), nil
		},
		open: func(_ string, data []byte) ([]byte, error) {
			if len(data) < ns {
				return nil, errors.New("the value is shorter than a nonce")
			}
			var nonce [ns]byte
			copy(nonce[:], data[:ns])
			plain, ok := secretbox.Open(nil, data[ns:], &nonce, &sk)
			if !ok {
				return nil, errDecrypt
			}
			return plain, nil
		},
	}, nil
}
