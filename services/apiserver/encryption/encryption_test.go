package encryption

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/crypto/nacl/secretbox"
)

func key(b byte, n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, n)) }

func mustSet(t *testing.T, yaml string) *Set {
	t.Helper()
	c, err := Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const etcdKey = "/registry/core/secrets/ns/a"

// TestKubernetesFormat opens values with the standard library as
// Kubernetes' transformers would: aesgcm's 12-byte nonce and the etcd key
// as additional data; secretbox's 24-byte nonce.
func TestKubernetesFormat(t *testing.T) {
	s := mustSet(t, `
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aesgcm:
      keys: [{name: key1, secret: `+key(1, 32)+`}]
- resources: [configmaps]
  providers:
  - secretbox:
      keys: [{name: sb, secret: `+key(2, 32)+`}]
`)
	plain := []byte("skf\x00the object")
	enc, err := s.For("", "secrets").ToStorage(etcdKey, plain)
	if err != nil {
		t.Fatal(err)
	}
	rest, ok := bytes.CutPrefix(enc, []byte("k8s:enc:aesgcm:v1:key1:"))
	if !ok {
		t.Fatalf("stored %q", enc)
	}
	block, _ := aes.NewCipher(bytes.Repeat([]byte{1}, 32))
	aead, _ := cipher.NewGCM(block)
	got, err := aead.Open(nil, rest[:12], rest[12:], []byte(etcdKey))
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("GCM open: %q %v", got, err)
	}
	// Another key's AD does not open it: a value moved to another key is refused.
	if _, _, err := s.For("", "secrets").FromStorage("/registry/core/secrets/ns/b", enc); err == nil {
		t.Fatal("a value moved to another etcd key decrypted")
	}

	enc, err = s.For("", "configmaps").ToStorage(etcdKey, plain)
	if err != nil {
		t.Fatal(err)
	}
	rest, ok = bytes.CutPrefix(enc, []byte("k8s:enc:secretbox:v1:sb:"))
	if !ok {
		t.Fatalf("stored %q", enc)
	}
	var nonce [24]byte
	var k [32]byte
	copy(nonce[:], rest)
	copy(k[:], bytes.Repeat([]byte{2}, 32))
	if got, ok := secretbox.Open(nil, rest[24:], &nonce, &k); !ok || !bytes.Equal(got, plain) {
		t.Fatalf("secretbox open: %q %v", got, ok)
	}
	if s.For("", "pods") != nil || s.For("apps", "secrets") != nil {
		t.Fatal("a resource no rule names is transformed")
	}
}

func TestReadsByPrefix(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	cfg := func(providers string) *Transformer {
		c, err := Parse([]byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: ['*.*']\n  providers:\n" + providers))
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(c, m)
		if err != nil {
			t.Fatal(err)
		}
		return s.For("apps", "deployments")
	}
	k1 := "  - aesgcm: {keys: [{name: key1, secret: " + key(1, 16) + "}]}\n"
	k2 := "  - aesgcm: {keys: [{name: key2, secret: " + key(2, 24) + "}]}\n"
	sb := "  - secretbox: {keys: [{name: sb, secret: " + key(3, 32) + "}]}\n"
	id := "  - identity: {}\n"
	plain := []byte("skf\x00value")

	old, _ := cfg(k1).ToStorage(etcdKey, plain)
	boxed, _ := cfg(sb).ToStorage(etcdKey, plain)
	both := cfg(k2 + k1 + sb + id)
	for _, c := range []struct {
		stored []byte
		stale  bool
	}{{old, true}, {boxed, true}, {plain, true}} {
		got, stale, err := both.FromStorage(etcdKey, c.stored)
		if err != nil || !bytes.Equal(got, plain) || stale != c.stale {
			t.Fatalf("read %q: %q stale=%v %v", c.stored[:10], got, stale, err)
		}
	}
	fresh, _ := both.ToStorage(etcdKey, plain)
	if !bytes.HasPrefix(fresh, []byte("k8s:enc:aesgcm:v1:key2:")) {
		t.Fatalf("the first key did not write: %q", fresh[:24])
	}
	if _, stale, err := both.FromStorage(etcdKey, fresh); err != nil || stale {
		t.Fatalf("fresh value: stale=%v %v", stale, err)
	}
	// Identity first writes plain and still reads encrypted values.
	idFirst := cfg(id + k1)
	if w, _ := idFirst.ToStorage(etcdKey, plain); !bytes.Equal(w, plain) {
		t.Fatalf("identity wrote %q", w)
	}
	if got, _, err := idFirst.FromStorage(etcdKey, old); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("identity+aesgcm read: %q %v", got, err)
	}
	// Without key1: a clear error naming the key, nothing of the value.
	_, _, err := cfg(k2+id).FromStorage(etcdKey, old)
	if err == nil || !strings.Contains(err.Error(), `aesgcm key "key1"`) || !strings.Contains(err.Error(), "no matching prefix found") {
		t.Fatalf("read without its key: %v", err)
	}
	// A key of the same name but other bytes fails to decrypt.
	other := cfg("  - aesgcm: {keys: [{name: key1, secret: " + key(9, 16) + "}]}\n")
	if _, _, err := other.FromStorage(etcdKey, old); err == nil || !strings.Contains(err.Error(), "does not decrypt") {
		t.Fatalf("wrong key: %v", err)
	}
	if n := testutil.ToFloat64(m.ops.WithLabelValues("deployments.apps", "from_storage", "k8s:enc:aesgcm:v1:key1:", "OK")); n < 2 {
		t.Fatalf("from_storage OK count %v", n)
	}
	if n := testutil.ToFloat64(m.ops.WithLabelValues("deployments.apps", "from_storage", "k8s:enc:aesgcm:v1:key1:", "Unknown")); n != 1 {
		t.Fatalf("from_storage Unknown count %v", n)
	}
}

func TestMatching(t *testing.T) {
	for _, c := range []struct {
		pat, group, resource string
		want                 bool
	}{
		{"secrets", "", "secrets", true},
		{"secrets", "apps", "secrets", false},
		{"deployments.apps", "apps", "deployments", true},
		{"*.apps", "apps", "replicasets", true},
		{"*.apps", "", "secrets", false},
		{"*.", "", "configmaps", true},
		{"*.", "apps", "deployments", false},
		{"*.*", "rbac.authorization.k8s.io", "roles", true},
	} {
		if got := matches(c.pat, c.group, c.resource); got != c.want {
			t.Errorf("matches(%q, %q, %q) = %v", c.pat, c.group, c.resource, got)
		}
	}
}

func TestValidate(t *testing.T) {
	head := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n"
	for _, c := range []struct{ yaml, want string }{
		{"apiVersion: v1\nkind: EncryptionConfiguration\nresources: [{resources: [secrets], providers: [{identity: {}}]}]", "apiVersion: Invalid value"},
		{head + "resources: []", "resources: Required value"},
		{head + "resources: [{resources: [secrets]}]", "resources[0].providers: Required value"},
		{head + "resources: [{resources: [secrets], providers: [{}]}]", "resources[0].providers[0]: Invalid value: provider does not contain"},
		{head + "resources: [{resources: [secrets], providers: [{identity: {}, aesgcm: {keys: [{name: a, secret: " + key(1, 16) + "}]}}]}]", "more than one provider"},
		{head + "resources: [{resources: [secrets], providers: [{aesgcm: {keys: []}}]}]", "resources[0].providers[0].aesgcm.keys: Required value"},
		{head + "resources: [{resources: [secrets], providers: [{aesgcm: {keys: [{name: a, secret: " + key(7, 5) + "}]}}]}]", "resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5"},
		{head + "resources: [{resources: [secrets], providers: [{secretbox: {keys: [{name: a, secret: " + key(7, 16) + "}]}}]}]", "resources[0].providers[0].secretbox.keys[0].secret: Invalid value"},
		{head + "resources: [{resources: [secrets], providers: [{aesgcm: {keys: [{name: 'a:b', secret: " + key(1, 16) + "}]}}]}]", "keys[0].name: Invalid value"},
		{head + "resources: [{resources: [secrets], providers: [{aesgcm: {keys: [{name: a, secret: '!!'}]}}]}]", "keys[0].secret: Invalid value: \"REDACTED\": secrets must be base64 encoded"},
		{head + "resources: [{resources: [secrets, secrets], providers: [{identity: {}}]}]", "resources[0].resources[1]: Duplicate value"},
		{head + "resources: [{resources: [secrets], providers: [{kms: {}}]}]", "resources[0].providers[0].kms: Unsupported value"},
		{head + "resources: [{resources: [secrets], providers: [{identity: {}}], extra: 1}]", "unknown field"},
	} {
		_, err := Parse([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\n  got %v\n  want %q", c.yaml, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), key(1, 16)) {
			t.Errorf("error shows a key: %v", err)
		}
	}
}

// BenchmarkTransform: the cost encryption adds to a write and a read of a
// 1 KiB value.
func BenchmarkTransform(b *testing.B) {
	c, err := Parse([]byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aesgcm: {keys: [{name: k, secret: " + key(1, 32) + "}]}\n- resources: [configmaps]\n  providers:\n  - secretbox: {keys: [{name: k, secret: " + key(1, 32) + "}]}\n"))
	if err != nil {
		b.Fatal(err)
	}
	s, _ := New(c, NewMetrics(nil))
	plain := bytes.Repeat([]byte("x"), 1024)
	for _, r := range []string{"secrets", "configmaps"} {
		t := s.For("", r)
		stored, _ := t.ToStorage(etcdKey, plain)
		b.Run(r+"/to_storage", func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				_, _ = t.ToStorage(etcdKey, plain)
			}
		})
		b.Run(r+"/from_storage", func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				_, _, _ = t.FromStorage(etcdKey, stored)
			}
		})
	}
}
