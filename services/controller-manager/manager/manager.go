package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/client"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/leaderelection"
	"skiff.dev/internal/workqueue"
)

// A Controller is what the manager runs: built from a Context (asking for
// informers and registering handlers only), then Run until ctx ends.
type Controller interface {
	Run(ctx context.Context) error
}

// Builder builds one named controller from the shared context and the
// manager's configuration.
type Builder func(mc *Context, cfg *Config) Controller

// Config is the manager's configuration (flags of skiff-controller-manager).
type Config struct {
	// Controllers chooses which controllers run: "*" for every one enabled
	// by default, a name to add one, "-name" to remove one.
	Controllers []string
	// Workers per controller name (the --concurrent-*-syncs flags); absent
	// names use the controller's default.
	Workers map[string]int

	// LeaderElect runs the controllers only while holding the Lease
	// LeaderElection.Lock; losing it stops all work at once and Run returns
	// leaderelection's error.
	LeaderElect    bool
	LeaderElection leaderelection.Config

	// Controller-specific settings.
	NodeMonitorGracePeriod   time.Duration
	DefaultTolerationSeconds int64
	ClusterCIDR              string        // "": nodeipam's default
	NodeCIDRMaskSize         int           // 0: nodeipam's default
	ResourceQuotaSyncPeriod  time.Duration // 0: resourcequota's default
	TerminatedPodGCThreshold int           // 0: podgc never deletes terminated pods
	MaxEndpointsPerSlice     int           // 0: endpointslice's default
	// DefaultStorageClass is the StorageClass the local-path provisioner
	// makes at start when it is missing ("": none).
	DefaultStorageClass        string
	EndpointUpdatesBatchPeriod time.Duration // 0: no delay
	// RootCA is the CA bundle root-ca-cert-publisher publishes as
	// kube-root-ca.crt (nil: it publishes nothing and says so).
	RootCA []byte
	// ClusterSigningCertFile and ClusterSigningKeyFile are the CA the
	// csrsigning controller signs approved CSRs with ("": it idles);
	// ClusterSigningDuration is the longest certificate it issues (0:
	// its default, a year).
	ClusterSigningCertFile, ClusterSigningKeyFile string
	ClusterSigningDuration                        time.Duration
	// API is how the program reaches the apiserver, for what is no gRPC
	// call: the csrapproving controller's SubjectAccessReviews, which the
	// HTTP API serves.
	API client.Config

	// Resync replays every cached object to the controllers at this period.
	Resync time.Duration

	Logger     *zap.Logger
	Registerer prometheus.Registerer
}

// Manager runs the chosen controllers.
type Manager struct {
	cfg      Config
	conn     grpc.ClientConnInterface
	builders map[string]Builder
	chosen   []string

	qm     *workqueue.Metrics
	im     *informer.Metrics
	synced atomic.Bool
}

// New checks cfg against the catalogue of builders and returns a manager.
// defaults lists the controllers "*" stands for.
func New(conn grpc.ClientConnInterface, cfg Config, builders map[string]Builder, defaults []string) (*Manager, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	chosen, err := Choose(cfg.Controllers, builders, defaults)
	if err != nil {
		return nil, err
	}
	for name, n := range cfg.Workers {
		if _, ok := builders[name]; !ok {
			return nil, fmt.Errorf("workers for %q: no such controller (known: %s)", name, strings.Join(names(builders), ", "))
		}
		if n < 1 {
			return nil, fmt.Errorf("workers for %q: %d, must be at least 1", name, n)
		}
	}
	return &Manager{
		cfg: cfg, conn: conn, builders: builders, chosen: chosen,
		qm: workqueue.NewMetrics(cfg.Registerer),
		im: informer.NewMetrics(cfg.Registerer),
	}, nil
}

// Controllers returns the names of the controllers that run.
func (m *Manager) Controllers() []string { return slices.Clone(m.chosen) }

// Synced reports whether the controllers' informers have synced (false
// while waiting for leadership).
func (m *Manager) Synced() bool { return m.synced.Load() }

// Choose resolves a --controllers list: "*" is every default, "name" adds
// one, "-name" removes one. Unknown names are an error naming them.
func Choose(list []string, builders map[string]Builder, defaults []string) ([]string, error) {
	if len(list) == 0 {
		list = []string{"*"}
	}
	set := map[string]bool{}
	var unknown []string
	for _, item := range list {
		item = strings.TrimSpace(item)
		switch {
		case item == "*":
			for _, d := range defaults {
				set[d] = true
			}
		case strings.HasPrefix(item, "-"):
			if _, ok := builders[item[1:]]; !ok {
				unknown = append(unknown, item[1:])
			}
			set[item[1:]] = false
		case item == "":
		default:
			if _, ok := builders[item]; !ok {
				unknown = append(unknown, item)
			}
			set[item] = true
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("--controllers: unknown controller(s) %s (known: %s)", strings.Join(unknown, ", "), strings.Join(names(builders), ", "))
	}
	var out []string
	for name, on := range set {
		if on {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, errors.New("--controllers: no controller left to run")
	}
	return out, nil
}

func names(builders map[string]Builder) []string {
	out := make([]string, 0, len(builders))
	for n := range builders {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Run runs the controllers until ctx ends (nil) or, with leader election,
// until the lease is lost (an error: the process should exit and start
// again as a candidate).
func (m *Manager) Run(ctx context.Context) error {
	b, err := events.NewBroadcaster(events.Config{
		Client: client.Events(m.conn), Component: "controller-manager",
		Logger: m.cfg.Logger.Named("events"), Registerer: m.cfg.Registerer,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); b.Run(ctx) }()
	defer wg.Wait()
	defer cancel()

	if !m.cfg.LeaderElect {
		return m.runControllers(ctx, b)
	}
	le := m.cfg.LeaderElection
	if le.Client == nil {
		le.Client = client.Leases(m.conn)
	}
	if le.Logger == nil {
		le.Logger = m.cfg.Logger.Named("leaderelection")
	}
	if le.Registerer == nil {
		le.Registerer = m.cfg.Registerer
	}
	var runErr error
	err = leaderelection.Run(ctx, le, func(lctx context.Context) {
		runErr = m.runControllers(lctx, b)
	})
	if err != nil {
		return err
	}
	return runErr
}

// runControllers builds every chosen controller on a fresh shared context,
// starts the informers and runs the controllers until ctx ends.
func (m *Manager) runControllers(ctx context.Context, b *events.Broadcaster) error {
	log := m.cfg.Logger
	mc := &Context{
		Conn:         m.conn,
		Informers:    informer.NewFactory(informer.FactoryOptions{Resync: m.cfg.Resync, Logger: log.Named("informer"), Metrics: m.im}),
		Recorder:     b.NewRecorder,
		Logger:       log,
		Registerer:   m.cfg.Registerer,
		QueueMetrics: m.qm,
		Clock:        workqueue.RealClock(),
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()

	ctrls := make(map[string]Controller, len(m.chosen))
	for _, name := range m.chosen {
		ctrls[name] = m.builders[name](mc, &m.cfg)
	}
	mc.Informers.Start(ctx)
	defer mc.Informers.Wait()
	go func() {
		if mc.Informers.WaitForSync(ctx) {
			m.synced.Store(true)
			log.Info("informers synced")
		}
	}()
	defer m.synced.Store(false)

	errs := make(chan error, len(ctrls))
	for name, c := range ctrls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log.Info("starting controller", zap.String("controller", name))
			if err := c.Run(ctx); err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("controller %s: %w", name, err)
			}
		}()
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errs:
		log.Error("controller failed; stopping", zap.Error(err))
		return err
	}
}
