package network

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
)

// Defaults of Config.
const (
	DefaultClusterCIDR = "10.244.0.0/16"
	DefaultResync      = 30 * time.Second
)

// Config configures a Manager. Zero fields take the defaults.
type Config struct {
	// NodeName is this node's: its podCIDR is configured, the others
	// routed to.
	NodeName string
	// API is a connection to the apiserver (Nodes are listed and watched).
	API grpc.ClientConnInterface
	// ConfDir is the CNI configuration directory (DefaultConfDir).
	ConfDir string
	// ClusterCIDR holds every node's pod subnet (DefaultClusterCIDR): only
	// routes to subnets inside it are ever touched.
	ClusterCIDR netip.Prefix
	// Router changes the routing table (nil: DefaultRouter, netlink).
	Router Router
	// Resync is how often everything is checked again without a change
	// (DefaultResync): a route someone removed comes back.
	Resync time.Duration
	// OnReady, when set, is called each time the pod network becomes
	// ready (the CNI configuration written), from the Manager's goroutine.
	OnReady func()

	Logger     *zap.Logger
	Registerer prometheus.Registerer
}

// Manager keeps the node's CNI configuration and its routes to the other
// nodes' pod subnets; see the package documentation.
type Manager struct {
	cfg   Config
	log   *zap.Logger
	m     *metrics
	nodes *informer.Informer[*corev1.Node]
	kick  chan struct{}

	mu      sync.Mutex
	problem string
	skipped string // the routes left out at the last sync, as logged
	outside string // the own pod CIDRs outside the cluster CIDR, as logged
}

// New builds a Manager (its Nodes informer, not started). Call Run.
func New(cfg Config) (*Manager, error) {
	if cfg.NodeName == "" || cfg.API == nil {
		return nil, errors.New("network: Config.NodeName and Config.API are required")
	}
	if cfg.ConfDir == "" {
		cfg.ConfDir = DefaultConfDir
	}
	if !cfg.ClusterCIDR.IsValid() {
		cfg.ClusterCIDR = netip.MustParsePrefix(DefaultClusterCIDR)
	}
	cfg.ClusterCIDR = cfg.ClusterCIDR.Masked()
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Router == nil {
		r, err := DefaultRouter()
		if err != nil {
			return nil, err
		}
		cfg.Router = r
	}
	m := &Manager{
		cfg:     cfg,
		log:     cfg.Logger.Named("network"),
		m:       newMetrics(cfg.Registerer),
		kick:    make(chan struct{}, 1),
		problem: "pod network not set up yet (Nodes not listed)",
	}
	m.nodes = informer.New(informer.FromClient(client.Nodes(cfg.API)), informer.Options{Logger: m.log.Named("informer")})
	poke := func(*corev1.Node) { m.poke() }
	m.nodes.AddHandler(informer.Handler[*corev1.Node]{
		OnAdd: poke,
		OnUpdate: func(old, cur *corev1.Node) {
			if routingChanged(old, cur) {
				m.poke()
			}
		},
		OnDelete: poke,
	})
	return m, nil
}

// routingChanged reports whether a node's change matters to the network:
// its pod subnets, its addresses, or a new node under the name.
func routingChanged(old, cur *corev1.Node) bool {
	return old.GetMetadata().GetUid() != cur.GetMetadata().GetUid() ||
		old.GetSpec().GetPodCidr() != cur.GetSpec().GetPodCidr() ||
		!slices.Equal(old.GetSpec().GetPodCidrs(), cur.GetSpec().GetPodCidrs()) ||
		!slices.EqualFunc(old.GetStatus().GetAddresses(), cur.GetStatus().GetAddresses(), func(a, b *corev1.NodeAddress) bool { return proto.Equal(a, b) })
}

func (m *Manager) poke() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Problem is why the pod network is not ready, or "" once the CNI
// configuration for the Node's podCIDR is written.
func (m *Manager) Problem() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.problem
}

// Nodes is the Manager's informer of every Node (read-only objects).
func (m *Manager) Nodes() *informer.Informer[*corev1.Node] { return m.nodes }

// Run lists and watches the Nodes and keeps the network in line with them
// until ctx ends: on every relevant change, every Resync, and after a
// failure again after a backoff (1 s, doubling up to Resync).
func (m *Manager) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { m.nodes.Run(ctx) })
	if !informer.WaitForSync(ctx, m.nodes) {
		return
	}
	const firstRetry = time.Second
	retry := firstRetry
	for {
		wait := m.cfg.Resync
		if err := m.Sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			m.log.Warn("pod network sync failed, retrying", zap.Error(err), zap.Duration("in", min(retry, wait)))
			wait, retry = min(retry, wait), min(2*retry, m.cfg.Resync)
		} else {
			retry = firstRetry
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-m.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// Sync brings the CNI configuration and the routes in line with the Nodes
// as the informer has them, once.
func (m *Manager) Sync(ctx context.Context) error {
	errCNI := m.syncCNI()
	errRoutes := m.syncRoutes(ctx)
	return errors.Join(errCNI, errRoutes)
}

// syncCNI writes the CNI configuration for the node's pod subnets.
func (m *Manager) syncCNI() error {
	name := m.cfg.NodeName
	self, ok := m.nodes.Store().Get(name)
	cidrs, err := PodCIDRs(self)
	var problem string
	switch {
	case !ok:
		problem = fmt.Sprintf("Node %s not registered yet", name)
	case err != nil:
		problem = fmt.Sprintf("Node %s: %v", name, err)
	case len(cidrs) == 0:
		problem = fmt.Sprintf("Node %s has no spec.podCIDR yet (the controller-manager's nodeipam controller assigns one)", name)
	}
	if problem != "" {
		m.setProblem(problem)
		return nil // not an error: the Node's next change pokes
	}
	m.warnOutside(cidrs)
	wrote, err := WriteConflist(m.cfg.ConfDir, cidrs...)
	if err != nil {
		m.m.errors.WithLabelValues(opWriteCNIConfig).Inc()
		m.setProblem("writing the CNI configuration: " + err.Error())
		return err
	}
	if wrote {
		m.log.Info("CNI configuration written", zap.String("path", filepath.Join(m.cfg.ConfDir, ConflistName)),
			zap.String("podCIDRs", joinPrefixes(cidrs)))
	}
	m.setProblem("")
	return nil
}

// warnOutside logs, once per change, own pod subnets outside the cluster
// CIDR: pods get addresses from them, but no other node routes to them.
func (m *Manager) warnOutside(cidrs []netip.Prefix) {
	var out []netip.Prefix
	for _, c := range cidrs {
		if c.Addr().Is4() == m.cfg.ClusterCIDR.Addr().Is4() && !inside(c, m.cfg.ClusterCIDR) {
			out = append(out, c)
		}
	}
	s := joinPrefixes(out)
	m.mu.Lock()
	changed := s != m.outside
	m.outside = s
	m.mu.Unlock()
	if changed && s != "" {
		m.log.Warn("this node's pod CIDR lies outside --cluster-cidr: other nodes will not route to its pods",
			zap.String("podCIDRs", s), zap.Stringer("clusterCIDR", m.cfg.ClusterCIDR))
	}
}

func (m *Manager) setProblem(p string) {
	m.mu.Lock()
	was := m.problem
	m.problem = p
	m.mu.Unlock()
	if p == "" {
		m.m.ready.Set(1)
	} else {
		m.m.ready.Set(0)
	}
	switch {
	case p == was:
	case p == "":
		m.log.Info("pod network ready")
		if m.cfg.OnReady != nil {
			m.cfg.OnReady()
		}
	default:
		m.log.Info("pod network not ready", zap.String("reason", p))
	}
}

// syncRoutes installs and removes routes to other nodes' pod subnets.
func (m *Manager) syncRoutes(ctx context.Context) error {
	desired, skipped := DesiredRoutes(m.nodes.Store().List(), m.cfg.NodeName, m.cfg.ClusterCIDR)
	m.logSkipped(skipped)
	current, err := m.cfg.Router.List(ctx)
	if err != nil {
		m.m.errors.WithLabelValues(opListRoutes).Inc()
		return err
	}
	replace, remove := Plan(desired, current, m.cfg.ClusterCIDR)
	var errs []error
	for _, r := range remove {
		if err := m.cfg.Router.Delete(ctx, r); err != nil {
			m.m.errors.WithLabelValues(opDeleteRoute).Inc()
			errs = append(errs, err)
			continue
		}
		m.log.Info("route removed", zap.Stringer("route", r))
	}
	failed := 0
	for _, r := range replace {
		if err := m.cfg.Router.Replace(ctx, r); err != nil {
			m.m.errors.WithLabelValues(opReplaceRoute).Inc()
			errs = append(errs, err)
			failed++
			continue
		}
		m.log.Info("route installed", zap.Stringer("route", r))
	}
	m.m.routes.Set(float64(len(desired) - failed))
	return errors.Join(errs...)
}

// logSkipped logs the routes left out when they change.
func (m *Manager) logSkipped(skipped []string) {
	s := strings.Join(skipped, "; ")
	m.mu.Lock()
	changed := s != m.skipped
	m.skipped = s
	m.mu.Unlock()
	if changed && s != "" {
		m.log.Info("routes left out", zap.Strings("reasons", skipped))
	}
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}
