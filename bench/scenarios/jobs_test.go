package scenarios

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"skiff.dev/services/apiserver/apiservertest"
)

// TestJobsScenario runs the jobs scenario (and the ReplicaSet one it
// needs) small; SKIFF_JOBS_BENCH=full runs them at their real size and
// logs the report.
func TestJobsScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an apiserver")
	}
	srv := apiservertest.Start(t)
	cfg := Config{Warmup: 50 * time.Millisecond, Duration: 300 * time.Millisecond, Rounds: 2, Clients: 4, Conns: 1,
		RSReplicas: 200, RSTimeout: 60 * time.Second}
	if os.Getenv("SKIFF_JOBS_BENCH") == "full" {
		cfg = DefaultConfig()
	}
	env := &Env{Addr: srv.Addr(), EtcdEndpoint: srv.EtcdEndpoint(), Config: cfg}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rs, err := Run(ctx, env, []*Scenario{controllersScenario(), jobsScenario()})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := WriteReport(&out, rs); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	for _, f := range jobsScenario().Figures {
		name := f.Name
		if v, ok := rs.Get(name); !ok || v <= 0 {
			t.Errorf("%s = %v, %v", name, v, ok)
		}
	}
}
