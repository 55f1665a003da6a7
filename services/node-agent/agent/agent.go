package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/promutil"
	"skiff.dev/internal/workqueue"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	nodev1 "skiff.dev/proto/node/v1"
	"skiff.dev/services/node-agent/cri"
	"skiff.dev/services/node-agent/network"
)

// Agent is one node's agent. New builds it, Run runs it.
type Agent struct {
	cfg     Config
	log     *zap.Logger
	m       *metrics
	machine machine

	rt         *cri.Client
	obs        *observer
	usage      *usageSampler // NodeAgent.Usage's samples
	pods       *informer.Informer[*corev1.Pod]
	podClient  *client.Resource[*corev1.Pod, *corev1.PodList]
	nodes      *client.Resource[*corev1.Node, *corev1.NodeList]
	leases     *client.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]
	sources    sources     // ConfigMaps and Secrets, from the API
	tokens     *tokenCache // serviceAccountToken projections' tokens
	serviceEnv *serviceEnvCache
	ctrl       *controller.Controller
	delay      *delayer
	prober     *prober
	pleg       *pleg
	net        *network.Manager // nil unless Config.ManagePodNetwork
	local      *localVolumes    // deleted local-path volumes' cleanup
	eviction   *evictionManager // memory pressure (eviction.go)
	statusKick chan struct{}    // a node status sync now
	recorder   events.Recorder
	bcast      *events.Broadcaster // nil when Config.Recorder was given

	crashBackoff *backoff
	pullBackoff  *backoff
	starts       chan struct{} // a token per sync creating or starting (nil: no bound)

	registered atomic.Bool

	// runtimeClass reads a RuntimeClass (a pod's runtimeClassName).
	runtimeClass runtimeClassGetter

	mu             sync.Mutex
	runtimeName    string // from Version: the containerID scheme
	runtimeVersion string
	runtimeStatus  *runtimeapi.RuntimeStatus
	runtimeErr     error
	nodeUID        string
	nodeConds      []*corev1.NodeCondition
	nodeReported   time.Time
	lease          *coordinationv1.Lease
	firstSeen      map[string]time.Time     // by pod uid, until the pod runs
	lastStatus     map[string]writtenStatus // by pod uid: the status last written
	failures       map[string]podFailure    // by pod uid: evictions to finish (eviction.go)

	// networkWasReady: the network was ready at the last status check.
	networkWasReady bool
}

// New builds an agent from cfg: clients, the pods informer (pods bound to
// the node), the sync runner and the prober. Nothing runs until Run.
func New(cfg Config) (*Agent, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	a := &Agent{
		cfg:          cfg,
		log:          cfg.Logger.With(zap.String("node", cfg.NodeName)),
		m:            newMetrics(cfg.Registerer),
		machine:      readMachine(cfg.NodeIP, cfg.Hostname, *cfg.hostFiles),
		rt:           cri.New(cfg.Runtime, cri.Options{Metrics: cri.NewMetrics(cfg.Registerer), Timeout: cfg.RuntimeTimeout}),
		podClient:    client.Pods(cfg.API),
		nodes:        client.Nodes(cfg.API),
		leases:       client.Leases(cfg.API),
		crashBackoff: newBackoff(cfg.CrashLoopBackOff, cfg.CrashLoopBackOffMax),
		pullBackoff:  newBackoff(cfg.ImagePullBackOff, cfg.ImagePullBackOffMax),
		firstSeen:    map[string]time.Time{},
		lastStatus:   map[string]writtenStatus{},
		failures:     map[string]podFailure{},
		statusKick:   make(chan struct{}, 1),
	}
	if cfg.ManagePodNetwork {
		n, err := network.New(network.Config{
			NodeName: cfg.NodeName, API: cfg.API, ConfDir: cfg.CNIConfDir, ClusterCIDR: cfg.ClusterCIDR,
			Router: cfg.Router, Backend: cfg.PodNetworkBackend, VXLAN: cfg.VXLAN,
			OnReady: a.podNetworkReady, Logger: a.log, Registerer: cfg.Registerer,
		})
		if err != nil {
			return nil, fmt.Errorf("pod network: %w", err)
		}
		a.net = n
	}
	if cfg.MaxParallelStarts > 0 {
		a.starts = make(chan struct{}, cfg.MaxParallelStarts)
	}
	cms, secrets := client.ConfigMaps(cfg.API), client.Secrets(cfg.API)
	claims, pvs := client.PersistentVolumeClaims(cfg.API), client.PersistentVolumes(cfg.API)
	a.sources = sources{
		configMap: func(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) { return cms.Get(ctx, ns, name) },
		secret:    func(ctx context.Context, ns, name string) (*corev1.Secret, error) { return secrets.Get(ctx, ns, name) },
		claim: func(ctx context.Context, ns, name string) (*corev1.PersistentVolumeClaim, error) {
			return claims.Get(ctx, ns, name)
		},
		volume: func(ctx context.Context, _, name string) (*corev1.PersistentVolume, error) {
			return pvs.Get(ctx, "", name)
		},
	}
	a.tokens = &tokenCache{source: cfg.TokenSource, now: cfg.Clock.Now}
	a.serviceEnv = newServiceEnvCache(client.Services(cfg.API), cfg.Clock.Now)
	runtimeClasses := client.RuntimeClasses(cfg.API)
	a.runtimeClass = func(ctx context.Context, name string) (*nodev1.RuntimeClass, error) {
		return runtimeClasses.Get(ctx, "", name)
	}
	a.obs = newObserver(a.rt)
	a.usage = &usageSampler{read: a.readStats, clock: cfg.Clock, window: cfg.UsageWindow}
	promutil.MustRegister(cfg.Registerer, newStatsCollector(a))
	a.recorder = cfg.Recorder
	if a.recorder == nil {
		b, err := events.NewBroadcaster(events.Config{
			Client: client.Events(cfg.API), Component: "kubelet", Host: cfg.NodeName,
			Logger: a.log.Named("events"), Registerer: cfg.Registerer,
		})
		if err != nil {
			return nil, err
		}
		a.bcast, a.recorder = b, b.NewRecorder("")
	}
	a.pods = informer.New(informer.FromClient(a.podClient), informer.Options{
		ListOptions: &metav1.ListOptions{FieldSelector: "spec.nodeName=" + cfg.NodeName},
		Logger:      a.log.Named("informer"),
	})
	a.ctrl = controller.New(controller.ReconcileFunc(a.syncPod), controller.Options{
		Name: "node-agent", Workers: cfg.Workers, Logger: a.log, Registerer: cfg.Registerer,
		RateLimiter: workqueue.NewItemExponentialFailureRateLimiter[string](10*time.Millisecond, 30*time.Second),
	})
	a.local = newLocalVolumes(a)
	a.eviction = newEvictionManager(a)
	a.delay = newDelayer(cfg.Clock, a.ctrl.Enqueue)
	a.prober = newProber(newProbeRunner(a.rt, cfg.ProbeDial), a.ctrl.Enqueue, a.recorder, a.log.Named("prober"))
	a.pleg = newPLEG(a)
	a.pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd: func(p *corev1.Pod) {
			a.seen(p)
			a.ctrl.Enqueue(informer.Key(p))
		},
		OnUpdate: func(old, cur *corev1.Pod) {
			if needsSync(old, cur) || a.changedByOthers(cur) {
				a.ctrl.Enqueue(informer.Key(cur))
			}
		},
		OnDelete: func(p *corev1.Pod) { a.ctrl.Enqueue(informer.Key(p)) },
	})
	return a, nil
}

// needsSync says whether a pod's change matters to the agent: its spec
// (generation), its deletion, or a new pod under the same name. Changes
// of status (the agent's own writes, mostly) do not.
func needsSync(old, cur *corev1.Pod) bool {
	om, cm := old.GetMetadata(), cur.GetMetadata()
	return om.GetUid() != cm.GetUid() || om.GetGeneration() != cm.GetGeneration() ||
		!proto.Equal(om.GetDeletionTimestamp(), cm.GetDeletionTimestamp()) ||
		om.GetDeletionGracePeriodSeconds() != cm.GetDeletionGracePeriodSeconds() ||
		!proto.Equal(old.GetSpec(), cur.GetSpec())
}

// seen records when the agent first saw a pod that has not started yet.
func (a *Agent) seen(p *corev1.Pod) {
	if podRunning(p.GetStatus()) || p.GetStatus().GetPhase() == "Succeeded" || p.GetStatus().GetPhase() == "Failed" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.firstSeen[p.GetMetadata().GetUid()]; !ok {
		a.firstSeen[p.GetMetadata().GetUid()] = a.cfg.Clock.Now()
	}
}

// RegisterServices adds the agent's gRPC service (NodeAgent: logs and
// usage) to s.
func (a *Agent) RegisterServices(s *grpc.Server) {
	nodev1.RegisterNodeAgentServer(s, &nodeAgentServer{a: a})
}

// Ready is nil once the node is registered and the pods are listed.
func (a *Agent) Ready() error {
	if !a.registered.Load() {
		return errors.New("node not registered yet")
	}
	if !a.pods.HasSynced() {
		return errors.New("pods not listed yet")
	}
	return nil
}

// Pods is the agent's informer of the pods bound to its node (read-only
// objects), for tests.
func (a *Agent) Pods() *informer.Informer[*corev1.Pod] { return a.pods }

// Run connects to the runtime (Version, then Status), registers the node,
// lists its pods, and then syncs pods, relists the runtime, renews the
// Lease and keeps the node's status until ctx ends. It returns nil then,
// or an error if ctx ended before the node could be registered.
func (a *Agent) Run(ctx context.Context) error {
	var bg sync.WaitGroup
	defer bg.Wait()
	if a.bcast != nil {
		bg.Go(func() { a.bcast.Run(ctx) })
		defer a.bcast.Shutdown()
	}
	if err := retry(ctx, time.Second, a.log, "connecting to the container runtime", a.connect); err != nil {
		return err
	}
	if err := retry(ctx, time.Second, a.log, "registering the node", a.register); err != nil {
		return err
	}
	a.registered.Store(true)

	run, cancel := context.WithCancel(ctx)
	defer cancel()
	bg.Go(func() { a.pods.Run(run) })
	bg.Go(func() { a.local.run(run) })
	if a.net != nil {
		bg.Go(func() { a.net.Run(run) })
	}
	if !informer.WaitForSync(run, a.pods) {
		return fmt.Errorf("pods informer: %w", run.Err())
	}
	a.log.Info("pods listed", zap.Int("pods", a.pods.Store().Len()))

	a.prober.start(run)
	defer a.prober.wait()
	a.delay.start(run)
	bg.Go(func() { _ = a.ctrl.Run(run) })
	bg.Go(func() { every(run, a.cfg.RelistPeriod, a.log, "relisting the runtime", a.pleg.relist) })
	bg.Go(func() { a.eviction.run(run) })
	bg.Go(func() { every(run, a.cfg.VolumeSyncPeriod, a.log, "", a.refreshVolumes) })
	bg.Go(func() { every(run, a.cfg.LeaseRenewInterval, a.log, "renewing the node lease", a.renewLease) })
	bg.Go(func() {
		everyOr(run, a.cfg.NodeStatusUpdatePeriod, a.statusKick, a.log, "updating the node status", a.syncNodeStatus)
	})
	bg.Go(func() {
		every(run, time.Minute, a.log, "", func(context.Context) error {
			now := a.cfg.Clock.Now()
			a.crashBackoff.gc(now)
			a.pullBackoff.gc(now)
			return nil
		})
	})
	<-ctx.Done()
	return nil
}

// connect asks the runtime its version and status.
func (a *Agent) connect(ctx context.Context) error {
	v, err := a.rt.Version(ctx)
	if err != nil {
		return err
	}
	st, err := a.rt.Status(ctx)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.runtimeName, a.runtimeVersion = v.GetRuntimeName(), v.GetRuntimeVersion()
	a.mu.Unlock()
	a.setRuntimeStatus(st, nil)
	a.log.Info("container runtime", zap.String("name", v.GetRuntimeName()), zap.String("version", v.GetRuntimeVersion()),
		zap.String("apiVersion", v.GetRuntimeApiVersion()), zap.String("ready", readyCondition(st, nil).GetMessage()))
	return nil
}

func (a *Agent) setRuntimeStatus(st *runtimeapi.RuntimeStatus, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.runtimeStatus, a.runtimeErr = st, err
}

// networkProblem is why pods off the host network cannot start now, or "".
func (a *Agent) networkProblem() string {
	if p := a.podNetworkProblem(); p != "" {
		return p
	}
	a.mu.Lock()
	st, err := a.runtimeStatus, a.runtimeErr
	a.mu.Unlock()
	if err != nil {
		return fmt.Sprintf("container runtime is down: %v", err)
	}
	for _, c := range st.GetConditions() {
		if c.GetType() == runtimeapi.NetworkReady && !c.GetStatus() {
			return fmt.Sprintf("container runtime network not ready: NetworkReady=false reason:%s message:%s", c.GetReason(), c.GetMessage())
		}
	}
	return ""
}

func (a *Agent) scheme() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.runtimeName
}

// retry calls fn until it succeeds, every period, logging failures; it
// returns ctx's error if ctx ends first.
func retry(ctx context.Context, period time.Duration, log *zap.Logger, what string, fn func(context.Context) error) error {
	for {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		log.Warn(what+" failed, retrying", zap.Error(err))
		t := time.NewTimer(period)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// every calls fn now and then every period until ctx ends, logging its
// failures (when what is set).
func every(ctx context.Context, period time.Duration, log *zap.Logger, what string, fn func(context.Context) error) {
	everyOr(ctx, period, nil, log, what, fn)
}

// everyOr is every, also calling fn whenever kick receives.
func everyOr(ctx context.Context, period time.Duration, kick <-chan struct{}, log *zap.Logger, what string, fn func(context.Context) error) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if err := fn(ctx); err != nil && ctx.Err() == nil && what != "" {
			log.Warn(what+" failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
	}
}

// delayer enqueues a key after a delay on the agent's clock (the crash
// and pull backoffs), one timer per key and earliest deadline.
type delayer struct {
	clock   workqueue.Clock
	enqueue func(string)

	mu      sync.Mutex
	ctx     context.Context
	pending map[string]time.Time
}

func newDelayer(clock workqueue.Clock, enqueue func(string)) *delayer {
	return &delayer{clock: clock, enqueue: enqueue, pending: map[string]time.Time{}}
}

func (d *delayer) start(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ctx = ctx
}

// after enqueues key once delay has passed (unless an earlier enqueue of
// it is pending).
func (d *delayer) after(key string, delay time.Duration) {
	deadline := d.clock.Now().Add(delay)
	d.mu.Lock()
	ctx := d.ctx
	if p, ok := d.pending[key]; ctx == nil || (ok && !deadline.Before(p)) {
		d.mu.Unlock()
		return
	}
	d.pending[key] = deadline
	t := d.clock.NewTimer(delay)
	d.mu.Unlock()
	go func() {
		select {
		case <-t.C():
			d.mu.Lock()
			if d.pending[key].Equal(deadline) {
				delete(d.pending, key)
			}
			d.mu.Unlock()
			d.enqueue(key)
		case <-ctx.Done():
			t.Stop()
		}
	}()
}
