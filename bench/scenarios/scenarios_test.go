package scenarios

import (
	"bufio"
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/node-agent/crienv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func names(ss []*Scenario) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

func TestSelect(t *testing.T) {
	cases := []struct {
		name   string
		prefix string
		want   []string
	}{
		{"empty selects all", "", []string{"watch.fanout", "write", "api.get", "api.list", "http.create", "http.list", "scheduler", "scheduler.antiaffinity", "scheduler.preemption", "node", "streams", "leader", "controllers.rs", "jobs", "daemonset", "fairness", "fairness.flood", "memory", "services", "services.programming", "dns", "ha"}},
		{"scheduler, its anti-affinity run and preemption", "scheduler", []string{"scheduler", "scheduler.antiaffinity", "scheduler.preemption"}},
		{"preemption alone", "scheduler.preemption", []string{"scheduler.preemption"}},
		{"the anti-affinity run needs the basic one", "scheduler.antiaffinity", []string{"scheduler", "scheduler.antiaffinity"}},
		{"controllers measure their API denominator themselves", "controllers", []string{"controllers.rs"}},
		{"api runs the writes with their etcd denominator", "api", []string{"write", "api.get", "api.list"}},
		{"etcd alone", "etcd", []string{"write"}},
		{"watch alone", "watch", []string{"watch.fanout"}},
		{"one figure", "api.get_p99", []string{"api.get"}},
		{"the ratio figure", "api.create_vs", []string{"write"}},
		{"memory alone", "memory", []string{"memory"}},
		{"leader alone", "leader", []string{"leader"}},
		{"ha alone: its single apiserver is its own denominator", "ha", []string{"ha"}},
		{"the HTTP API measures its gRPC denominator itself", "http", []string{"http.create", "http.list"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Select(All(), tc.prefix)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names(got), tc.want) {
				t.Errorf("Select(%q) = %v, want %v", tc.prefix, names(got), tc.want)
			}
		})
	}
	if _, err := Select(All(), "nosuch"); err == nil {
		t.Error("Select(nosuch) succeeded, want an error")
	}
}

func TestHistogramPercentiles(t *testing.T) {
	// 1..100000 µs shuffled: the nearest-rank percentile is p% of 100000 µs.
	var h Histogram
	for _, i := range rand.Perm(100000) {
		h.Record(time.Duration(i+1) * time.Microsecond)
	}
	cases := []struct {
		p    float64
		want time.Duration
	}{
		{50, 50 * time.Millisecond},
		{99, 99 * time.Millisecond},
		{99.9, 99900 * time.Microsecond},
		{100, 100 * time.Millisecond},
	}
	for _, tc := range cases {
		got := h.Percentile(tc.p)
		if diff := float64(got-tc.want) / float64(tc.want); diff < 0 || diff > 0.002 {
			t.Errorf("p%v = %v, want %v (+0.2%%)", tc.p, got, tc.want)
		}
	}
	if h.Count() != 100000 || h.Max() != 100*time.Millisecond {
		t.Errorf("count %d max %v", h.Count(), h.Max())
	}
	var small Histogram
	for _, d := range []time.Duration{-5, 3, 7, 1000} {
		small.Record(d)
	}
	if got := small.Percentile(50); got != 3 {
		t.Errorf("exact small values: p50 = %v, want 3ns", got)
	}
	if got := small.Percentile(25); got != 0 {
		t.Errorf("negative samples count as 0: p25 = %v", got)
	}
}

func TestBucketsCoverValues(t *testing.T) {
	for _, v := range []uint64{0, 1023, 1024, 1025, 2047, 2048, 1 << 30, 1<<40 + 12345} {
		b := bucketOf(v)
		if high := bucketHigh(b); v > high || (b > 0 && v <= bucketHigh(b-1)) {
			t.Errorf("value %d in bucket %d: (%d, %d]", v, b, bucketHigh(b-1), high)
		}
	}
}

// TestScenarios runs every scenario, tiny, against a real apiserver: the
// harness itself, not the performance.
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an apiserver")
	}
	srv := apiservertest.Start(t)
	etcdTLS, err := srv.EtcdClientTLS().ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{
		Addr:         srv.Addr(),
		EtcdEndpoint: srv.EtcdEndpoint(),
		EtcdTLS:      etcdTLS,
		Config: Config{
			Warmup:        50 * time.Millisecond,
			Duration:      300 * time.Millisecond,
			Rounds:        2,
			Clients:       4,
			Conns:         2,
			GetObjects:    10,
			ListObjects:   50,
			ListMinCalls:  5,
			Watchers:      10,
			WatchConns:    3,
			WatchWriters:  4,
			WatchRate:     100,
			WatchDuration: 500 * time.Millisecond,
			WatchDrain:    10 * time.Second,
			RSReplicas:    100,
			RSTimeout:     30 * time.Second,
			SchedNodes:    10,
			SchedPods:     100,
			SchedClients:  4,
			SchedTimeout:  30 * time.Second,
			NodePods:      3,
			NodeTimeout:   60 * time.Second,
			// Three lists of 40 over 100 objects: pages of 40, 40, 20.
			MemoryObjects:   100,
			MemoryLists:     3,
			MemoryListLimit: 40,
			// The least lease: the standby's takeover waits it out.
			LeaderLeaseDuration: time.Second,
			SvcProgServices:     20, SvcProgEndpoints: 3, SvcProgNodes: 3, SvcProgSamples: 10,
		},
	}
	// A safety net over every scenario, the ha scenario's build of
	// skiff-apiserver included: 78 s alone on this 2-core machine,
	// and 124 s once in CI beside the other packages' tests on a slow day
	// (2 minutes then cut the ha scenario's failovers short).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	scenarios := All()
	// The node scenario needs root and a containerd: CI has them (and
	// crienv installs what is missing); elsewhere it is left out, saying why.
	if err := crienv.CheckPrerequisites(ctx, true); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v", err)
		}
		t.Logf("leaving out the node scenario: %v", err)
		scenarios = slices.DeleteFunc(scenarios, func(s *Scenario) bool { return s.Name == "node" || s.Name == "streams" })
	}
	rs, err := Run(ctx, env, scenarios)
	if err != nil {
		t.Fatal(err)
	}

	var out strings.Builder
	if err := WriteReport(&out, rs); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	bench := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "BENCH" {
			v, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				t.Errorf("BENCH line %q: value is not a plain number", sc.Text())
			}
			bench[f[1]] = v
		}
	}
	for _, s := range scenarios {
		for _, f := range s.Figures {
			if _, ok := bench[f.Name]; !ok {
				t.Errorf("no BENCH line for %s", f.Name)
			}
		}
	}
	positive := []string{
		"etcd.put_per_s", "etcd.put_cpu_us_per_object", "api.create_per_s", "api.create_cpu_us_per_object",
		"api.create_vs_etcd_ratio", "api.get_p99_ms", "api.list_1000_p99_ms", "watch.write_per_s",
		"controllers.rs_10k_pods_per_s", "controllers.api_create_per_s", "scheduler.pods_per_s", "scheduler.create_to_bound_p99_ms", "controllers.create_vs_api_ratio", "controllers.rs_10k_all_ready_s",
		"fairness.victim_p99_ratio", "fairness.victim_p99_alone_ms", "fairness.victim_p99_flood_ms", "fairness.flooder_served_per_s",
		"fairness.flood_victim_p99_ratio", "fairness.flood_victim_p99_alone_ms", "fairness.flood_victim_p99_flood_ms", "fairness.flood_lists_per_s", "fairness.flood_cpu_floor_ratio", "fairness.flood_traffic_floor_ratio",
		"memory.apiserver_rss_vs_db_ratio",
		"leader.failover_ms", "leader.standby_failover_ms", "leader.release_failover_ms",
		"jobs.pods_per_s", "jobs.cpu_us_per_pod", "jobs.vs_rs_ratio", "daemonset.rollout_1000_nodes_s", "daemonset.rollout_cpu_us_per_pod",
		"jobs.api_floor_pods_per_s", "jobs.api_floor_cpu_us_per_pod", "jobs.floor_vs_rs_ratio", "jobs.vs_floor_ratio",
	}
	for _, name := range positive {
		if bench[name] <= 0 {
			t.Errorf("%s = %v, want > 0", name, bench[name])
		}
	}
	// On a busy machine some of the 50 writes may be dropped (not started in
	// time); every watcher must still get every write that was done.
	if got := bench["watch.events_delivered"]; got <= 0 || int(got)%10 != 0 {
		t.Errorf("watch.events_delivered = %v, want a positive multiple of the 10 watchers", got)
	}
	if got := bench["watch.missed_events"]; got != 0 {
		t.Errorf("watch.missed_events = %v, want 0", got)
	}
}
