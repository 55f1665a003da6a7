package scenarios

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/vishvananda/netns"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/knftables"

	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
	svcproxy "skiff.dev/services/node-agent/proxy"
)

// The service proxy figure: one full sync of the node agent's nftables
// table (services/node-agent/proxy) in a network namespace of its own.
var (
	figServicesSync = Figure{Name: "services.sync_1000_ms", Unit: "ms", Target: AtMost(500)}
)

const (
	servicesCount     = 1000
	servicesEndpoints = 10
	servicesRuns      = 3
)

func servicesScenario() *Scenario {
	return &Scenario{
		Name: "services",
		Summary: "the node agent's service proxy writes its whole nftables table for 1,000 Services x 10 endpoints " +
			"(NodePort, one port each) into a real kernel in a network namespace of its own (root needed): median of 3 agent starts",
		Figures: []Figure{figServicesSync},
		Run:     runServices,
	}
}

func runServices(ctx context.Context, env *Env, rs *Results) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the services scenario programs nftables in a network namespace: root needed")
	}
	nft, closeKernel, err := netnsNFTables()
	if err != nil {
		return err
	}
	defer closeKernel()

	services, epSlices := servicesObjects(servicesCount, servicesEndpoints)
	cfg := svcproxy.Config{
		NodeName:    "bench-node-0",
		NodeIPs:     []netip.Addr{netip.MustParseAddr("192.168.50.1")},
		ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16"),
		NFTables:    nft,
		Logger:      zap.NewNop(),
	}
	snap, _ := svcproxy.BuildSnapshot(services, epSlices, cfg.NodeName)
	snap.ClusterCIDR, snap.NodePortAddresses = cfg.ClusterCIDR, cfg.NodeIPs
	written := svcproxy.WriteTable(knftables.NewFake(knftables.IPv4Family, svcproxy.TableName).NewTransaction(), snap, svcproxy.Existing{})

	// Each run is what an agent does when it starts: a new Proxier writes
	// the whole table, deleting what was there in the same transaction
	// (the first run finds no table: a new node). Then the same Proxier
	// rewrites it whole once more, as its periodic resync does (every
	// chain flushed and written again, the table kept), and then syncs
	// one change (an endpoint of one Service gone: that port's chain and
	// the maps rewritten, the other chains left as they are).
	var starts, resyncs, changes []time.Duration
	var cpu time.Duration
	for run := 0; run < servicesRuns; run++ {
		p, err := svcproxy.New(cfg)
		if err != nil {
			return err
		}
		for _, s := range services {
			p.OnServiceAdd(s)
		}
		for _, s := range epSlices {
			p.OnEndpointSliceAdd(s)
		}
		p.OnInitialSync()
		for i, list := range []*[]time.Duration{&starts, &resyncs} {
			settle()
			cpu0 := cpuWithChildren()
			start := time.Now()
			err = p.Sync(ctx, true)
			took := time.Since(start)
			if err != nil {
				p.Close()
				return fmt.Errorf("sync %d.%d: %w", run+1, i+1, err)
			}
			*list = append(*list, took)
			if i == 0 {
				cpu += cpuWithChildren() - cpu0
			}
		}
		changed := proto.Clone(epSlices[run]).(*discoveryv1.EndpointSlice)
		changed.Endpoints = changed.Endpoints[1:]
		p.OnEndpointSliceUpdate(epSlices[run], changed)
		settle()
		start := time.Now()
		err = p.Sync(ctx, false)
		changes = append(changes, time.Since(start))
		p.Close()
		if err != nil {
			return fmt.Errorf("sync %d.3: %w", run+1, err)
		}
		env.logf("services: run %d: start %v, resync %v, one change %v", run+1, starts[run], resyncs[run], changes[run])
	}
	slices.Sort(starts)
	slices.Sort(resyncs)
	slices.Sort(changes)
	rs.Add(figServicesSync, ms(starts[len(starts)/2]), fmt.Sprintf(
		"median of %d syncs of a starting agent (the table deleted and written whole in one nft transaction); "+
			"a running agent's full resync (every chain flushed and rewritten, table kept) median %.0f ms, its sync of one changed Service %.0f ms; "+
			"%d rules, %d map/set elements, %d chains; CPU %.0f ms per start sync (this process and nft)",
		len(starts), ms(resyncs[len(resyncs)/2]), ms(changes[len(changes)/2]), written.Rules, written.Elements, len(written.Chains)+12, ms(cpu/servicesRuns)))
	return nil
}

// cpuWithChildren is the CPU this process and its waited-for children
// (the nft processes) have used.
func cpuWithChildren() time.Duration {
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		return 0
	}
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
}

// netnsNFTables is nftables in a new network namespace of its own (root
// needed) and what frees them.
func netnsNFTables() (knftables.Interface, func(), error) {
	ns, err := newNetns()
	if err != nil {
		return nil, nil, err
	}
	th, err := svcproxy.NewNetnsThread(ns)
	if err != nil {
		ns.Close()
		return nil, nil, err
	}
	free := func() { th.Close(); ns.Close() }
	nft, err := svcproxy.NewNFTablesIn(th)
	if err != nil {
		free()
		return nil, nil, fmt.Errorf("nft in a network namespace of its own: %w", err)
	}
	return nft, free, nil
}

// newNetns makes a network namespace (freed when the handle is closed)
// without moving this process into it.
func newNetns() (netns.NsHandle, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return 0, err
	}
	defer orig.Close()
	ns, err := netns.New()
	if err != nil {
		return 0, fmt.Errorf("creating a network namespace: %w", err)
	}
	if err := netns.Set(orig); err != nil {
		ns.Close()
		return 0, fmt.Errorf("back to the original network namespace: %w", err)
	}
	return ns, nil
}

// servicesObjects makes n NodePort Services (10.96.x.y:80, nodePorts from
// 30000) with one EndpointSlice of eps ready endpoints each, spread over
// 10 nodes.
func servicesObjects(n, eps int) ([]*corev1.Service, []*discoveryv1.EndpointSlice) {
	var services []*corev1.Service
	var slices []*discoveryv1.EndpointSlice
	for i := range n {
		name := fmt.Sprintf("svc-%04d", i)
		services = append(services, &corev1.Service{
			Metadata: &metav1.ObjectMeta{Namespace: "bench", Name: name},
			Spec: &corev1.ServiceSpec{
				Type: "NodePort", ClusterIp: fmt.Sprintf("10.96.%d.%d", i/250, i%250+1),
				Ports: []*corev1.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, NodePort: int32(30000 + i),
					TargetPort: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 8080}}}},
			},
		})
		sl := &discoveryv1.EndpointSlice{
			Metadata:    &metav1.ObjectMeta{Namespace: "bench", Name: name + "-abcde", Labels: map[string]string{svcproxy.LabelServiceName: name}},
			AddressType: "IPv4",
			Ports:       []*discoveryv1.EndpointPort{{Name: proto.String("http"), Protocol: proto.String("TCP"), Port: proto.Int32(8080)}},
		}
		for j := range eps {
			k := i*eps + j
			sl.Endpoints = append(sl.Endpoints, &discoveryv1.Endpoint{
				Addresses:  []string{fmt.Sprintf("10.244.%d.%d", k/250, k%250+2)},
				Conditions: &discoveryv1.EndpointConditions{Ready: proto.Bool(true), Serving: proto.Bool(true), Terminating: proto.Bool(false)},
				NodeName:   proto.String(fmt.Sprintf("bench-node-%d", j)),
			})
		}
		slices = append(slices, sl)
	}
	return services, slices
}
