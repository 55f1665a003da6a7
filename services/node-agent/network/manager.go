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
	// Backend is how the other nodes' pod subnets are reached
	// (BackendRoutes if empty).
	Backend Backend
	// VXLAN configures BackendVXLAN.
	VXLAN VXLAN
	// Overlay changes the VXLAN device and its entries, with BackendVXLAN
	// (nil: DefaultOverlay, netlink).
	Overlay Overlay
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
	cfg    Config
	log    *zap.Logger
	m      *metrics
	nodes  *informer.Informer[*corev1.Node]
	client *client.Resource[*corev1.Node, *corev1.NodeList] // the own Node's VTEP MAC is written through it
	kick   chan struct{}

	mu      sync.Mutex
	problem string
	skipped string // the routes left out at the last sync, as logged
	outside string // the own pod CIDRs outside the cluster CIDR, as logged
	device  string // the VXLAN device, as logged
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
	if cfg.Backend == "" {
		cfg.Backend = BackendRoutes
	}
	if _, err := ParseBackend(string(cfg.Backend)); err != nil {
		return nil, err
	}
	cfg.VXLAN = cfg.VXLAN.withDefaults()
	if cfg.Backend == BackendVXLAN && cfg.Overlay == nil {
		o, err := DefaultOverlay()
		if err != nil {
			return nil, err
		}
		cfg.Overlay = o
	}
	m := &Manager{
		cfg:     cfg,
		log:     cfg.Logger.Named("network"),
		m:       newMetrics(cfg.Registerer),
		kick:    make(chan struct{}, 1),
		problem: "pod network not set up yet (Nodes not listed)",
	}
	m.client = client.Nodes(cfg.API)
	m.nodes = informer.New(informer.FromClient(m.client), informer.Options{Logger: m.log.Named("informer")})
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
// its pod subnets, its addresses, its VTEP MAC, or a new node under the
// name.
func routingChanged(old, cur *corev1.Node) bool {
	return old.GetMetadata().GetUid() != cur.GetMetadata().GetUid() ||
		old.GetMetadata().GetAnnotations()[AnnVTEPMAC] != cur.GetMetadata().GetAnnotations()[AnnVTEPMAC] ||
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

// Sync brings the CNI configuration and the routes (and with
// BackendVXLAN the VXLAN device and its entries) in line with the Nodes as
// the informer has them, once. With BackendVXLAN the device comes first:
// the CNI configuration gives the pods its MTU, and is written only once
// it is up, pods having no way to the other nodes without it.
func (m *Manager) Sync(ctx context.Context) error {
	if m.cfg.Backend != BackendVXLAN {
		return errors.Join(m.syncCNI(0, ""), m.syncRoutes(ctx))
	}
	mtu, err := m.syncVXLAN(ctx)
	waiting := ""
	switch {
	case mtu == 0 && err != nil:
		waiting = fmt.Sprintf("VXLAN device %s not set up: %v", VXLANDevice, err)
	case mtu == 0:
		waiting = fmt.Sprintf("VXLAN device %s not set up: Node %s has no pod CIDR inside %s with an InternalIP of its family",
			VXLANDevice, m.cfg.NodeName, m.cfg.ClusterCIDR)
	}
	return errors.Join(m.syncCNI(mtu, waiting), err)
}

// syncCNI writes the CNI configuration for the node's pod subnets, with
// the pods' MTU unless 0, unless waiting says why not yet.
func (m *Manager) syncCNI(mtu int, waiting string) error {
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
	default:
		problem = waiting
	}
	if problem != "" {
		m.setProblem(problem)
		return nil // not an error: the Node's next change pokes
	}
	m.warnOutside(cidrs)
	wrote, err := WriteConflist(m.cfg.ConfDir, mtu, cidrs...)
	if err != nil {
		m.m.errors.WithLabelValues(opWriteCNIConfig).Inc()
		m.setProblem("writing the CNI configuration: " + err.Error())
		return err
	}
	if wrote {
		m.log.Info("CNI configuration written", zap.String("path", filepath.Join(m.cfg.ConfDir, ConflistName)),
			zap.String("podCIDRs", joinPrefixes(cidrs)), zap.Int("mtu", mtu))
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
	return m.applyRoutes(ctx, desired)
}

// applyRoutes brings the Router's routes in line with desired.
func (m *Manager) applyRoutes(ctx context.Context, desired []Route) error {
	current, err := m.cfg.Router.List(ctx)
	if err != nil {
		m.m.errors.WithLabelValues(opListRoutes).Inc()
		return err
	}
	replace, remove := Plan(desired, current, m.cfg.ClusterCIDR)
	failed, err := apply(ctx, m, "route", replace, remove, m.cfg.Router.Replace, m.cfg.Router.Delete, opReplaceRoute, opDeleteRoute)
	m.m.routes.Set(float64(len(desired) - failed))
	return err
}

// apply deletes remove, then installs replace, logging each change and
// counting each failure under its operation; it returns how many installs
// failed, and every error.
func apply[T fmt.Stringer](ctx context.Context, m *Manager, what string, replace, remove []T,
	doReplace, doDelete func(context.Context, T) error, opReplace, opDelete string) (failed int, err error) {
	var errs []error
	for _, x := range remove {
		if err := doDelete(ctx, x); err != nil {
			m.m.errors.WithLabelValues(opDelete).Inc()
			errs = append(errs, err)
			continue
		}
		m.log.Info(what+" removed", zap.Stringer(what, x))
	}
	for _, x := range replace {
		if err := doReplace(ctx, x); err != nil {
			m.m.errors.WithLabelValues(opReplace).Inc()
			errs = append(errs, err)
			failed++
			continue
		}
		m.log.Info(what+" installed", zap.Stringer(what, x))
	}
	return failed, errors.Join(errs...)
}

// syncVXLAN keeps, with BackendVXLAN, the VXLAN device, its FDB and
// neighbour entries and the routes through it in line with DesiredVXLAN,
// and the device's MAC on the own Node; it returns the device's MTU, 0
// without one. Until the node has a device (a pod subnet and an
// InternalIP) it routes nothing.
func (m *Manager) syncVXLAN(ctx context.Context) (mtu int, err error) {
	want, skipped := DesiredVXLAN(m.nodes.Store().List(), m.cfg.NodeName, m.cfg.ClusterCIDR, m.cfg.VXLAN)
	m.logSkipped(skipped)
	if !want.Device.Local.IsValid() {
		return 0, m.applyRoutes(ctx, nil)
	}
	mac, mtu, err := m.cfg.Overlay.Ensure(ctx, want.Device)
	if err != nil {
		m.m.errors.WithLabelValues(opEnsureVXLANDevice).Inc()
		return 0, err
	}
	if dev := fmt.Sprintf("%s mac %s mtu %d", want.Device, mac, mtu); m.swap(&m.device, dev) {
		m.log.Info("vxlan device ready", zap.Stringer("device", want.Device), zap.String("mac", mac), zap.Int("mtu", mtu))
	}
	errs := []error{m.publishVTEP(ctx, mac)}
	for _, t := range []struct {
		table Table
		want  []Entry
	}{{FDB, want.FDB}, {Neighbors, want.Neighbors}} {
		current, err := m.cfg.Overlay.List(ctx, t.table)
		if err != nil {
			m.m.errors.WithLabelValues("list_" + string(t.table)).Inc()
			errs = append(errs, err)
			continue
		}
		replace, remove := PlanEntries(t.table, t.want, current)
		_, err = apply(ctx, m, string(t.table), replace, remove,
			func(ctx context.Context, e Entry) error { return m.cfg.Overlay.Replace(ctx, t.table, e) },
			func(ctx context.Context, e Entry) error { return m.cfg.Overlay.Delete(ctx, t.table, e) },
			"replace_"+string(t.table), "delete_"+string(t.table))
		errs = append(errs, err)
	}
	errs = append(errs, m.applyRoutes(ctx, want.Routes))
	return mtu, errors.Join(errs...)
}

// publishVTEP writes mac as the own Node's annotation AnnVTEPMAC when the
// informer's copy has another: a merge of that one annotation into the
// Node's metadata (an Update, retried on conflict), as the agent's
// registration merges its labels and annotations.
func (m *Manager) publishVTEP(ctx context.Context, mac string) error {
	name := m.cfg.NodeName
	if n, ok := m.nodes.Store().Get(name); ok && n.GetMetadata().GetAnnotations()[AnnVTEPMAC] == mac {
		return nil
	}
	err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		cur, err := m.client.Get(ctx, "", name)
		if err != nil || cur.GetMetadata().GetAnnotations()[AnnVTEPMAC] == mac {
			return err
		}
		next := proto.Clone(cur).(*corev1.Node)
		if next.Metadata.Annotations == nil {
			next.Metadata.Annotations = map[string]string{}
		}
		next.Metadata.Annotations[AnnVTEPMAC] = mac
		_, err = m.client.Update(ctx, next)
		return err
	})
	if err != nil {
		m.m.errors.WithLabelValues(opPublishVTEPMAC).Inc()
		return fmt.Errorf("writing annotation %s=%s on Node %s: %w", AnnVTEPMAC, mac, name, err)
	}
	m.log.Info("VTEP MAC published", zap.String("annotation", AnnVTEPMAC), zap.String("mac", mac))
	return nil
}

// swap sets *field to s and reports whether it changed.
func (m *Manager) swap(field *string, s string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := *field != s
	*field = s
	return changed
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
