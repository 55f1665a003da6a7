// Package scheduler is the scheduling loop: it watches pods and nodes,
// queues the pods without a node, and for each one, in order
// (schedule_one.go):
//
//  1. pops the next pod (package queue: priority, then arrival);
//  2. refreshes the snapshot of the cluster from the cache (only nodes
//     that changed are copied);
//  3. runs the profile's PreFilter and Filter plugins, in parallel over
//     nodes, until enough feasible nodes are found (package framework);
//  4. scores them (PreScore, Score, NormalizeScore, weights) and picks the
//     best, breaking ties at random;
//  5. assumes the pod on that node in the cache, so the next pod sees the
//     allocation at once, and runs Reserve;
//  6. binds in a goroutine (binding.go), so the next pod is scheduled
//     while the bind is in flight; a failed bind forgets the assumption
//     and requeues the pod;
//
// and explains a pod that fits nowhere (explain.go): PodScheduled=False
// and a FailedScheduling event counting, per reason, the nodes rejected.
// Informer handlers (handlers.go) only update the cache and the queue; the
// claims', volumes' and classes' (volumes.go, when a profile runs
// VolumeBinding) retry the pods VolumeBinding rejected.
//
// The package owns that loop and its metrics (metrics.go). It does not own
// leader election, flags or the metrics server (package app), nor the
// plugins, the queue or the cache themselves.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/client"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	policyv1 "skiff.dev/proto/policy/v1"
	"skiff.dev/services/scheduler/cache"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
	"skiff.dev/services/scheduler/plugins"
	"skiff.dev/services/scheduler/queue"
)

// Defaults of Config.
const (
	DefaultAssumedPodTTL = 30 * time.Second
	// DefaultMaxBindsInFlight stays within what the apiserver admits of
	// one user at once (--max-mutating-requests-inflight 200 seats per
	// priority level, a queue of 50 per user): past it binds are refused
	// with a retry hint of a second. With 512, a burst of 5,000 pods had
	// hundreds of binds refused and retried (create-to-bound p99 1.1-1.5 s,
	// 2,500-3,100 pods/s); with 128, none (p99 64-190 ms, 3,900-4,700
	// pods/s), and 128 binds in flight keep up with the API's writes.
	DefaultMaxBindsInFlight = 128
	// pluginMetricsSamplePercent of cycles time each plugin call.
	pluginMetricsSamplePercent = 10
)

// Config is what a Scheduler is built with. Every field is optional.
type Config struct {
	// Policy is the loaded policy file (config.Load); nil means the
	// defaults (config.Default).
	Policy *config.Configuration
	// Registry holds the plugins; nil means the built-in ones.
	Registry framework.Registry
	Logger   *zap.Logger
	// Registerer receives the scheduler_* metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Recorder returns the event recorder of a profile (its schedulerName
	// is the events' source). Nil: Run writes events through its own
	// events.Broadcaster.
	Recorder func(schedulerName string) events.Recorder
	// AssumedPodTTL: an assumed pod whose bind was written but never seen
	// by the watch is forgotten after this long (default 30s; negative:
	// never).
	AssumedPodTTL time.Duration
	// MaxBindsInFlight bounds the binds written concurrently (default 128);
	// the loop waits when that many are in flight.
	MaxBindsInFlight int
	// Clock drives the queue's backoff (nil: the real clock).
	Clock workqueue.Clock
	// Seed seeds tie-breaking between equally scored nodes (0: random).
	Seed uint64
}

// Scheduler places pods on nodes. Build it with New, then Run it.
type Scheduler struct {
	conn     grpc.ClientConnInterface
	cfg      Config
	log      *zap.Logger
	profiles map[string]*framework.Framework

	pods  *informer.Informer[*corev1.Pod]
	nodes *informer.Informer[*corev1.Node]
	// volumes is nil unless a profile enables VolumeBinding.
	volumes *volumeInformers
	// namespaces is nil unless a profile enables InterPodAffinity.
	namespaces *namespaceInformer
	// pdbs is nil unless a profile enables DefaultPreemption.
	pdbs      *informer.Informer[*policyv1.PodDisruptionBudget]
	nominator *nominator
	podsc     *client.Resource[*corev1.Pod, *corev1.PodList]

	queue     *queue.Queue
	cache     *cache.Cache
	snapshot  *framework.Snapshot
	metrics   *metrics
	recorder  func(string) events.Recorder
	recorders map[string]events.Recorder // per profile, set by Run

	// Used by the scheduling goroutine only.
	rand      *rand.Rand
	nextStart int

	bindSem chan struct{}
	wg      sync.WaitGroup // bind and status goroutines
	synced  chan struct{}

	startInformers sync.Once
	informersWG    sync.WaitGroup
}

// New builds a scheduler over conn: its profiles' plugins, queue, cache,
// metrics and informers (not started: Run starts them).
func New(conn grpc.ClientConnInterface, cfg Config) (*Scheduler, error) {
	if cfg.Registry == nil {
		cfg.Registry = plugins.NewRegistry()
	}
	if cfg.Policy == nil {
		known, err := plugins.Known(cfg.Registry)
		if err != nil {
			return nil, err
		}
		cfg.Policy = config.Default(known)
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.AssumedPodTTL == 0 {
		cfg.AssumedPodTTL = DefaultAssumedPodTTL
	}
	if cfg.MaxBindsInFlight <= 0 {
		cfg.MaxBindsInFlight = DefaultMaxBindsInFlight
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	p := cfg.Policy
	s := &Scheduler{
		conn:     conn,
		cfg:      cfg,
		log:      cfg.Logger,
		profiles: map[string]*framework.Framework{},
		podsc:    client.Pods(conn),
		queue: queue.New(queue.Options{
			Clock: cfg.Clock, InitialBackoff: p.PodInitialBackoff, MaxBackoff: p.PodMaxBackoff,
			MaxInUnschedulable: p.PodMaxInUnschedulablePodsDuration,
		}),
		cache:     cache.New(max(cfg.AssumedPodTTL, 0), nil),
		snapshot:  framework.NewEmptySnapshot(),
		rand:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		bindSem:   make(chan struct{}, cfg.MaxBindsInFlight),
		synced:    make(chan struct{}),
		recorder:  cfg.Recorder,
		nominator: newNominator(),
	}
	m, err := newMetrics(cfg.Registerer, s.queue, s.cache)
	if err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	s.metrics = m
	if len(p.Profiles) == 0 {
		return nil, errors.New("the scheduler config has no profile")
	}
	ilog := cfg.Logger.Named("informer")
	var volumes framework.VolumeLister
	if usesVolumeBinding(p) {
		s.volumes = newVolumeInformers(s, informer.Options{Logger: ilog, PageSize: 1000})
		volumes = s.volumes
	}
	var namespaces framework.NamespaceLister
	if usesPlugin(p, config.InterPodAffinity) {
		s.namespaces = newNamespaceInformer(s, informer.Options{Logger: ilog, PageSize: 1000})
		namespaces = s.namespaces
	}
	var pdbs framework.PDBLister
	if usesPreemption(p) {
		s.pdbs = informer.New(informer.FromClient(client.PodDisruptionBudgets(conn)), informer.Options{Logger: ilog, PageSize: 1000})
		pdbs = pdbLister{s.pdbs}
	}
	for i := range p.Profiles {
		prof := &p.Profiles[i]
		fw, err := framework.NewFramework(cfg.Registry, prof, framework.Options{
			Snapshot: s.snapshot, Conn: conn, Parallelism: p.Parallelism,
			PercentageOfNodesToScore: p.PercentageOfNodesToScore, Metrics: frameworkMetrics{m},
			Volumes: volumes, Namespaces: namespaces,
			PDBs: pdbs, Nominator: s.nominator, Preempter: s,
		})
		if err != nil {
			return nil, err
		}
		s.profiles[prof.SchedulerName] = fw
	}

	s.pods = informer.New(informer.FromClient(s.podsc), informer.Options{Logger: ilog, PageSize: 1000})
	s.nodes = informer.New(informer.FromClient(client.Nodes(conn)), informer.Options{Logger: ilog, PageSize: 1000})
	s.pods.AddHandler(informer.Handler[*corev1.Pod]{OnAdd: s.onPodAdd, OnUpdate: s.onPodUpdate, OnDelete: s.onPodDelete})
	s.nodes.AddHandler(informer.Handler[*corev1.Node]{OnAdd: s.onNodeAdd, OnUpdate: s.onNodeUpdate, OnDelete: s.onNodeDelete})
	return s, nil
}

// Profiles lists the schedulerNames this scheduler serves.
func (s *Scheduler) Profiles() []string {
	out := make([]string, 0, len(s.profiles))
	for name := range s.profiles {
		out = append(out, name)
	}
	return out
}

// Synced is closed once the informers have synced and scheduling began.
func (s *Scheduler) Synced() <-chan struct{} { return s.synced }

// StartInformers starts watching pods and nodes (and claims, volumes and
// classes when a profile runs VolumeBinding) in the background until
// ctx ends (once; later calls do nothing). A standby waiting for
// leadership calls it so that its cache and queue are warm when it takes
// over; Run calls it otherwise. WaitInformers waits for them to stop.
func (s *Scheduler) StartInformers(ctx context.Context) {
	s.startInformers.Do(func() { s.runInformers(ctx) })
}

func (s *Scheduler) runInformers(ctx context.Context) {
	for _, inf := range s.informers() {
		s.informersWG.Add(1)
		go func() { defer s.informersWG.Done(); inf.Run(ctx) }()
	}
}

// usesVolumeBinding reports whether a profile runs VolumeBinding, which
// needs the claim, volume and class informers.
func usesVolumeBinding(p *config.Configuration) bool {
	for i := range p.Profiles {
		for _, point := range config.ExtensionPoints {
			if p.Profiles[i].Enabled(point, config.VolumeBinding) {
				return true
			}
		}
	}
	return false
}

type runnableInformer interface {
	Run(ctx context.Context)
	Synced() <-chan struct{}
	HasSynced() bool
}

// informers are the scheduler's informers: pods, nodes, and the volume
// binding ones when a profile needs them.
func (s *Scheduler) informers() []runnableInformer {
	out := []runnableInformer{s.pods, s.nodes}
	if s.volumes != nil {
		out = append(out, s.volumes.claims, s.volumes.volumes, s.volumes.classes)
	}
	if s.namespaces != nil {
		out = append(out, s.namespaces.inf)
	}
	if s.pdbs != nil {
		out = append(out, s.pdbs)
	}
	return out
}

// WaitInformers waits until the informers stopped (their ctx ended).
func (s *Scheduler) WaitInformers() { s.informersWG.Wait() }

// HasSynced reports whether the informers have synced.
func (s *Scheduler) HasSynced() bool {
	for _, inf := range s.informers() {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// Run starts the informers (unless StartInformers did), waits for them to
// sync, and schedules until ctx ends; then it waits for the binds in
// flight and for informers it started, and returns nil. Run may be called
// once.
func (s *Scheduler) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer func() { cancel(); bg.Wait() }()
	goBG := func(fn func()) {
		bg.Add(1)
		go func() { defer bg.Done(); fn() }()
	}
	if s.recorder == nil {
		b, err := events.NewBroadcaster(events.Config{
			Client: client.Events(s.conn), Component: config.DefaultSchedulerName,
			Logger: s.log.Named("events"), Registerer: s.cfg.Registerer,
		})
		if err != nil {
			return err
		}
		goBG(func() { b.Run(ctx) })
		s.recorder = b.NewRecorder
	}
	s.recorders = make(map[string]events.Recorder, len(s.profiles))
	for name := range s.profiles {
		s.recorders[name] = s.recorder(name)
	}
	own := false
	s.startInformers.Do(func() { own = true; s.runInformers(ctx) })
	if own {
		defer func() { cancel(); s.informersWG.Wait() }()
	}
	var synced []interface{ Synced() <-chan struct{} }
	for _, inf := range s.informers() {
		synced = append(synced, inf)
	}
	if !informer.WaitForSync(ctx, synced...) {
		return nil
	}
	s.log.Info("informers synced; scheduling", zap.Strings("profiles", s.Profiles()),
		zap.Int("nodes", s.nodes.Store().Len()), zap.Int("pods", s.pods.Store().Len()))
	goBG(func() { s.queue.Run(ctx) })
	goBG(func() {
		s.cache.Run(ctx, time.Second, func(pi *framework.PodInfo) {
			s.metrics.expired.Inc()
			s.log.Warn("assumed pod expired: its bind was never seen", zap.String("pod", pi.Key()))
			s.queue.MoveAllToActiveOrBackoff("AssumedPodExpired")
		})
	})
	close(s.synced)
	for {
		qp, ok := s.queue.Pop()
		if !ok {
			break
		}
		s.scheduleOne(ctx, qp)
	}
	cancel()
	s.wg.Wait()
	return nil
}
