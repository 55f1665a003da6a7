package scenarios

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"skiff.dev/services/apiserver/apiservertest"
)

// TestDaemonSetScenario runs the daemonset scenario on 20 nodes (until the
// scenario is in All, TestScenarios does not run it).
func TestDaemonSetScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an apiserver")
	}
	nodes := 20
	// SKIFF_BENCH_DS_NODES=1000 measures the figure itself.
	if v, err := strconv.Atoi(os.Getenv("SKIFF_BENCH_DS_NODES")); err == nil && v > 0 {
		nodes = v
	}
	srv := apiservertest.Start(t)
	env := &Env{Addr: srv.Addr(), EtcdEndpoint: srv.EtcdEndpoint(), Config: Config{SchedNodes: nodes, RSTimeout: 5 * time.Minute}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rs, err := Run(ctx, env, []*Scenario{daemonSetScenario()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs.List() {
		t.Logf("%s = %.3f %s (%s)", r.Name, r.Value, r.Unit, r.Note)
		if r.Value <= 0 {
			t.Errorf("%s = %v, want > 0", r.Name, r.Value)
		}
	}
}
