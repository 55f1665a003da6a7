package scenarios

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"skiff.dev/services/apiserver/apiserver"
)

// The raw etcd figures: the physical limit the API writes under.
var (
	figEtcdPutPerS = Figure{Name: "etcd.put_per_s", Unit: "puts/s"}
	figEtcdPutCPU  = Figure{Name: "etcd.put_cpu_us_per_object", Unit: "us CPU/put"}
	figEtcdPutP99  = Figure{Name: "etcd.put_p99_ms", Unit: "ms"}
)

// rawPrefix keeps the raw puts away from the apiserver's /registry/ keys.
const rawPrefix = "/bench/raw/"

// etcdPutter puts 1 KiB values through plain etcd clients over loopback,
// one per etcd member given, the load's clients spread over them.
type etcdPutter struct {
	clis  []*clientv3.Client
	value string
	acked atomic.Int64 // puts acknowledged, warmups included
}

func newEtcdPutter(env *Env) (*etcdPutter, error) {
	if env.EtcdEndpoint == "" {
		return nil, fmt.Errorf("no etcd endpoint to measure")
	}
	return etcdPutterAt(etcdTarget{env.EtcdEndpoint, env.EtcdTLS})
}

// etcdTarget is an etcd member's client URL and the TLS it requires (an
// embedded etcd's: a client certificate of its own CA, which its
// apiserver keeps in <data-dir>/etcd-pki).
type etcdTarget struct {
	endpoint string
	tls      *tls.Config
}

// etcdTLSIn is the client TLS of the embedded etcd of the apiserver whose
// --data-dir is dataDir.
func etcdTLSIn(dataDir string) (*tls.Config, error) {
	return apiserver.EmbeddedEtcdClientTLS(dataDir).ClientConfig()
}

// newEtcdClient is a client of one etcd member.
func newEtcdClient(t etcdTarget) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{t.endpoint},
		TLS:         t.tls,
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd %s: %w", t.endpoint, err)
	}
	return cli, nil
}

// etcdPutterAt puts to the etcd members of targets (a cluster's members:
// followers forward to the leader, as a balancing client's would).
func etcdPutterAt(targets ...etcdTarget) (*etcdPutter, error) {
	p := &etcdPutter{value: string(payload(1024))}
	for _, t := range targets {
		cli, err := newEtcdClient(t)
		if err != nil {
			p.close()
			return nil, err
		}
		p.clis = append(p.clis, cli)
	}
	return p, nil
}

func (p *etcdPutter) close() {
	for _, c := range p.clis {
		c.Close()
	}
}

// run puts for one window; round keeps keys of different rounds apart.
func (p *etcdPutter) run(ctx context.Context, cfg Config, window time.Duration, round int) (*loadResult, error) {
	res, err := load{
		clients:  cfg.Clients,
		warmup:   cfg.Warmup,
		duration: window,
		op: func(ctx context.Context, client, seq int) error {
			if _, err := p.clis[client%len(p.clis)].Put(ctx, fmt.Sprintf("%s%d/%03d/%09d", rawPrefix, round, client, seq), p.value); err != nil {
				return err
			}
			p.acked.Add(1)
			return nil
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
