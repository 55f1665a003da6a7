package scenarios

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authn"
	"skiff.dev/services/apiserver/flowcontrol"
)

// The fairness figures: a polite user's Get latency on an apiserver with
// flow control, alone and while another user floods it, in the same run.
// The scenario starts an apiserver of its own (TLS, client certificates
// naming the users, flow control); the shared one runs without them. Its
// clients run in the benchmark's process, the flooder's too: its CPU and
// its garbage contend with the server's as well.
var (
	figFairRatio     = Figure{Name: "fairness.victim_p99_ratio", Unit: "ratio", Target: AtMost(3)}
	figFairAlone     = Figure{Name: "fairness.victim_p99_alone_ms", Unit: "ms"}
	figFairFlood     = Figure{Name: "fairness.victim_p99_flood_ms", Unit: "ms"}
	figFloodServed   = Figure{Name: "fairness.flooder_served_per_s", Unit: "requests/s"}
	figFloodRefused  = Figure{Name: "fairness.flooder_refused_per_s", Unit: "refusals/s"}
	figFloodInflight = Figure{Name: "fairness.flooder_concurrency", Unit: "goroutines"}
)

const (
	fairRounds    = 4
	fairFlooders  = 128 // the flooder's concurrent callers
	fairVictimNS  = "fairness-victim"
	fairFloodNS   = "fairness-flood"        // the flooder reads here
	fairWritesNS  = "fairness-flood-writes" // and creates here
	fairObjects   = 100                     // ConfigMaps in each namespace
	fairFloodConn = 4                       // over this many connections
	// fairVictimInterval paces the polite client: a Get every 2 ms at most
	// (500/s), as a controller or a person at a terminal, not a flood.
	fairVictimInterval = 2 * time.Millisecond
)

// fairnessFlowControl is the flow control of the scenario's apiserver:
// seats sized for this 2-core machine, where a Get costs some 100 µs of
// CPU and a handful of requests at once keep both cores busy; more seats
// only lengthen every request's turn on the CPU. (The command's defaults,
// 400 and 200, are Kubernetes' and suit a larger machine: a flood of 128
// callers would never queue.) Queue length and wait are the defaults.
// Seats alone leave the victim a seat at once, but a flood of short
// requests still takes both cores (a Get's TLS, HTTP/2 and encoding happen
// outside its seat) and every other request waits for the CPU: the
// per-user rate (--flowcontrol-user-qps) bounds what one user may take.
var fairnessFlowControl = flowcontrol.Options{
	MaxRequestsInflight:         4,
	MaxMutatingRequestsInflight: 4,
	QueueLength:                 flowcontrol.DefaultQueueLength,
	MaxWait:                     flowcontrol.DefaultMaxWait,
	UserQPS:                     1000,
}

func fairnessScenario() *Scenario {
	return &Scenario{
		Name: "fairness",
		Summary: fmt.Sprintf("on an apiserver of its own with TLS, authentication and flow control (%d read-only, %d mutating seats, %v requests/s per user), user victim's Gets (one at a time, at most one per %v) alone, then while user flooder calls with %d goroutines (Gets, Lists, Creates)",
			fairnessFlowControl.MaxRequestsInflight, fairnessFlowControl.MaxMutatingRequestsInflight, fairnessFlowControl.UserQPS, fairVictimInterval, fairFlooders),
		Figures: []Figure{figFairRatio, figFairAlone, figFairFlood, figFloodServed, figFloodRefused, figFloodInflight},
		Run:     runFairness,
	}
}

// fairServer is the scenario's own apiserver (the shared one runs without
// security and flow control) and its users' connections.
type fairServer struct {
	srv *apiservertest.Server
	dir string
}

func startFairServer(env *Env, fc flowcontrol.Options) (*fairServer, error) {
	dir, err := os.MkdirTemp("", "skiff-bench-fairness-")
	if err != nil {
		return nil, err
	}
	srv, err := apiservertest.StartConfig(apiserver.Config{
		DataDir:     dir,
		Listen:      "127.0.0.1:0",
		Logger:      zap.NewNop(),
		FlowControl: fc,
		Authn:       authn.Options{Enabled: true},
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting the fairness apiserver: %w", err)
	}
	env.logf("fairness: apiserver %s with TLS, authentication and flow control (%d read-only, %d mutating seats)", srv.Addr(), fc.MaxRequestsInflight, fc.MaxMutatingRequestsInflight)
	return &fairServer{srv: srv, dir: dir}, nil
}

func (f *fairServer) stop() {
	f.srv.Stop()
	os.RemoveAll(f.dir)
}

// dialAs connects as user name: a client certificate from the server's CA
// (CN = name), so that flow control sees distinct users.
func (f *fairServer) dialAs(name string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	cfg, err := f.srv.Security.Config(name)
	if err != nil {
		return nil, fmt.Errorf("credentials of %s: %w", name, err)
	}
	return client.Dial(cfg, opts...)
}

func runFairness(ctx context.Context, env *Env, rs *Results) error {
	cfg := env.Config
	window := cfg.Duration / 2 // each of the two windows
	f, err := startFairServer(env, fairnessFlowControl)
	if err != nil {
		return err
	}
	defer f.stop()

	setupConn, err := f.dialAs("setup", client.RetryThrottled()...)
	if err != nil {
		return err
	}
	defer setupConn.Close()
	setup := corev1.NewConfigMapsClient(setupConn)
	data := payload(1024)
	for _, ns := range []string{fairVictimNS, fairFloodNS} {
		if err := createMany(ctx, setup, ns, "o-", fairObjects, data); err != nil {
			return err
		}
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
		op: func(ctx context.Context, _, seq int) error {
			_, err := victim.Get(ctx, &metav1.GetRequest{Namespace: fairVictimNS, Name: objectName("o-", seq%fairObjects)})
			return err
		},
	}

	fl, err := newFlooder(f, fairFlooders, mixedFlood(string(data)))
	if err != nil {
		return err
	}
	defer fl.close()
	// Alternating rounds, so that both windows see the same machine (other
	// processes, a slow disk): alone, flood, alone, flood...
	rounds := fairRounds
	part := window / time.Duration(rounds)
	env.logf("fairness: %d rounds of the victim alone for %v, then with %d goroutines of the flooder calling as fast as they can for %v",
		rounds, part, fairFlooders, part)
	alone, flooded, _, err := alternate(ctx, victimLoad, fl, rounds, part, cfg.Warmup)
	if err != nil {
		return err
	}
	served, refused, elapsed := fl.served.Load(), fl.refused.Load(), fl.elapsed

	p99Alone, p99Flood := alone.latency.Percentile(99), flooded.latency.Percentile(99)
	rs.Add(figFairRatio, float64(p99Flood)/float64(p99Alone),
		fmt.Sprintf("victim's Get p99 during the flood / alone, same server, %d alternating rounds", rounds))
	rs.Add(figFairAlone, ms(p99Alone), latencyNote(&alone.latency, "Gets"))
	rs.Add(figFairFlood, ms(p99Flood), latencyNote(&flooded.latency, "Gets"))
	rs.Add(figFloodServed, float64(served)/elapsed.Seconds(),
		fmt.Sprintf("%d requests served to the flooder in %.1fs of flood (of 10: 7 Gets, 2 Lists over %d objects selecting none, 1 Create of 1 KiB)", served, elapsed.Seconds(), fairObjects))
	rs.Add(figFloodRefused, float64(refused)/elapsed.Seconds(),
		fmt.Sprintf("%d ResourceExhausted refusals (queue full), each followed by the client's wait of the retry hint (client.RetryThrottled)", refused))
	rs.Add(figFloodInflight, float64(fairFlooders), fmt.Sprintf("over %d connections", fairFloodConn))
	return nil
}

// alternate runs rounds of victim alone, then during fl's flood, each
// window lasting part after a warmup (a tenth of warmup alone, half of it
// in the flood, which builds up), so that both windows see the same
// machine. It returns the victim's results of each kind of window and the
// process CPU used during the floods.
func alternate(ctx context.Context, victim windowed, fl flood, rounds int, part, warmup time.Duration) (alone, flooded loadResult, floodCPU time.Duration, err error) {
	for range rounds {
		a, err := victim.window(ctx, warmup/10, part)
		if err != nil {
			return alone, flooded, floodCPU, fmt.Errorf("victim alone: %w", err)
		}
		alone.add(a)
		if err := fl.start(ctx); err != nil {
			return alone, flooded, floodCPU, fmt.Errorf("flooder: %w", err)
		}
		cpu0 := cpuTime()
		b, err := victim.window(ctx, warmup/2, part) // the flood builds up
		elsewhere, floodErr := fl.stop()
		floodCPU += cpuTime() - cpu0 + elsewhere
		if floodErr != nil {
			return alone, flooded, floodCPU, fmt.Errorf("flooder: %w", floodErr)
		}
		if err != nil {
			return alone, flooded, floodCPU, fmt.Errorf("victim during the flood: %w", err)
		}
		flooded.add(b)
	}
	return alone, flooded, floodCPU, nil
}

// windowed is a victim's load: window runs it for warmup, then measures
// it for part.
type windowed interface {
	window(ctx context.Context, warmup, part time.Duration) (*loadResult, error)
}

func (l load) window(ctx context.Context, warmup, part time.Duration) (*loadResult, error) {
	l.warmup, l.duration = warmup, part
	return l.run(ctx)
}

// flood is a flooding user, started and stopped for each flood window;
// stop returns the CPU it used outside the benchmark's process.
type flood interface {
	start(ctx context.Context) error
	stop() (elsewhere time.Duration, err error)
}

// flooder is the second user: goroutines calling back to back, started
// and stopped for each flood window.
type flooder struct {
	conns   []*grpc.ClientConn
	callers int
	call    floodCall
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started time.Time
	elapsed time.Duration // flooding, over all windows
	served  atomic.Int64
	refused atomic.Int64
	errOnce sync.Once
	err     error
	round   int
}

// floodCall is one call of caller g of the flooder, the seq-th of the
// caller in flood window round.
type floodCall func(ctx context.Context, conn *grpc.ClientConn, round, g, seq int) error

// mixedFlood is the fairness scenario's flood: of every 10 calls, 7 Gets,
// 2 Lists selecting none of fairObjects, 1 Create of data.
func mixedFlood(data string) floodCall {
	return func(ctx context.Context, conn *grpc.ClientConn, round, g, seq int) error {
		cms := corev1.NewConfigMapsClient(conn)
		var err error
		switch seq % 10 {
		case 0:
			_, err = cms.Create(ctx, configMap(fairWritesNS, fmt.Sprintf("f-%d-%03d-%09d", round, g, seq), data))
		case 1, 2:
			_, err = cms.List(ctx, &metav1.ListOptions{Namespace: fairFloodNS, LabelSelector: "absent"})
		default:
			_, err = cms.Get(ctx, &metav1.GetRequest{Namespace: fairFloodNS, Name: objectName("o-", seq%fairObjects)})
		}
		return err
	}
}

func newFlooder(f *fairServer, callers int, call floodCall) (*flooder, error) {
	fl := &flooder{callers: callers, call: call}
	// The flooder uses Skiff's Go client as every component does: it waits
	// the retry hint of a refusal; the inner interceptor counts refusals.
	count := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if status.Code(err) == codes.ResourceExhausted {
			fl.refused.Add(1)
		}
		return err
	})
	for range fairFloodConn {
		c, err := f.dialAs("flooder", append(client.RetryThrottled(), count)...)
		if err != nil {
			closeAll(fl.conns)
			return nil, err
		}
		fl.conns = append(fl.conns, c)
	}
	return fl, nil
}

func (fl *flooder) close() { closeAll(fl.conns) }

// start launches the goroutines; stop ends them.
func (fl *flooder) start(ctx context.Context) error {
	ctx, fl.cancel = context.WithCancel(ctx)
	fl.started = time.Now()
	fl.round++
	for g := range fl.callers {
		conn, round := fl.conns[g%len(fl.conns)], fl.round
		fl.wg.Add(1)
		go func() {
			defer fl.wg.Done()
			for seq := 0; ctx.Err() == nil; seq++ {
				err := fl.call(ctx, conn, round, g, seq)
				switch {
				case err == nil:
					fl.served.Add(1)
				case ctx.Err() != nil:
				case apierrors.IsTooManyRequests(err):
					// Refused after the client's retries: go on flooding.
				default:
					fl.errOnce.Do(func() { fl.err = err })
					return
				}
			}
		}()
	}
	return nil
}

func (fl *flooder) stop() (time.Duration, error) {
	fl.elapsed += time.Since(fl.started)
	fl.cancel()
	fl.wg.Wait()
	return 0, fl.err
}
