package scenarios

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/flowcontrol"
)

// The flood of large Lists (issue 16): on an apiserver with the command's
// default flow control, user victim's small Lists alone and while user
// flooder Lists 500 of 1,000 ConfigMaps with 128 goroutines, in the same
// run. The flooder reads each answer's bytes without decoding them (a
// client on another machine would decode them there, not on the
// apiserver's 2 cores).
var (
	figFloodListsRatio = Figure{Name: "fairness.flood_victim_p99_ratio", Unit: "ratio", Target: AtMost(3)}
	figFloodListsAlone = Figure{Name: "fairness.flood_victim_p99_alone_ms", Unit: "ms"}
	figFloodListsFlood = Figure{Name: "fairness.flood_victim_p99_flood_ms", Unit: "ms"}
	figFloodListsRate  = Figure{Name: "fairness.flood_lists_per_s", Unit: "lists/s"}
)

const (
	floodListCallers = 128
	floodListObjects = 1000
	floodListLimit   = 500
	floodListNS      = "fairness-lists"
	floodSmallNS     = "fairness-small"
	floodSmallCount  = 10 // the victim's namespace
)

func fairnessFloodScenario() *Scenario {
	return &Scenario{
		Name: "fairness.flood",
		Summary: fmt.Sprintf("on an apiserver of its own with the default flow control, user victim's Lists of %d ConfigMaps (one at a time, at most one per %v) alone, then while user flooder Lists %d of %d ConfigMaps with %d goroutines",
			floodSmallCount, fairVictimInterval, floodListLimit, floodListObjects, floodListCallers),
		Figures: []Figure{figFloodListsRatio, figFloodListsAlone, figFloodListsFlood, figFloodListsRate},
		Run:     runFairnessFlood,
	}
}

func runFairnessFlood(ctx context.Context, env *Env, rs *Results) error {
	cfg := env.Config
	fc := flowcontrol.DefaultOptions()
	f, err := startFairServer(env, fc)
	if err != nil {
		return err
	}
	defer f.stop()

	setupConn, err := f.dialAs("setup")
	if err != nil {
		return err
	}
	defer setupConn.Close()
	setup := corev1.NewConfigMapsClient(setupConn)
	data := payload(1024)
	if err := createMany(ctx, setup, floodListNS, "l-", floodListObjects, data); err != nil {
		return err
	}
	if err := createMany(ctx, setup, floodSmallNS, "s-", floodSmallCount, data); err != nil {
		return err
	}
	victimConn, err := f.dialAs("victim")
	if err != nil {
		return err
	}
	defer victimConn.Close()
	victim := corev1.NewConfigMapsClient(victimConn)
	victimLoad := load{
		clients:  1,
		interval: fairVictimInterval,
		// A window lasts until the victim has a few Lists in it, however
		// slow the flood makes them (on a loaded machine under -race, the
		// test's short windows could end with none).
		minOps: int64(max(1, cfg.ListMinCalls/fairRounds)),
		op: func(ctx context.Context, _, _ int) error {
			list, err := victim.List(ctx, &metav1.ListOptions{Namespace: floodSmallNS})
			if err == nil && len(list.GetItems()) != floodSmallCount {
				err = fmt.Errorf("victim's List of %s: %d items, want %d", floodSmallNS, len(list.GetItems()), floodSmallCount)
			}
			return err
		},
	}
	raw := make([][]byte, floodListCallers) // each caller's answer, reused
	fl, err := newFlooder(f, floodListCallers, func(ctx context.Context, conn *grpc.ClientConn, _, g, _ int) error {
		return conn.Invoke(ctx, corev1.ConfigMaps_List_FullMethodName, &metav1.ListOptions{Namespace: floodListNS, Limit: floodListLimit}, &raw[g], client.RawWatch())
	})
	if err != nil {
		return err
	}
	defer fl.close()

	part := cfg.Duration / 2 / fairRounds
	env.logf("fairness.flood: %d rounds of the victim alone for %v, then with %d goroutines of the flooder listing %d of %d ConfigMaps for %v",
		fairRounds, part, floodListCallers, floodListLimit, floodListObjects, part)
	alone, flooded, floodCPU, err := alternate(ctx, victimLoad, fl, fairRounds, part, cfg.Warmup)
	if err != nil {
		return err
	}
	served, refused, elapsed := fl.served.Load(), fl.refused.Load(), fl.elapsed
	p99Alone, p99Flood := alone.latency.Percentile(99), flooded.latency.Percentile(99)
	rs.Add(figFloodListsRatio, float64(p99Flood)/float64(p99Alone),
		fmt.Sprintf("victim's List p99 during the flood / alone, same server, %d alternating rounds; %d read-only seats (the default on %d CPUs), a List of %d takes %d",
			fairRounds, fc.MaxRequestsInflight, fc.MaxRequestsInflight/flowcontrol.ReadSeatsPerCPU, floodListLimit, floodListLimit/100))
	rs.Add(figFloodListsAlone, ms(p99Alone), latencyNote(&alone.latency, "Lists"))
	rs.Add(figFloodListsFlood, ms(p99Flood), latencyNote(&flooded.latency, "Lists"))
	cpuNote := ""
	if served > 0 {
		cpuNote = fmt.Sprintf("; process CPU (apiserver, etcd, both clients) %.0f µs per List served", float64(floodCPU.Microseconds())/float64(served))
	}
	rs.Add(figFloodListsRate, float64(served)/elapsed.Seconds(),
		fmt.Sprintf("%d Lists of %d served to the flooder in %.1fs of flood, %d refusals (ResourceExhausted, each followed by the client's wait of the retry hint)%s",
			served, floodListLimit, elapsed.Seconds(), refused, cpuNote))
	return nil
}
