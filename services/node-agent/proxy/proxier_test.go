package proxy

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/knftables"

	"skiff.dev/internal/workqueue"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type appliedEvent struct {
	name ServicePortName
	port AppliedPort
}

type recordingConntrack struct {
	mu    sync.Mutex
	flows []StaleUDP
}

func (r *recordingConntrack) ClearUDP(f []StaleUDP) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flows = append(r.flows, f...)
	return nil
}

func fakeProxier(t *testing.T, clk workqueue.Clock) (*Proxier, *knftables.Fake, chan appliedEvent, *recordingConntrack) {
	t.Helper()
	p, fake, events, ct, _ := fakeProxierSyncs(t, clk)
	return p, fake, events, ct
}

// fakeProxierSyncs also returns a channel of the outcome of every sync
// Run makes.
func fakeProxierSyncs(t *testing.T, clk workqueue.Clock) (*Proxier, *knftables.Fake, chan appliedEvent, *recordingConntrack, chan error) {
	t.Helper()
	fake := knftables.NewFake(knftables.IPv4Family, TableName)
	events := make(chan appliedEvent, 100)
	syncs := make(chan error, 100)
	ct := &recordingConntrack{}
	p, err := New(Config{
		NodeName: "n1", NodeIPs: []netip.Addr{mustAddr(nodeIP)}, ClusterCIDR: mustPrefix("10.244.0.0/16"),
		NFTables: fake, Conntrack: ct, Clock: clk,
		OnApplied: func(n ServicePortName, p AppliedPort) { events <- appliedEvent{n, p} },
		OnSync:    func(err error) { syncs <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, fake, events, ct, syncs
}

func next(t *testing.T, events chan appliedEvent, what string) appliedEvent {
	t.Helper()
	select {
	case e := <-events:
		return e
	case <-time.After(5 * time.Second):
		t.Fatalf("no sync: %s", what)
		return appliedEvent{}
	}
}

// TestProxierRun: nothing is written before both kinds are listed; the
// first sync comes at once; a change after a quiet MinSync is applied at
// once; a change right after a sync waits until MinSync has passed.
func TestProxierRun(t *testing.T) {
	clk := workqueue.NewFakeClock(t0)
	p, fake, events, _, syncs := fakeProxierSyncs(t, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	defer func() { cancel(); <-done }()

	web := svc("default/web", "10.96.0.10", ":8080")
	p.OnServiceAdd(web)
	p.OnEndpointSliceAdd(slice("default/web", "web-a", []string{":8080"}, ep{localPod + "@n1", ""}))
	p.OnInitialSync()
	e := next(t, events, "after OnInitialSync")
	if err := <-syncs; err != nil {
		t.Fatal(err)
	}
	if len(syncs) != 0 {
		t.Errorf("%d syncs before OnInitialSync's", len(syncs))
	}
	if e.name.Name != "web" || !slices.Equal(e.port.Endpoints, addrPorts(localPod+":8080")) || !e.port.At.Equal(t0) {
		t.Errorf("first applied event %+v", e)
	}

	// A change right after: applied once MinSync has passed.
	p.OnEndpointSliceUpdate(nil, slice("default/web", "web-a", []string{":8080"}, ep{localPod + "@n1", ""}, ep{farPod + "@n2", ""}))
	clk.Step(DefaultMinSync)
	e = next(t, events, "a change MinSync after the last sync")
	<-syncs
	if !slices.Equal(e.port.Endpoints, addrPorts(localPod+":8080", farPod+":8080")) || !e.port.At.Equal(t0.Add(DefaultMinSync)) {
		t.Errorf("second applied event %+v", e)
	}

	// Long after: at once, without the clock moving.
	clk.Step(time.Minute)
	p.OnServiceDelete(web)
	e = next(t, events, "a change long after the last sync")
	<-syncs
	if !e.port.Removed {
		t.Errorf("removal event %+v", e)
	}
	if len(p.Applied()) != 0 {
		t.Errorf("applied after the removal: %v", p.Applied())
	}
	// Its chains are deleted a second later, in a transaction of their own.
	fake.RLock()
	n := 0
	for c := range fake.Table.Chains {
		if strings.Contains(c, "default/web/") {
			n++
		}
	}
	fake.RUnlock()
	if n == 0 {
		t.Fatal("the removed Service's chains are deleted at once; want flushed, deleted a second later")
	}
	clk.Step(staleChainDelay)
	select {
	case err := <-syncs:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no sync a second after the removal")
	}
	fake.RLock()
	defer fake.RUnlock()
	for c := range fake.Table.Chains {
		if strings.Contains(c, "default/web/") {
			t.Errorf("chain %s left a second after its Service went", c)
		}
	}
}

// TestDue: when the next sync starts.
func TestDue(t *testing.T) {
	p := &Proxier{cfg: Config{MinSync: time.Second, SyncPeriod: time.Hour}, stale: map[string]time.Time{}}
	if d := p.due(false); !d.IsZero() {
		t.Errorf("before the first sync: %v, want at once", d)
	}
	p.last, p.lastFull = t0.Add(time.Minute), t0
	for _, tc := range []struct {
		name  string
		dirty bool
		retry time.Duration
		stale time.Time
		want  time.Time
	}{
		{"nothing to do: the periodic resync", false, 0, time.Time{}, t0.Add(time.Hour)},
		{"a change: MinSync after the last start", true, 0, time.Time{}, t0.Add(time.Minute + time.Second)},
		{"after a failure: the backoff", false, 4 * time.Second, time.Time{}, t0.Add(time.Minute + 4*time.Second)},
		{"a change after a failure: MinSync", true, 4 * time.Second, time.Time{}, t0.Add(time.Minute + time.Second)},
		{"stale chains: a second after they were flushed", false, 0, t0.Add(time.Minute + 500*time.Millisecond), t0.Add(time.Minute + 1500*time.Millisecond)},
	} {
		p.dirty, p.retry = tc.dirty, tc.retry
		clear(p.stale)
		if !tc.stale.IsZero() {
			p.stale["x/y"] = tc.stale
		}
		if got := p.due(tc.dirty); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestProxierSkipsUnchanged: a sync whose snapshot is the one applied
// runs no transaction, unless forced.
func TestProxierSkipsUnchanged(t *testing.T) {
	p, fake, _, _ := fakeProxier(t, workqueue.NewFakeClock(t0))
	p.OnServiceAdd(svc("default/web", "10.96.0.10", ":8080"))
	p.OnInitialSync()
	ctx := context.Background()
	if err := p.Sync(ctx, true); err != nil {
		t.Fatal(err)
	}
	first := fake.LastTransaction
	if err := p.Sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	if fake.LastTransaction != first {
		t.Error("an unchanged snapshot ran a transaction")
	}
	if err := p.Sync(ctx, true); err != nil {
		t.Fatal(err)
	}
	if fake.LastTransaction == first {
		t.Error("a forced sync ran no transaction")
	}
}

// TestProxierConntrack: the flows to a removed UDP endpoint are cleared,
// on the ClusterIP and the NodePort; TCP ones are left to end themselves.
func TestProxierConntrack(t *testing.T) {
	p, _, _, ct := fakeProxier(t, workqueue.NewFakeClock(t0))
	dns := svc("kube-system/dns", "10.96.0.53", "dns:53/UDP:30053", "dns-tcp:53/TCP")
	ports := []string{"dns:53/UDP", "dns-tcp:53/TCP"}
	p.OnServiceAdd(dns)
	p.OnEndpointSliceAdd(slice("kube-system/dns", "dns-a", ports, ep{localPod + "@n1", ""}, ep{farPod + "@n2", ""}))
	p.OnInitialSync()
	ctx := context.Background()
	if err := p.Sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	p.OnEndpointSliceUpdate(nil, slice("kube-system/dns", "dns-a", ports, ep{localPod + "@n1", ""}))
	if err := p.Sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	want := []StaleUDP{
		{Addr: mustAddr("10.96.0.53"), Port: 53, Endpoint: mustAddr(farPod)},
		{Port: 30053, Endpoint: mustAddr(farPod)},
	}
	if !slices.Equal(ct.flows, want) {
		t.Errorf("cleared %v, want %v", ct.flows, want)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, TableName)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{NFTables: fake}, "Config.NodeName is required"},
		{Config{NodeName: "n1", NFTables: fake, NodeIPs: []netip.Addr{mustAddr("fd00::1")}}, `Config.NodeIPs[0] "fd00::1": not an IPv4 address`},
		{Config{NodeName: "n1", NFTables: fake, ClusterCIDR: mustPrefix("fd00::/64")}, "Config.ClusterCIDR fd00::/64: not an IPv4 range"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
