package cmd

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// TestSecureServer runs skiffctl against an apiserver with TLS and
// authentication: the config file's CA, client certificate and token
// (files or inline data) are what it connects with.
func TestSecureServer(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	c := newCLIFor(t, s.Addr(), "default", time.Now())
	creds := s.ClientConfig(t, "alice", "system:masters")

	t.Run("certificate files set with skiffctl config", func(t *testing.T) {
		c.ok("config", "set-cluster", "test", "--certificate-authority", creds.CAFile)
		c.ok("config", "set-credentials", "tester", "--client-certificate", creds.CertFile, "--client-key", creds.KeyFile)
		if r := c.run("get", "configmaps"); r.code != 0 || !strings.Contains(r.err, "No resources found") {
			t.Fatalf("get: exit %d, stderr %q", r.code, r.err)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		c.ok("config", "set-credentials", "nobody")
		errOut := c.fails("--user", "nobody", "get", "configmaps")
		if !strings.Contains(errOut, "You must be logged in to the server") || !strings.Contains(errOut, "no credentials") {
			t.Fatalf("stderr: %q", errOut)
		}
	})
	t.Run("a service-account token from --token", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sa, err := client.ServiceAccounts(s.Conn).Create(ctx, &corev1.ServiceAccount{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "ci"}})
		if err != nil {
			t.Fatal(err)
		}
		tok := s.ServiceAccountToken(t, "default", "ci", sa.GetMetadata().GetUid(), time.Hour)
		c.ok("--user", "nobody", "--token", tok, "get", "configmaps")
	})
	t.Run("inline data, and the server name to verify", func(t *testing.T) {
		certPEM, keyPEM, err := s.IssueClient("bob", "system:masters")
		if err != nil {
			t.Fatal(err)
		}
		b64 := base64.StdEncoding.EncodeToString
		cfg := fmt.Sprintf(`current-context: inline
clusters:
- name: inline
  cluster: {server: "https://%s", certificate-authority-data: %s, tls-server-name: localhost}
users:
- name: bob
  user: {client-certificate-data: %s, client-key-data: %s}
contexts:
- name: inline
  context: {cluster: inline, user: bob}
`, s.Addr(), b64(s.CA.CertPEM), b64(certPEM), b64(keyPEM))
		path := filepath.Join(t.TempDir(), "config")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		c.ok("--skiffconfig", path, "get", "configmaps")
		// A server name the certificate does not carry is refused.
		bad := strings.Replace(cfg, "tls-server-name: localhost", "tls-server-name: elsewhere.example", 1)
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if errOut := c.fails("--skiffconfig", path, "get", "configmaps"); !strings.Contains(errOut, "certificate") {
			t.Fatalf("stderr: %q", errOut)
		}
	})
}
