package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"sigs.k8s.io/knftables"

	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
)

// Defaults of Config.
const (
	// DefaultMinSync is the least time between the starts of two syncs.
	// A change that comes after a quiet period is applied at once; changes
	// that come faster are batched, two syncs a second at most. kube-proxy
	// waits 1 s (--min-sync-period); half of it keeps the time from a
	// pod's Ready write to every node routing to it under a second at
	// 1,000 Services x 10 endpoints (services.programming_p99_ms: 744 ms
	// at 500 ms, 1,307 ms at 1 s, 2026-11-26), for a sync of a changed
	// Service of some 105 ms at that size on the real kernel: at most a
	// fifth of a core under constant churn.
	DefaultMinSync = 500 * time.Millisecond
	// DefaultSyncPeriod is how often the table is rewritten without any
	// change, repairing what someone else did to it (kube-proxy: 1 h with
	// nftables, whose table nobody else is meant to touch).
	DefaultSyncPeriod = time.Hour
	// staleChainDelay is how long a flushed chain waits before it is
	// deleted (kube-proxy's 1 s; see Written.Stale).
	staleChainDelay = time.Second
	// maxRetry bounds the backoff after failed syncs.
	maxRetry = 30 * time.Second
)

// Config configures a Proxier. Zero fields take the defaults.
type Config struct {
	// NodeName is this node's: internalTrafficPolicy Local keeps the
	// endpoints whose nodeName it is.
	NodeName string
	// NodeIPs are the addresses NodePorts answer on (the Node's
	// InternalIPs). Empty: every local address but loopback.
	NodeIPs []netip.Addr
	// ClusterCIDR holds every pod address (the controller-manager's
	// --cluster-cidr, as the agent's --cluster-cidr): pod traffic leaving
	// it is masqueraded; traffic from outside it to a ClusterIP too.
	ClusterCIDR netip.Prefix
	// NFTables is the table's interface (knftables.NewFake in tests).
	// Nil: the nft binary, in NetnsPath's network namespace.
	NFTables knftables.Interface
	// NetnsPath is the network namespace to program ("": the agent's
	// own), used when NFTables and Conntrack are nil.
	NetnsPath string
	// Conntrack clears stale UDP conntrack entries. Nil: netlink in
	// NetnsPath's namespace, unless NFTables was given (then none).
	Conntrack ConntrackCleaner
	// MinSync is the least time between two syncs (DefaultMinSync).
	MinSync time.Duration
	// SyncPeriod is how often the table is rewritten without a change
	// (DefaultSyncPeriod).
	SyncPeriod time.Duration
	// Clock defaults to the wall clock.
	Clock workqueue.Clock
	// OnApplied, when set, is called after each successful sync for every
	// service port whose applied state changed (Removed for one that went
	// away), from the Proxier's goroutine. It must not block.
	OnApplied func(ServicePortName, AppliedPort)
	// OnSync, when set, is called after every sync Run makes (nil error:
	// the table is as the Proxier was told), from the Proxier's goroutine.
	OnSync func(error)

	Logger     *zap.Logger
	Registerer prometheus.Registerer
}

// AppliedPort is a service port as the kernel has it since a sync.
type AppliedPort struct {
	ClusterIP netip.Addr
	Port      uint16
	NodePort  uint16
	// Endpoints are where ClusterIP traffic goes, External where NodePort
	// traffic goes (the same but under internalTrafficPolicy Local).
	Endpoints, External []netip.AddrPort
	// At is when the sync that gave the port this state finished.
	At time.Time
	// Removed: the port is gone from the table (only given to OnApplied).
	Removed bool
}

func (a AppliedPort) same(b AppliedPort) bool {
	return a.ClusterIP == b.ClusterIP && a.Port == b.Port && a.NodePort == b.NodePort &&
		slices.Equal(a.Endpoints, b.Endpoints) && slices.Equal(a.External, b.External)
}

// ConntrackCleaner deletes conntrack entries of UDP flows to endpoints
// that are gone (UDP has no connection to end: without this, a client
// that keeps sending keeps reaching the removed endpoint).
type ConntrackCleaner interface {
	ClearUDP(flows []StaleUDP) error
}

// StaleUDP is a UDP destination (a ClusterIP:port, or any address at a
// NodePort when Addr is invalid) whose flows to Endpoint must end.
type StaleUDP struct {
	Addr     netip.Addr
	Port     uint16
	Endpoint netip.Addr
}

// Proxier keeps table TableName in line with the Services and
// EndpointSlices it is told about; see the package documentation.
type Proxier struct {
	cfg  Config
	nft  knftables.Interface
	ct   ConntrackCleaner
	log  *zap.Logger
	m    *metrics
	kick chan struct{}

	mu          sync.Mutex
	services    map[[2]string]*corev1.Service
	slices      map[[2]string]*discoveryv1.EndpointSlice
	initialized bool // both kinds listed once
	dirty       bool // a change since the last sync started

	// Owned by the sync loop.
	last       time.Time // when the last sync started
	lastFull   time.Time // when the last periodic or first sync started
	retry      time.Duration
	lastSnap   *Snapshot
	known      *Existing            // what the table holds; nil: unknown, rewrite it from nothing
	stale      map[string]time.Time // flushed chains, to delete after staleChainDelay
	skipReport string

	appliedMu sync.Mutex
	applied   map[ServicePortName]AppliedPort

	closers []func()
}

// New builds a Proxier. Feed it with the On* methods (or build it with
// NewFromInformers), call OnInitialSync once both kinds are listed, and
// Run it.
func New(cfg Config) (*Proxier, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("proxy: Config.NodeName is required")
	}
	for i, a := range cfg.NodeIPs {
		if !a.Is4() {
			return nil, fmt.Errorf("proxy: Config.NodeIPs[%d] %q: not an IPv4 address (the proxy programs IPv4 only)", i, a)
		}
	}
	if cfg.ClusterCIDR.IsValid() && !cfg.ClusterCIDR.Addr().Is4() {
		return nil, fmt.Errorf("proxy: Config.ClusterCIDR %s: not an IPv4 range", cfg.ClusterCIDR)
	}
	if cfg.MinSync <= 0 {
		cfg.MinSync = DefaultMinSync
	}
	if cfg.SyncPeriod <= 0 {
		cfg.SyncPeriod = DefaultSyncPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = workqueue.RealClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	p := &Proxier{
		cfg:      cfg,
		nft:      cfg.NFTables,
		ct:       cfg.Conntrack,
		log:      cfg.Logger.Named("proxy"),
		m:        newMetrics(cfg.Registerer),
		kick:     make(chan struct{}, 1),
		services: map[[2]string]*corev1.Service{},
		slices:   map[[2]string]*discoveryv1.EndpointSlice{},
		stale:    map[string]time.Time{},
		applied:  map[ServicePortName]AppliedPort{},
	}
	if p.nft == nil {
		nft, ct, closer, err := openNetns(cfg.NetnsPath)
		if err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
		p.nft, p.closers = nft, append(p.closers, closer)
		if p.ct == nil {
			p.ct = ct
		}
	}
	return p, nil
}

// NewFromInformers builds a Proxier fed by the informers (the agent's
// shared ones); Run waits for both to be listed before the first sync.
func NewFromInformers(cfg Config, services *informer.Informer[*corev1.Service], slices *informer.Informer[*discoveryv1.EndpointSlice]) (*Proxier, *InformerFeed, error) {
	p, err := New(cfg)
	if err != nil {
		return nil, nil, err
	}
	services.AddHandler(informer.Handler[*corev1.Service]{OnAdd: p.OnServiceAdd, OnUpdate: p.OnServiceUpdate, OnDelete: p.OnServiceDelete})
	slices.AddHandler(informer.Handler[*discoveryv1.EndpointSlice]{OnAdd: p.OnEndpointSliceAdd, OnUpdate: p.OnEndpointSliceUpdate, OnDelete: p.OnEndpointSliceDelete})
	return p, &InformerFeed{p: p, services: services, slices: slices}, nil
}

// InformerFeed marks a Proxier built by NewFromInformers initialized once
// its informers are listed.
type InformerFeed struct {
	p        *Proxier
	services *informer.Informer[*corev1.Service]
	slices   *informer.Informer[*discoveryv1.EndpointSlice]
}

// Run waits for both informers (run by the caller) and then for ctx to
// end, running the Proxier meanwhile.
func (f *InformerFeed) Run(ctx context.Context) {
	if !informer.WaitForSync(ctx, f.services, f.slices) {
		return
	}
	f.p.OnInitialSync()
	f.p.Run(ctx)
}

// Close releases what New opened (the namespace thread).
func (p *Proxier) Close() {
	for _, c := range p.closers {
		c()
	}
	p.closers = nil
}

func key(ns, name string) [2]string { return [2]string{ns, name} }

// OnServiceAdd and the other On* methods record a change and wake the
// sync loop. The objects are only read and kept.
func (p *Proxier) OnServiceAdd(s *corev1.Service) { p.OnServiceUpdate(nil, s) }

func (p *Proxier) OnServiceUpdate(_, s *corev1.Service) {
	p.change(func() { p.services[key(s.GetMetadata().GetNamespace(), s.GetMetadata().GetName())] = s })
}

func (p *Proxier) OnServiceDelete(s *corev1.Service) {
	p.change(func() { delete(p.services, key(s.GetMetadata().GetNamespace(), s.GetMetadata().GetName())) })
}

func (p *Proxier) OnEndpointSliceAdd(s *discoveryv1.EndpointSlice) { p.OnEndpointSliceUpdate(nil, s) }

func (p *Proxier) OnEndpointSliceUpdate(_, s *discoveryv1.EndpointSlice) {
	p.change(func() { p.slices[key(s.GetMetadata().GetNamespace(), s.GetMetadata().GetName())] = s })
}

func (p *Proxier) OnEndpointSliceDelete(s *discoveryv1.EndpointSlice) {
	p.change(func() { delete(p.slices, key(s.GetMetadata().GetNamespace(), s.GetMetadata().GetName())) })
}

// OnInitialSync says that every Service and EndpointSlice has been told:
// the first sync waits for it, so that a restarting agent never writes a
// table that lacks Services it merely has not heard of yet.
func (p *Proxier) OnInitialSync() {
	p.change(func() { p.initialized = true })
}

func (p *Proxier) change(f func()) {
	p.mu.Lock()
	f()
	p.dirty = true
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Applied returns the service ports as the kernel has them, with when
// each got its current state: the in-memory model of the last successful
// sync.
func (p *Proxier) Applied() map[ServicePortName]AppliedPort {
	p.appliedMu.Lock()
	defer p.appliedMu.Unlock()
	out := make(map[ServicePortName]AppliedPort, len(p.applied))
	for k, v := range p.applied {
		out[k] = v
	}
	return out
}

// Run syncs until ctx ends: once initialized, at once after a change when
// the last sync started MinSync ago or more (else when it has), every
// SyncPeriod without a change, after a failure again with a backoff (1 s
// doubling to 30 s), and to delete stale chains a second after they were
// flushed.
func (p *Proxier) Run(ctx context.Context) {
	for {
		now := p.cfg.Clock.Now()
		p.mu.Lock()
		ready, dirty := p.initialized, p.dirty
		p.mu.Unlock()
		var next time.Time
		if ready {
			next = p.due(dirty)
			if !next.After(now) {
				p.syncOnce(ctx, now, dirty)
				continue
			}
		}
		var timer <-chan time.Time
		var stop func() bool
		if ready {
			t := workqueue.NewTimerAt(p.cfg.Clock, next)
			timer, stop = t.C(), t.Stop
		}
		select {
		case <-ctx.Done():
			if stop != nil {
				stop()
			}
			return
		case <-p.kick:
		case <-timer:
		}
		if stop != nil {
			stop()
		}
	}
}

// due is when the next sync should start.
func (p *Proxier) due(dirty bool) time.Time {
	if p.last.IsZero() {
		return time.Time{}
	}
	next := p.lastFull.Add(p.cfg.SyncPeriod)
	earliest := p.last.Add(p.cfg.MinSync)
	if p.retry > 0 {
		next = p.last.Add(p.retry)
	}
	if dirty && earliest.Before(next) {
		next = earliest
	}
	for _, at := range p.stale {
		if t := at.Add(staleChainDelay); t.Before(next) {
			next = t
		}
	}
	if next.Before(earliest) {
		next = earliest
	}
	return next
}

// syncOnce runs one sync and records its outcome for due.
func (p *Proxier) syncOnce(ctx context.Context, now time.Time, dirty bool) {
	full := p.last.IsZero() || !now.Before(p.lastFull.Add(p.cfg.SyncPeriod))
	p.last = now
	if full {
		p.lastFull = now
	}
	err := p.Sync(ctx, full || !dirty)
	if p.cfg.OnSync != nil && ctx.Err() == nil {
		p.cfg.OnSync(err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		p.retry = min(max(2*p.retry, time.Second), maxRetry)
		p.log.Warn("service proxy sync failed", zap.Error(err), zap.Duration("retryIn", p.retry))
		return
	}
	p.retry = 0
}

// Sync builds the Snapshot of what the Proxier was told and writes the
// whole table in one transaction; with force false it skips the
// transaction when the Snapshot is the one last applied. Stale chains
// flushed a second ago or more are deleted first, in a transaction of
// their own. It is what Run calls; call it directly only when Run is not
// running.
func (p *Proxier) Sync(ctx context.Context, force bool) error {
	start := p.cfg.Clock.Now()
	p.mu.Lock()
	p.dirty = false
	svcs := make([]*corev1.Service, 0, len(p.services))
	for _, s := range p.services {
		svcs = append(svcs, s)
	}
	sls := make([]*discoveryv1.EndpointSlice, 0, len(p.slices))
	for _, s := range p.slices {
		sls = append(sls, s)
	}
	p.mu.Unlock()

	snap, skipped := BuildSnapshot(svcs, sls, p.cfg.NodeName)
	snap.ClusterCIDR = p.cfg.ClusterCIDR
	snap.NodePortAddresses = p.cfg.NodeIPs
	p.reportSkipped(skipped)

	p.deleteStale(ctx, start)
	if !force && p.known != nil && reflect.DeepEqual(snap, p.lastSnap) {
		return nil
	}
	tx := p.nft.NewTransaction()
	if p.known == nil {
		// The first sync (or the first after a failure) does not know what
		// the table holds: listing it costs more than writing it (knftables
		// lists the whole table, rules included: 4.5 s for 1,000 Services
		// of 10 endpoints, against 1.5 s to write it). It deletes the table
		// and writes it anew instead, in the same transaction: the kernel
		// switches at once, conntrack keeps the established connections;
		// the affinity sets start empty.
		tx.Add(&knftables.Table{})
		tx.Delete(&knftables.Table{})
		p.known = &Existing{}
		clear(p.stale)
	}
	ex := *p.known
	if force {
		// A periodic (or forced) sync rewrites every chain, repairing
		// what someone else may have done to them; the others leave the
		// chains whose rules are the same as they are.
		ex.Content = nil
	}
	w := WriteTable(tx, snap, ex)
	if err := p.nft.Run(ctx, tx); err != nil {
		p.m.failures.Inc()
		p.known = nil // rewrite from nothing: the table may be anything now
		return fmt.Errorf("nftables transaction (%d rules): %w", w.Rules, err)
	}
	for _, c := range w.Stale {
		if _, ok := p.stale[c]; !ok {
			p.stale[c] = start
		}
	}
	for c := range w.Chains {
		delete(p.stale, c)
	}
	ex = Existing{Exists: true, Content: w.Content}
	for c := range w.Chains {
		ex.Chains = append(ex.Chains, c)
	}
	for c := range p.stale {
		ex.Chains = append(ex.Chains, c)
	}
	for s := range w.Sets {
		ex.Sets = append(ex.Sets, s)
	}
	p.known = &ex
	p.lastSnap = snap
	end := p.cfg.Clock.Now()
	p.m.duration.Observe(end.Sub(start).Seconds())
	p.m.lastSync.Set(float64(end.UnixNano()) / 1e9)
	p.m.rules.Set(float64(w.Rules))
	p.m.servicePorts.Set(float64(len(snap.Ports)))
	p.m.endpoints.Set(float64(snap.Endpoints()))
	p.log.Debug("service proxy table synced", zap.Int("servicePorts", len(snap.Ports)), zap.Int("rules", w.Rules),
		zap.Int("unchangedChains", w.Unchanged), zap.Int("staleChains", len(w.Stale)), zap.Duration("took", end.Sub(start)))
	p.recordApplied(snap, end)
	return nil
}

// deleteStale deletes the chains flushed staleChainDelay ago or more.
func (p *Proxier) deleteStale(ctx context.Context, now time.Time) {
	tx := p.nft.NewTransaction()
	var gone []string
	for c, at := range p.stale {
		if !now.Before(at.Add(staleChainDelay)) {
			tx.Delete(&knftables.Chain{Name: c})
			gone = append(gone, c)
		}
	}
	if len(gone) == 0 {
		return
	}
	if err := p.nft.Run(ctx, tx); err != nil {
		// Left for a later sync, which lists the table again.
		p.log.Info("deleting stale chains failed, will retry", zap.Int("chains", len(gone)), zap.Error(err))
		return
	}
	for _, c := range gone {
		delete(p.stale, c)
	}
	if p.known != nil {
		p.known.Chains = slices.DeleteFunc(p.known.Chains, func(c string) bool { return slices.Contains(gone, c) })
	}
}

// recordApplied updates the applied model, tells OnApplied, and clears
// the conntrack entries of UDP flows to endpoints that are gone.
func (p *Proxier) recordApplied(snap *Snapshot, at time.Time) {
	now := make(map[ServicePortName]AppliedPort, len(snap.Ports))
	for i := range snap.Ports {
		sp := &snap.Ports[i]
		now[sp.Name] = AppliedPort{
			ClusterIP: sp.ClusterIP, Port: sp.Port, NodePort: sp.NodePort,
			Endpoints: addrs(sp.InternalEndpoints), External: addrs(sp.Endpoints),
		}
	}
	var stale []StaleUDP
	type change struct {
		name ServicePortName
		port AppliedPort
	}
	var changes []change
	p.appliedMu.Lock()
	for name, old := range p.applied {
		cur, ok := now[name]
		if name.Protocol == UDP {
			stale = append(stale, staleUDP(old, cur)...)
		}
		if !ok {
			old.Removed, old.At = true, at
			changes = append(changes, change{name, old})
			delete(p.applied, name)
		}
	}
	for name, cur := range now {
		if old, ok := p.applied[name]; ok && old.same(cur) {
			continue
		}
		cur.At = at
		p.applied[name] = cur
		changes = append(changes, change{name, cur})
	}
	p.appliedMu.Unlock()
	if p.cfg.OnApplied != nil {
		for _, c := range changes {
			p.cfg.OnApplied(c.name, c.port)
		}
	}
	if len(stale) > 0 && p.ct != nil {
		if err := p.ct.ClearUDP(stale); err != nil {
			p.log.Warn("clearing conntrack entries of removed UDP endpoints failed", zap.Error(err))
		}
	}
}

// staleUDP lists the UDP flows of old that cur no longer allows.
func staleUDP(old, cur AppliedPort) []StaleUDP {
	var out []StaleUDP
	for _, ep := range old.External {
		if slices.Contains(cur.External, ep) || slices.Contains(cur.Endpoints, ep) {
			continue
		}
		out = append(out, StaleUDP{Addr: old.ClusterIP, Port: old.Port, Endpoint: ep.Addr()})
		if old.NodePort != 0 {
			out = append(out, StaleUDP{Port: old.NodePort, Endpoint: ep.Addr()})
		}
	}
	return out
}

func addrs(eps []Endpoint) []netip.AddrPort {
	if len(eps) == 0 {
		return nil
	}
	out := make([]netip.AddrPort, len(eps))
	for i, ep := range eps {
		out[i] = ep.Addr
	}
	return out
}

// reportSkipped logs the Services left out when the list changes.
func (p *Proxier) reportSkipped(skipped []Skipped) {
	s := fmt.Sprint(skipped)
	if s == p.skipReport {
		return
	}
	p.skipReport = s
	if len(skipped) > 0 {
		p.log.Warn("Services the proxy leaves out", zap.Stringers("services", skipped))
	}
}
