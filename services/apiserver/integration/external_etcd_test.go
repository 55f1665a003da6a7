package integration

import (
	"context"
	"crypto/tls"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"skiff.dev/internal/client"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authn/pki"
)

// TestExternalEtcdAndTwoAPIServers runs a second apiserver with
// --etcd-servers pointing at the first one's etcd: both serve the same
// objects, and each one's watch sees what the other wrote.
func TestExternalEtcdAndTwoAPIServers(t *testing.T) {
	a := apiservertest.Start(t)
	b := apiservertest.Start(t, etcdOf(a))
	ctx := testContext(t)
	wa, err := client.ConfigMaps(a.Conn).Watch(ctx, &metav1.ListOptions{Namespace: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	defer wa.Stop()
	wb, err := client.ConfigMaps(b.Conn).Watch(ctx, &metav1.ListOptions{Namespace: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Stop()

	if _, err := client.ConfigMaps(b.Conn).Create(ctx, cm("shared", "from-b", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := client.ConfigMaps(a.Conn).Create(ctx, cm("shared", "from-a", nil)); err != nil {
		t.Fatal(err)
	}
	expect(t, wa, "ADDED from-b", "ADDED from-a")
	expect(t, wb, "ADDED from-b", "ADDED from-a")
	got, err := client.ConfigMaps(a.Conn).Get(ctx, "shared", "from-b")
	if err != nil || got.Metadata.Name != "from-b" {
		t.Fatalf("apiserver A cannot read what B wrote: %v %v", got, err)
	}
	// Optimistic concurrency holds across the two: B's stale update conflicts.
	stale, _ := client.ConfigMaps(b.Conn).Get(ctx, "shared", "from-a")
	fresh := stale
	fresh.Data = map[string]string{"k": "a"}
	if _, err := client.ConfigMaps(a.Conn).Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	stale.Data = map[string]string{"k": "b"}
	if _, err := client.ConfigMaps(b.Conn).Update(ctx, stale); err == nil {
		t.Fatal("stale update through the second apiserver succeeded")
	}
}

// TestExternalEtcdWithClientCertificates: an external etcd that serves TLS
// and requires client certificates (as kube-apiserver's --etcd-cafile,
// --etcd-certfile, --etcd-keyfile): the apiserver with the certificate
// serves; without it, it fails to start, saying which etcd did not answer.
func TestExternalEtcdWithClientCertificates(t *testing.T) {
	dir := t.TempDir()
	ca, _, err := pki.InitCA(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]pki.Request{
		"etcd":      {CommonName: "etcd", Hosts: []string{"127.0.0.1"}, Server: true},
		"apiserver": {CommonName: "kube-apiserver-etcd-client", Client: true},
	} {
		certPEM, keyPEM, err := ca.Issue(r, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := pki.WritePair(dir, name, certPEM, keyPEM); err != nil {
			t.Fatal(err)
		}
	}
	caFile := filepath.Join(dir, pki.CACertFile)
	endpoint := startEtcdWith(t, func(cfg *embed.Config) {
		cfg.ClientTLSInfo = transport.TLSInfo{CertFile: filepath.Join(dir, "etcd.crt"), KeyFile: filepath.Join(dir, "etcd.key"), TrustedCAFile: caFile, ClientCertAuth: true}
	})
	s := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) {
		c.DataDir, c.EtcdServers = "", []string{endpoint}
		c.EtcdCAFile, c.EtcdCertFile, c.EtcdKeyFile = caFile, filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key")
	}))
	ctx := testContext(t)
	if _, err := client.ConfigMaps(s.Conn).Create(ctx, cm("default", "over-tls", nil)); err != nil {
		t.Fatalf("a create through an etcd with client certificates: %v", err)
	}
	_, err = apiservertest.StartConfig(apiserver.Config{Listen: "127.0.0.1:0", EtcdServers: []string{endpoint}, EtcdCAFile: caFile, EtcdDialTimeout: 3 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("without a client certificate: %v, want the etcd named as not answering", err)
	}
}

// etcdOf has an apiserver store in a's embedded etcd, as external etcd,
// with the client certificate a holds for it.
func etcdOf(a *apiservertest.Server) apiservertest.Option {
	return apiservertest.WithConfig(func(c *apiserver.Config) {
		f := a.EtcdClientTLS()
		c.DataDir = ""
		c.EtcdServers = []string{a.EtcdEndpoint()}
		c.EtcdCAFile, c.EtcdCertFile, c.EtcdKeyFile = f.TrustedCAFile, f.CertFile, f.KeyFile
	})
}

// TestEmbeddedEtcdOnlyForItsAPIServer: the embedded etcd's client port
// (loopback) answers only a client with the certificate its apiserver
// holds, so that no other process on the machine (another user, a pod on
// the host network) reads or writes the cluster's state past the
// apiserver's authentication and authorization.
func TestEmbeddedEtcdOnlyForItsAPIServer(t *testing.T) {
	a := apiservertest.Start(t)
	ctx := testContext(t)
	u, err := url.Parse(a.EtcdEndpoint())
	if err != nil {
		t.Fatal(err)
	}
	status := func(endpoint string, tlsCfg *tls.Config) error {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsCfg, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return err
		}
		defer c.Close()
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err = c.Status(sctx, endpoint)
		return err
	}
	if err := status("http://"+u.Host, nil); err == nil {
		t.Errorf("the embedded etcd at %s answers a plain-text client", u.Host)
	}
	files := a.EtcdClientTLS()
	if files.CertFile == "" {
		t.Fatal("the apiserver names no client certificate for its etcd")
	}
	noCert := transport.TLSInfo{TrustedCAFile: files.TrustedCAFile}
	cfg, err := noCert.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if err := status("https://"+u.Host, cfg); err == nil {
		t.Errorf("the embedded etcd at %s answers a TLS client without a certificate", u.Host)
	}
	if cfg, err = files.ClientConfig(); err != nil {
		t.Fatal(err)
	}
	if err := status(a.EtcdEndpoint(), cfg); err != nil {
		t.Errorf("the embedded etcd refuses its apiserver's client certificate: %v", err)
	}
	if st, err := os.Stat(files.KeyFile); err != nil || st.Mode().Perm()&0o077 != 0 {
		t.Errorf("the client key %s: %v, mode %v; want readable by its owner only", files.KeyFile, err, st.Mode())
	}
}
