package integration

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/etcd/server/v3/embed"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
)

// startEtcd is an etcd of its own for apiservers that share it
// (--etcd-servers), stopped with the test.
func startEtcd(t *testing.T) string { return startEtcdWith(t, nil) }

// startEtcdWith is startEtcd with edit applied to its config; a client
// TLS configuration makes its endpoint https.
func startEtcdWith(t *testing.T, edit func(*embed.Config)) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(t.TempDir(), "etcd")
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = true
	client, peer := mustParse(t, "http://127.0.0.1:0"), mustParse(t, "http://127.0.0.1:0")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	scheme := "http://"
	if edit != nil {
		edit(cfg)
		if !cfg.ClientTLSInfo.Empty() {
			scheme = "https://"
			tls := mustParse(t, "https://127.0.0.1:0")
			cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{tls}, []url.URL{tls}
		}
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("etcd did not start")
	}
	return scheme + e.Clients[0].Addr().String()
}

func mustParse(t *testing.T, s string) url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return *u
}

// TestClientFailsOverToAnotherAPIServer: a client given two apiservers'
// addresses (of one etcd) keeps to one; when that one stops, its next
// calls go to the other within seconds, and an informer's watch resumes
// there from its last revision, with no second list.
func TestClientFailsOverToAnotherAPIServer(t *testing.T) {
	etcd := startEtcd(t)
	shared := apiservertest.WithConfig(func(c *apiserver.Config) { c.EtcdServers = []string{etcd} })
	servers := []*apiservertest.Server{apiservertest.Start(t, shared), apiservertest.Start(t, shared)}
	conn, err := client.Dial(client.Config{Server: servers[0].Addr() + "," + servers[1].Addr(), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := testContext(t)
	cms := client.ConfigMaps(conn)
	reg := prometheus.NewRegistry()
	inf := informer.New(informer.FromClient(cms), informer.Options{ListOptions: &metav1.ListOptions{Namespace: "default"}, Metrics: informer.NewMetrics(reg)})
	ictx, stop := context.WithCancel(ctx)
	defer stop()
	go inf.Run(ictx)
	create := func(name string) {
		t.Helper()
		// A call on the broken connection fails; the caller's retry
		// reaches the other member.
		var sig await.Signal
		sig.Until(t, 10*time.Second, "create "+name, ctx.Done(), func() (bool, string) {
			_, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name}})
			return err == nil, fmt.Sprint(err)
		})
	}
	seen := func(name string) {
		t.Helper()
		var sig await.Signal
		sig.Until(t, 10*time.Second, "the informer to see "+name, ctx.Done(), func() (bool, string) {
			_, ok := inf.Store().GetByName("default", name)
			return ok, ""
		})
	}
	// served is the member that answered the last create.
	creates := func(s *apiservertest.Server) float64 {
		return seriesSum(t, s.Registry, "apiserver_request_total", map[string]string{"verb": "POST", "resource": "configmaps", "code": "201"})
	}
	create("before")
	seen("before")
	used := 0
	if creates(servers[1]) > 0 {
		used = 1
	}
	servers[used].Stop()
	create("after")
	if creates(servers[1-used]) == 0 {
		t.Fatalf("the create after member %d stopped was not served by the other", used)
	}
	seen("after")
	if lists := seriesSum(t, reg, "informer_lists_total", map[string]string{"resource": "configmaps"}); lists != 1 {
		t.Errorf("the informer listed %v times, want once: its watch resumes on the other member", lists)
	}
}
