package integration

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/encryption"
)

const secretMark = "s3cr3t-VALUE-zq81x"

func gcmKey(name string, b byte) encryption.Key {
	return encryption.Key{Name: name, Secret: base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32))}
}

// encConfig encrypts secrets with providers in order (nil: identity).
func encConfig(keys ...*encryption.Key) *encryption.Configuration {
	rc := encryption.ResourceConfiguration{Resources: []string{"secrets"}}
	for _, k := range keys {
		if k == nil {
			rc.Providers = append(rc.Providers, encryption.ProviderConfiguration{Identity: &struct{}{}})
			continue
		}
		rc.Providers = append(rc.Providers, encryption.ProviderConfiguration{AESGCM: &encryption.KeysConfiguration{Keys: []encryption.Key{*k}}})
	}
	return &encryption.Configuration{APIVersion: encryption.APIVersion, Kind: encryption.Kind, Resources: []encryption.ResourceConfiguration{rc}}
}

// startOn starts an apiserver on the etcd data in dir with c (nil: none).
func startOn(t *testing.T, dir string, c *encryption.Configuration) *apiservertest.Server {
	t.Helper()
	return apiservertest.Start(t, apiservertest.WithConfig(func(cfg *apiserver.Config) {
		cfg.DataDir = dir
		cfg.Encryption = c
	}))
}

func storedSecret(t *testing.T, s *apiservertest.Server, ns, name string) []byte {
	t.Helper()
	resp, err := s.EtcdClient().Get(testContext(t), "/registry/core/secrets/"+ns+"/"+name)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get: %v %v", resp, err)
	}
	return resp.Kvs[0].Value
}

func createSecret(t *testing.T, s *apiservertest.Server, name string) {
	t.Helper()
	_, err := client.Secrets(s.Conn).Create(testContext(t), &corev1.Secret{
		Metadata:   &metav1.ObjectMeta{Namespace: "default", Name: name},
		StringData: map[string]string{"password": secretMark + name},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readAll checks that every named Secret reads back, by Get (etcd),
// List (watch cache) and a watch from "0".
func readAll(t *testing.T, s *apiservertest.Server, names ...string) {
	t.Helper()
	ctx := testContext(t)
	sc := client.Secrets(s.Conn)
	for _, n := range names {
		got, err := sc.Get(ctx, "default", n)
		if err != nil {
			t.Fatalf("get %s: %v", n, err)
		}
		if string(got.Data["password"]) != secretMark+n || got.StringData != nil || got.Type != "Opaque" {
			t.Fatalf("get %s: %v", n, got)
		}
	}
	l, err := sc.List(ctx, &metav1.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, it := range l.Items {
		seen[it.Metadata.Name] = string(it.Data["password"])
	}
	for _, n := range names {
		if seen[n] != secretMark+n {
			t.Fatalf("list: %s is %q", n, seen[n])
		}
	}
}

// TestEncryptionAtRest: secrets are stored as Kubernetes' aesgcm values
// (nothing of the value in etcd, plain or base64) and read back through
// every path; keys rotate by listing the new key first, rewriting every
// Secret, then dropping the old key.
func TestEncryptionAtRest(t *testing.T) {
	dir := t.TempDir()
	key1, key2 := gcmKey("key1", 1), gcmKey("key2", 2)

	s := startOn(t, dir, encConfig(&key1))
	createSecret(t, s, "a")
	createSecret(t, s, "b")
	stored := storedSecret(t, s, "default", "a")
	if !bytes.HasPrefix(stored, []byte("k8s:enc:aesgcm:v1:key1:")) {
		t.Fatalf("stored value starts %q", stored[:min(len(stored), 30)])
	}
	for _, leak := range []string{secretMark, base64.StdEncoding.EncodeToString([]byte(secretMark + "a")), "password"} {
		if bytes.Contains(stored, []byte(leak)) {
			t.Fatalf("etcd holds %q in the clear", leak)
		}
	}
	// ConfigMaps are not named by the configuration: stored plain.
	if _, err := client.ConfigMaps(s.Conn).Create(testContext(t), &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "c"}, Data: map[string]string{"k": "plain-value"}}); err != nil {
		t.Fatal(err)
	}
	if resp, err := s.EtcdClient().Get(testContext(t), "/registry/core/configmaps/default/c"); err != nil || !bytes.Contains(resp.Kvs[0].Value, []byte("plain-value")) {
		t.Fatalf("configmap: %v %v", resp, err)
	}
	readAll(t, s, "a", "b")
	mf := scrape(t, s)["apiserver_storage_transformation_operations_total"]
	if got := series(mf, map[string]string{"resource": "secrets", "status": "OK", "transformation_type": "to_storage", "transformer_prefix": "k8s:enc:aesgcm:v1:key1:"}); len(got) != 1 {
		t.Fatalf("no to_storage series in %v", mf)
	}
	s.Stop()

	// Rotation: key2 writes, key1 still reads; rewrite every Secret.
	s = startOn(t, dir, encConfig(&key2, &key1))
	readAll(t, s, "a", "b")
	ctx := testContext(t)
	l, err := client.Secrets(s.Conn).List(ctx, &metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range l.Items {
		if _, err := client.Secrets(s.Conn).Update(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"a", "b"} {
		if v := storedSecret(t, s, "default", n); !bytes.HasPrefix(v, []byte("k8s:enc:aesgcm:v1:key2:")) {
			t.Fatalf("%s not rewritten with key2: %q", n, v[:30])
		}
	}
	s.Stop()

	s = startOn(t, dir, encConfig(&key2))
	readAll(t, s, "a", "b")
	s.Stop()

	// The old key alone reads nothing, and says why.
	s = startOn(t, dir, encConfig(&key1))
	_, err = client.Secrets(s.Conn).Get(testContext(t), "default", "a")
	if err == nil || !strings.Contains(err.Error(), "no matching prefix found") || !strings.Contains(err.Error(), `aesgcm key "key2"`) {
		t.Fatalf("get with only the old key: %v", err)
	}
	if strings.Contains(err.Error(), secretMark) {
		t.Fatalf("error shows the value: %v", err)
	}
	s.Stop()
}

// TestEncryptionIdentityFirst: with identity first and aesgcm second,
// values written before encryption and values written encrypted both read.
func TestEncryptionIdentityFirst(t *testing.T) {
	dir := t.TempDir()
	key1 := gcmKey("key1", 1)
	s := startOn(t, dir, nil)
	createSecret(t, s, "plain")
	if v := storedSecret(t, s, "default", "plain"); !bytes.Contains(v, []byte(secretMark)) {
		t.Fatal("without encryption the value is not stored plain")
	}
	s.Stop()
	s = startOn(t, dir, encConfig(&key1))
	createSecret(t, s, "enc")
	s.Stop()
	s = startOn(t, dir, encConfig(nil, &key1))
	readAll(t, s, "plain", "enc")
	createSecret(t, s, "new")
	if v := storedSecret(t, s, "default", "new"); !bytes.Contains(v, []byte(secretMark)) {
		t.Fatal("identity first did not write plain")
	}
	s.Stop()
}

// TestEncryptionBadConfig: the server refuses to start, naming the field.
func TestEncryptionBadConfig(t *testing.T) {
	c := encConfig(&encryption.Key{Name: "k", Secret: "c2hvcnQ="})
	_, err := apiservertest.StartConfig(apiserver.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Encryption: c, EtcdUnsafeNoFsync: true})
	if err == nil || !strings.Contains(err.Error(), "resources[0].providers[0].aesgcm.keys[0].secret") {
		t.Fatalf("start with a 5-byte key: %v", err)
	}
	_, err = apiservertest.StartConfig(apiserver.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", EncryptionProviderConfig: "/nonexistent/enc.yaml", EtcdUnsafeNoFsync: true})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/enc.yaml") {
		t.Fatalf("start with a missing file: %v", err)
	}
}
