package scenarios

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// The API figures: ConfigMaps through the apiserver's gRPC API.
var (
	figAPICreatePerS = Figure{Name: "api.create_per_s", Unit: "objects/s"}
	figAPICreateCPU  = Figure{Name: "api.create_cpu_us_per_object", Unit: "us CPU/object"}
	figAPICreateP99  = Figure{Name: "api.create_p99_ms", Unit: "ms"}
	figAPICreateRate = Figure{Name: "api.create_vs_etcd_ratio", Unit: "ratio", Target: AtLeast(0.7)}
	figAPIGetP99     = Figure{Name: "api.get_p99_ms", Unit: "ms", Target: AtMost(10)}
	figAPIList1000   = Figure{Name: "api.list_1000_p99_ms", Unit: "ms", Target: AtMost(100)}
)

// Each scenario writes in its own namespace; none needs a Namespace object.
const (
	createNamespace = "create-bench"
	getNamespace    = "get-bench"
	listNamespace   = "list-bench"
)

// writeScenario measures raw etcd puts and API creates in alternating
// rounds, so that both see the same machine (a noisy neighbour or a slow
// fsync hits both alike) and their ratio is not an accident of timing.
func writeScenario() *Scenario {
	return &Scenario{
		Name:    "write",
		Summary: "raw etcd puts (1 KiB, loopback clientv3) and API ConfigMap creates (1 KiB), same concurrency, alternating rounds",
		Figures: []Figure{figEtcdPutPerS, figEtcdPutCPU, figEtcdPutP99, figAPICreatePerS, figAPICreateCPU, figAPICreateP99, figAPICreateRate},
		Run:     runWrites,
	}
}

func runWrites(ctx context.Context, env *Env, rs *Results) error {
	cfg := env.Config
	putter, err := newEtcdPutter(env)
	if err != nil {
		return err
	}
	defer putter.close()
	creator, err := newAPICreator(env)
	if err != nil {
		return err
	}
	defer creator.close()
	rounds := max(cfg.Rounds, 1)
	window := cfg.Duration / time.Duration(rounds)
	apiTotal, etcdTotal, ratios, err := pairedRounds(rounds, false,
		func(r int) (*loadResult, error) { return creator.run(ctx, cfg, window, r) },
		func(r int) (*loadResult, error) { return putter.run(ctx, cfg, window, r) })
	if err != nil {
		return err
	}
	rs.Add(figEtcdPutPerS, etcdTotal.perSecond(), fmt.Sprintf("%d clients, 1 clientv3 client, %d puts in %.1fs over %d rounds", cfg.Clients, etcdTotal.ops, etcdTotal.elapsed.Seconds(), rounds))
	rs.Add(figEtcdPutCPU, etcdTotal.cpuPerOp(), "process CPU (etcd + client) / puts")
	rs.Add(figEtcdPutP99, ms(etcdTotal.latency.Percentile(99)), latencyNote(&etcdTotal.latency, "calls"))
	rs.Add(figAPICreatePerS, apiTotal.perSecond(), fmt.Sprintf("%d clients round-robin over %d gRPC conns, %d creates in %.1fs over %d rounds", cfg.Clients, len(creator.clients), apiTotal.ops, apiTotal.elapsed.Seconds(), rounds))
	rs.Add(figAPICreateCPU, apiTotal.cpuPerOp(), "process CPU (apiserver + etcd + gRPC clients) / creates")
	rs.Add(figAPICreateP99, ms(apiTotal.latency.Percentile(99)), latencyNote(&apiTotal.latency, "calls"))
	rs.Add(figAPICreateRate, apiTotal.perSecond()/etcdTotal.perSecond(),
		fmt.Sprintf("api.create_per_s / etcd.put_per_s; per round %s", strings.Join(ratios, " ")))
	return nil
}

// pairedRounds measures two loads in rounds, one after the other within
// each round (so they meet the machine in the same state), b first, or
// in turns when alternate, and returns their totals and each round's
// a/b ratio.
func pairedRounds(rounds int, alternate bool, a, b func(round int) (*loadResult, error)) (aTotal, bTotal loadResult, ratios []string, err error) {
	for r := range rounds {
		var ar, br *loadResult
		runA := func() (err error) { ar, err = a(r); return err }
		runB := func() (err error) { br, err = b(r); return err }
		first, second := runB, runA
		if alternate && r%2 == 1 {
			first, second = runA, runB
		}
		if err = first(); err != nil {
			return
		}
		if err = second(); err != nil {
			return
		}
		aTotal.add(ar)
		bTotal.add(br)
		ratios = append(ratios, fmt.Sprintf("%.2f", ar.perSecond()/br.perSecond()))
	}
	return
}

// apiCreator creates 1 KiB ConfigMaps through the API.
type apiCreator struct {
	conns   []*grpc.ClientConn
	clients []corev1.ConfigMapsClient
	data    string
}

func newAPICreator(env *Env) (*apiCreator, error) {
	conns, err := env.dial(env.Config.Conns)
	if err != nil {
		return nil, err
	}
	c := &apiCreator{conns: conns, data: string(payload(1024))}
	for _, conn := range conns {
		c.clients = append(c.clients, corev1.NewConfigMapsClient(conn))
	}
	return c, nil
}

func (c *apiCreator) close() { closeAll(c.conns) }

// first creates one ConfigMap as the load's, or gets it when it exists,
// and returns the apiserver's answer.
func (c *apiCreator) first(ctx context.Context) (*corev1.ConfigMap, error) {
	cm, err := c.clients[0].Create(ctx, configMap(createNamespace, "c-first", c.data))
	if apierrors.IsAlreadyExists(err) {
		cm, err = c.clients[0].Get(ctx, &metav1.GetRequest{Namespace: createNamespace, Name: "c-first"})
	}
	if err != nil {
		return nil, fmt.Errorf("the first create: %w", err)
	}
	return cm, nil
}

func (c *apiCreator) run(ctx context.Context, cfg Config, window time.Duration, round int) (*loadResult, error) {
	res, err := load{
		clients:  cfg.Clients,
		warmup:   cfg.Warmup,
		duration: window,
		op: func(ctx context.Context, client, seq int) error {
			name := fmt.Sprintf("c-%d-%03d-%09d", round, client, seq)
			_, err := c.clients[client%len(c.clients)].Create(ctx, configMap(createNamespace, name, c.data))
			return err
		},
	}.run(ctx)
	if err != nil {
		return nil, fmt.Errorf("creating ConfigMaps: %w", err)
	}
	return res, nil
}

func apiGetScenario() *Scenario {
	return &Scenario{
		Name:    "api.get",
		Summary: "one client Gets existing ConfigMaps",
		Figures: []Figure{figAPIGetP99},
		Run:     runAPIGet,
	}
}

func apiListScenario() *Scenario {
	return &Scenario{
		Name:    "api.list",
		Summary: "one client Lists a namespace of 1,000 ConfigMaps (consistent reads)",
		Figures: []Figure{figAPIList1000},
		Run:     runAPIList,
	}
}

// configMap is a ConfigMap with one key "data" of the given value.
func configMap(ns, name string, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		Metadata: &metav1.ObjectMeta{Name: name, Namespace: ns},
		Data:     map[string]string{"data": data},
	}
}

// readLoad creates n 1 KiB ConfigMaps named prefix000000... in ns, then
// runs op from one client (one connection) for the measured window.
func readLoad(ctx context.Context, env *Env, ns, prefix string, n, minOps int,
	op func(cm corev1.ConfigMapsClient) func(ctx context.Context, seq int) error) (*loadResult, error) {
	cfg := env.Config
	conns, err := env.dial(1)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	cm := corev1.NewConfigMapsClient(conns[0])
	if err := createMany(ctx, cm, ns, prefix, n, payload(1024)); err != nil {
		return nil, err
	}
	call := op(cm)
	return load{
		clients:  1,
		warmup:   cfg.Warmup,
		duration: cfg.Duration,
		minOps:   int64(minOps),
		op:       func(ctx context.Context, _, seq int) error { return call(ctx, seq) },
	}.run(ctx)
}

func runAPIGet(ctx context.Context, env *Env, rs *Results) error {
	cfg := env.Config
	res, err := readLoad(ctx, env, getNamespace, "g-", cfg.GetObjects, 0, func(cm corev1.ConfigMapsClient) func(context.Context, int) error {
		return func(ctx context.Context, seq int) error {
			_, err := cm.Get(ctx, &metav1.GetRequest{Namespace: getNamespace, Name: objectName("g-", seq%cfg.GetObjects)})
			return err
		}
	})
	if err != nil {
		return fmt.Errorf("getting ConfigMaps: %w", err)
	}
	rs.Add(figAPIGetP99, ms(res.latency.Percentile(99)),
		fmt.Sprintf("1 client over %d objects; %s", cfg.GetObjects, latencyNote(&res.latency, "calls")))
	return nil
}

func runAPIList(ctx context.Context, env *Env, rs *Results) error {
	cfg := env.Config
	res, err := readLoad(ctx, env, listNamespace, "l-", cfg.ListObjects, cfg.ListMinCalls, func(cm corev1.ConfigMapsClient) func(context.Context, int) error {
		return func(ctx context.Context, _ int) error {
			list, err := cm.List(ctx, &metav1.ListOptions{Namespace: listNamespace})
			if err != nil {
				return err
			}
			if n := len(list.GetItems()); n != cfg.ListObjects {
				return fmt.Errorf("list of %s returned %d items, want %d", listNamespace, n, cfg.ListObjects)
			}
			return nil
		}
	})
	if err != nil {
		return fmt.Errorf("listing ConfigMaps: %w", err)
	}
	rs.Add(figAPIList1000, ms(res.latency.Percentile(99)),
		fmt.Sprintf("%d x 1 KiB objects, consistent list; %s", cfg.ListObjects, latencyNote(&res.latency, "calls")))
	return nil
}

func objectName(prefix string, i int) string { return fmt.Sprintf("%s%06d", prefix, i) }

// createMany creates n ConfigMaps named prefix000000... in ns, from a few
// concurrent clients.
func createMany(ctx context.Context, cm corev1.ConfigMapsClient, ns, prefix string, n int, data []byte) error {
	const workers = 16
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg      sync.WaitGroup
		errOnce sync.Once
		err     error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if _, e := cm.Create(ctx, configMap(ns, objectName(prefix, i), string(data))); e != nil {
					errOnce.Do(func() { err = fmt.Errorf("creating %s/%s: %w", ns, objectName(prefix, i), e) })
					cancel()
				}
			}
		}()
	}
loop:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break loop
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latencyNote summarizes h; what names the samples ("calls", "events").
func latencyNote(h *Histogram, what string) string {
	return fmt.Sprintf("p50 %.2f ms, p99 %.2f ms, max %.2f ms over %d %s",
		ms(h.Percentile(50)), ms(h.Percentile(99)), ms(h.Max()), h.Count(), what)
}
