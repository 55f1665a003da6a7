package config

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, []byte("PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config")
	src := `apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster: {server: 127.0.0.1:6443}
- name: prod
  cluster: {server: prod:6443, certificate-authority: ` + ca + `}
- name: skip
  cluster: {server: "skip:6443", insecure-skip-tls-verify: true}
- name: inline
  cluster: {server: "https://inline:6443", certificate-authority-data: ` + base64.StdEncoding.EncodeToString([]byte("PEM2")) + `}
users:
- name: alice
  user: {token: t0k}
- name: carol
  user: {client-certificate-data: ` + base64.StdEncoding.EncodeToString([]byte("CERT")) + `, client-key-data: ` + base64.StdEncoding.EncodeToString([]byte("KEY")) + `}
contexts:
- name: dev
  context: {cluster: dev, namespace: team-a}
- name: prod
  context: {cluster: prod, user: alice}
- name: inline
  context: {cluster: inline}
`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		o    Overrides
		want Resolved
	}{
		{"the current context", Overrides{}, Resolved{Context: "dev", Server: "127.0.0.1:6443", Namespace: "team-a"}},
		{"flags override", Overrides{Server: "other:1", Token: "x", Namespace: "b"}, Resolved{Context: "dev", Server: "other:1", Token: "x", Namespace: "b", NamespaceExplicit: true}},
		{"a CA means TLS", Overrides{Context: "prod"}, Resolved{Context: "prod", Server: "prod:6443", TLS: true, CA: []byte("PEM"), Token: "t0k", Namespace: "default"}},
		{"https and inline data", Overrides{Context: "inline"}, Resolved{Context: "inline", Server: "inline:6443", TLS: true, CA: []byte("PEM2"), Namespace: "default"}},
		{"insecure-skip-tls-verify still means TLS", Overrides{Cluster: "skip"}, Resolved{Context: "dev", Server: "skip:6443", TLS: true, Namespace: "team-a"}},
		{"a client certificate means TLS", Overrides{User: "carol"}, Resolved{Context: "dev", Server: "127.0.0.1:6443", TLS: true, Namespace: "team-a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cfg.Resolve(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if got.Context != tc.want.Context || got.Server != tc.want.Server || got.TLS != tc.want.TLS || string(got.CA) != string(tc.want.CA) ||
				got.Token != tc.want.Token || got.Namespace != tc.want.Namespace || got.NamespaceExplicit != tc.want.NamespaceExplicit {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if _, err := cfg.Resolve(Overrides{Context: "nope"}); err == nil || !strings.Contains(err.Error(), `context "nope" does not exist`) {
		t.Errorf("a missing context: %v", err)
	}
	empty, err := LoadFile(filepath.Join(dir, "missing"))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := empty.Resolve(Overrides{}); err != nil || r.Server != DefaultServer || r.Namespace != "default" {
		t.Errorf("no file: %+v, %v", r, err)
	}
	if err := os.WriteFile(path, []byte("clusterz: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// An unknown key is kept (and written back), never refused: kubectl
	// and kind write fields skiffctl does not use.
	if c, err := LoadFile(path); err != nil || c.Extra["clusterz"] == nil {
		t.Errorf("an unknown key in the config: %+v, %v", c, err)
	}
	if err := os.WriteFile(path, []byte("clusters:\n- name: a\n- name: a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(path); err == nil || !strings.Contains(err.Error(), `clusters[1].name: duplicate name "a"`) {
		t.Errorf("a name twice: %v", err)
	}
}
