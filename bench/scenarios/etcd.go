package scenarios

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// The raw etcd figures: the physical limit the API writes under.
var (
	figEtcdPutPerS = Figure{Name: "etcd.put_per_s", Unit: "puts/s"}
	figEtcdPutCPU  = Figure{Name: "etcd.put_cpu_us_per_object", Unit: "us CPU/put"}
	figEtcdPutP99  = Figure{Name: "etcd.put_p99_ms", Unit: "ms"}
)

// rawPrefix keeps the raw puts away from the apiserver's /registry/ keys.
const rawPrefix = "/bench/raw/"

func etcdPutScenario() *Scenario {
	return &Scenario{
		Name:    "etcd.put",
		Summary: "raw etcd puts of 1 KiB values from concurrent clients over loopback",
		Figures: []Figure{figEtcdPutPerS, figEtcdPutCPU, figEtcdPutP99},
		Run:     runEtcdPut,
	}
}

func runEtcdPut(ctx context.Context, env *Env, rs *Results) error {
	if env.EtcdEndpoint == "" {
		return fmt.Errorf("no etcd endpoint to measure")
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{env.EtcdEndpoint},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return fmt.Errorf("connecting to etcd %s: %w", env.EtcdEndpoint, err)
	}
	defer cli.Close()

	value := string(payload(1024))
	cfg := env.Config
	res, err := load{
		clients:  cfg.Clients,
		warmup:   cfg.Warmup,
		duration: cfg.Duration,
		op: func(ctx context.Context, client, seq int) error {
			_, err := cli.Put(ctx, fmt.Sprintf("%s%03d/%09d", rawPrefix, client, seq), value)
			return err
		},
	}.run(ctx)
	if err != nil {
		return fmt.Errorf("putting to etcd: %w", err)
	}
	note := fmt.Sprintf("%d clients, 1 clientv3 client, %d puts in %.1fs", cfg.Clients, res.ops, res.elapsed.Seconds())
	rs.Add(figEtcdPutPerS, res.perSecond(), note)
	rs.Add(figEtcdPutCPU, res.cpuPerOp(), "process CPU (etcd + client) / puts")
	rs.Add(figEtcdPutP99, ms(res.latency.Percentile(99)), latencyNote(&res.latency, "calls"))
	return nil
}

// payload is n printable bytes.
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}
