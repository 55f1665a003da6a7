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

// etcdPutter puts 1 KiB values through a plain etcd client over loopback.
type etcdPutter struct {
	cli   *clientv3.Client
	value string
}

func newEtcdPutter(env *Env) (*etcdPutter, error) {
	if env.EtcdEndpoint == "" {
		return nil, fmt.Errorf("no etcd endpoint to measure")
	}
	return etcdPutterAt(env.EtcdEndpoint)
}

// etcdPutterAt puts to the etcd of endpoints (the client balances over
// several: a cluster's members).
func etcdPutterAt(endpoints ...string) (*etcdPutter, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd %v: %w", endpoints, err)
	}
	return &etcdPutter{cli: cli, value: string(payload(1024))}, nil
}

func (p *etcdPutter) close() { p.cli.Close() }

// run puts for one window; round keeps keys of different rounds apart.
func (p *etcdPutter) run(ctx context.Context, cfg Config, window time.Duration, round int) (*loadResult, error) {
	res, err := load{
		clients:  cfg.Clients,
		warmup:   cfg.Warmup,
		duration: window,
		op: func(ctx context.Context, client, seq int) error {
			_, err := p.cli.Put(ctx, fmt.Sprintf("%s%d/%03d/%09d", rawPrefix, round, client, seq), p.value)
			return err
		},
	}.run(ctx)
	if err != nil {
		return nil, fmt.Errorf("putting to etcd: %w", err)
	}
	return res, nil
}

// payload is n printable bytes.
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}
