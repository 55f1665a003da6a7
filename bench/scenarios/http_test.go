package scenarios

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	kmetav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// TestHTTPScenarios runs the HTTP API's scenarios small against a secure
// apiserver, as skiff-bench runs them (TLS, a client certificate): every
// figure is measured and positive, and the creates went over the one
// HTTP/2 connection the figures claim. (TestScenarios runs them in plain
// text, over HTTP/1.1.)
func TestHTTPScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an apiserver")
	}
	srv := apiservertest.Start(t, apiservertest.Secure())
	creds, err := srv.Security.Config("http-bench", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Addr: srv.Addr(), EtcdEndpoint: srv.EtcdEndpoint(), Client: &creds, Config: Config{
		Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond, Rounds: 2, Clients: 8, Conns: 1,
		ListObjects: 50, ListMinCalls: 5,
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("figures", func(t *testing.T) {
		rs, err := Run(ctx, env, []*Scenario{httpCreateScenario(), httpListScenario()})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if err := WriteReport(&out, rs); err != nil {
			t.Fatal(err)
		}
		t.Log("\n" + out.String())
		for _, s := range []*Scenario{httpCreateScenario(), httpListScenario()} {
			for _, f := range s.Figures {
				if v, ok := rs.Get(f.Name); !ok || v <= 0 {
					t.Errorf("%s = %v (measured: %v), want > 0", f.Name, v, ok)
				}
			}
		}
		if v, _ := rs.Get(figHTTPConns.Name); v != 1 {
			t.Errorf("%s = %v, want 1: client-go's goroutines share one HTTP/2 connection", figHTTPConns.Name, v)
		}
		// The next scenarios' scheduler must not meet the listed pods.
		conns, err := env.dial(1)
		if err != nil {
			t.Fatal(err)
		}
		defer closeAll(conns)
		left, err := corev1.NewPodsClient(conns[0]).List(ctx, &metav1.ListOptions{Namespace: httpListNamespace})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(left.GetItems()); n != 0 {
			t.Errorf("http.list left %d pods in %s, want none", n, httpListNamespace)
		}
	})

	t.Run("one HTTP/2 connection for concurrent requests", func(t *testing.T) {
		kube, err := newKubeClient(env)
		if err != nil {
			t.Fatal(err)
		}
		defer kube.close()
		cms := kube.CoreV1().ConfigMaps(createNamespace)
		if _, err := cms.List(ctx, kmetav1.ListOptions{Limit: 1}); err != nil {
			t.Fatal(err)
		}
		const goroutines, each = 64, 5
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for range goroutines {
			wg.Go(func() {
				for range each {
					if _, err := cms.List(ctx, kmetav1.ListOptions{Limit: 1}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		dialed, maxOpen := kube.conns.counts()
		if dialed != 1 || maxOpen != 1 || kube.h1.Load() != 0 || kube.h2.Load() != 1+goroutines*each {
			t.Errorf("dialed %d, at most %d open, %d HTTP/1 and %d HTTP/2 responses; want 1, 1, 0, %d: %s",
				dialed, maxOpen, kube.h1.Load(), kube.h2.Load(), 1+goroutines*each, kube.wire())
		}
	})
}
