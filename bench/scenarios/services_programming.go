package scenarios

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"sigs.k8s.io/knftables"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/endpointslice"
	"skiff.dev/services/node-agent/proxy"
)

// The service programming figure: how long after a pod's Ready write the
// service proxy of every node routes to it, through the whole control
// plane (the apiserver, the endpointslice controller, each node's
// informers and proxy), as Kubernetes' network programming latency SLI
// measures it. The proxies program knftables' in-memory table (their
// applied model); the real kernel's cost is services.sync_1000_ms.
var (
	figSvcProgP99 = Figure{Name: "services.programming_p99_ms", Unit: "ms", Target: AtMost(1000)}
	figSvcProgP50 = Figure{Name: "services.programming_p50_ms", Unit: "ms"}
	figSvcProgCPU = Figure{Name: "services.programming_cpu_us_per_change", Unit: "us CPU/change"}
)

const (
	svcProgNamespace = "services-bench"
	svcProgRate      = 20 // pods made Ready per second while measuring
)

func servicesProgrammingScenario() *Scenario {
	return &Scenario{
		Name: "services.programming",
		Summary: fmt.Sprintf("SvcProgServices Services x SvcProgEndpoints endpoints (pods with IPs, Ready; 1,000 x 10) on SvcProgNodes simulated nodes (10), the real endpointslice controller and one service proxy per node (their applied model, the table's transactions built and discarded, but node 0's written to a real kernel's nftables when root; default MinSync); "+
			"SvcProgSamples pods (200) made not ready, then Ready again at %d/s: the time from each Ready write to every node's proxy routing to it", svcProgRate),
		Figures: []Figure{figSvcProgP99, figSvcProgP50, figSvcProgCPU},
		Run:     runServicesProgramming,
	}
}

// svcProgWatch records, per node and service port, since when each
// endpoint has been routed, and wakes the waiters.
type svcProgWatch struct {
	mu      sync.Mutex
	routed  map[string]map[string]map[netip.AddrPort]time.Time // node -> port -> endpoint -> since
	changed chan struct{}
}

func (w *svcProgWatch) applied(node string) func(proxy.ServicePortName, proxy.AppliedPort) {
	return func(n proxy.ServicePortName, a proxy.AppliedPort) {
		w.mu.Lock()
		defer w.mu.Unlock()
		ports := w.routed[node]
		if ports == nil {
			ports = map[string]map[netip.AddrPort]time.Time{}
			w.routed[node] = ports
		}
		old := ports[n.Name]
		now := make(map[netip.AddrPort]time.Time, len(a.Endpoints))
		for _, ep := range a.Endpoints {
			if at, ok := old[ep]; ok {
				now[ep] = at
			} else {
				now[ep] = a.At
			}
		}
		ports[n.Name] = now
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
}

// Pod e of Service s has the address 10.(100+s/250).(s%250).(e+1).
func svcProgPodIP(s, e int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(100 + s/250), byte(s % 250), byte(e + 1)})
}

// waitRouted waits until every node routes (or, with want false, no
// longer routes) endpoint e of Service s, and returns the latest time a
// node's sync did it.
func (w *svcProgWatch) waitRouted(ctx context.Context, s, e, nodes int, want bool) (time.Time, error) {
	name, ep := fmt.Sprintf("svc-%d", s), netip.AddrPortFrom(svcProgPodIP(s, e), 8080)
	for {
		w.mu.Lock()
		var last time.Time
		done := 0
		for _, ports := range w.routed {
			at, ok := ports[name][ep]
			if ok == want {
				done++
				if at.After(last) {
					last = at
				}
			}
		}
		w.mu.Unlock()
		if done == nodes {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("waiting for %d proxies to route %s %v=%v: %d did", nodes, name, ep, want, done)
		case <-w.changed:
		case <-time.After(100 * time.Millisecond): // another waiter took the wake-up
		}
	}
}

func runServicesProgramming(ctx context.Context, env *Env, rs *Results) error {
	cfg := env.Config
	svcProgServices, svcProgEndpoints, svcProgNodes, svcProgSamples := cfg.SvcProgServices, cfg.SvcProgEndpoints, cfg.SvcProgNodes, cfg.SvcProgSamples
	if svcProgServices <= 0 || svcProgEndpoints <= 0 || svcProgNodes <= 0 || svcProgSamples <= 0 {
		return fmt.Errorf("nothing to measure: %d Services x %d endpoints on %d nodes, %d samples", svcProgServices, svcProgEndpoints, svcProgNodes, svcProgSamples)
	}
	if svcProgServices > 250*156 || svcProgEndpoints > 254 {
		return fmt.Errorf("%d Services x %d endpoints: the pod addresses 10.100-255.x.y hold at most 39,000 Services of 254", svcProgServices, svcProgEndpoints)
	}
	conns, err := env.dial(4)
	if err != nil {
		return err
	}
	defer closeAll(conns)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := client.Namespaces(conns[0]).Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: svcProgNamespace}}); err != nil {
		return fmt.Errorf("namespace %s: %w", svcProgNamespace, err)
	}

	// The control plane's part: the endpointslice controller.
	mc, stopCM, err := benchManagerContext(ctx, conns[0])
	if err != nil {
		return err
	}
	defer stopCM()
	ctrl := endpointslice.New(mc, endpointslice.Options{})
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	mc.Informers.Start(ctx)
	wg.Go(func() { _ = ctrl.Run(ctx) })

	// The nodes' part: a proxy per node, on informers of its own, over
	// three connections (as processes would have their own).
	// Node 0's proxy writes a real kernel's table (a network namespace of
	// its own) when the benchmark runs as root, so its syncs' times are
	// the kernel's; the others' are their model's.
	w := &svcProgWatch{routed: map[string]map[string]map[netip.AddrPort]time.Time{}, changed: make(chan struct{}, 1)}
	kernel, closeKernel, err := svcProgKernel()
	if err != nil {
		return err
	}
	defer closeKernel()
	for n := range svcProgNodes {
		node := fmt.Sprintf("node-%d", n)
		conn := conns[1+n%3]
		f := informer.NewFactory(informer.FactoryOptions{})
		svcs := informer.For(f, client.Services(conn))
		sl := informer.For(f, client.EndpointSlices(conn))
		cfg := proxy.Config{NodeName: node, NFTables: discardTable{}, Conntrack: noConntrack{}, OnApplied: w.applied(node)}
		if n == 0 && kernel != nil {
			cfg.NFTables, cfg.NodeIPs, cfg.ClusterCIDR = kernel, []netip.Addr{netip.MustParseAddr("192.168.50.1")}, netip.MustParsePrefix("10.0.0.0/8")
		}
		p, feed, err := proxy.NewFromInformers(cfg, svcs, sl)
		if err != nil {
			return err
		}
		f.Start(ctx)
		wg.Go(func() { defer p.Close(); feed.Run(ctx) })
		wg.Go(f.Wait)
	}

	// The nodes exist (the endpointslice controller leaves out the pods
	// of a node it does not know).
	for n := range svcProgNodes {
		_, err := client.Nodes(conns[0]).Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", n)}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("node-%d: %w", n, err)
		}
	}
	env.logf("services.programming: %d Services, %d pods", svcProgServices, svcProgServices*svcProgEndpoints)
	svcs, pods := client.Services(conns[0]), client.Pods(conns[0])
	err = inParallel(ctx, 32, svcProgServices, func(ctx context.Context, s int) error {
		_, err := svcs.Create(ctx, &corev1.Service{
			Metadata: &metav1.ObjectMeta{Namespace: svcProgNamespace, Name: fmt.Sprintf("svc-%d", s)},
			Spec: &corev1.ServiceSpec{Selector: map[string]string{"svc": fmt.Sprint(s)},
				Ports: []*corev1.ServicePort{{Port: 80, TargetPort: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 8080}}}}},
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("creating Services: %w", err)
	}
	setReady := func(ctx context.Context, p *corev1.Pod, ready bool) (*corev1.Pod, error) {
		p = proto.Clone(p).(*corev1.Pod)
		status := "False"
		if ready {
			status = "True"
		}
		p.Status.Conditions = []*corev1.PodCondition{{Type: "Ready", Status: status, LastTransitionTime: timestamppb.Now()}}
		return pods.UpdateStatus(ctx, p)
	}
	all := make([]*corev1.Pod, svcProgServices*svcProgEndpoints)
	err = inParallel(ctx, 32, len(all), func(ctx context.Context, i int) error {
		s, e := i/svcProgEndpoints, i%svcProgEndpoints
		p, err := pods.Create(ctx, &corev1.Pod{
			Metadata: &metav1.ObjectMeta{Namespace: svcProgNamespace, Name: fmt.Sprintf("svc-%d-%d", s, e), Labels: map[string]string{"svc": fmt.Sprint(s)}},
			Spec: &corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%svcProgNodes),
				Containers: []*corev1.Container{{Name: "web", Image: "skiff.local/demo:v1", Ports: []*corev1.ContainerPort{{ContainerPort: 8080}}}}},
		})
		if err != nil {
			return err
		}
		p.Status = &corev1.PodStatus{Phase: "Running", PodIp: svcProgPodIP(s, e).String()}
		all[i], err = setReady(ctx, p, true)
		return err
	})
	if err != nil {
		return fmt.Errorf("creating pods: %w", err)
	}
	// Everything routed everywhere before the measurement.
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer wcancel()
	start := time.Now()
	for i := range all {
		if _, err := w.waitRouted(wctx, i/svcProgEndpoints, i%svcProgEndpoints, svcProgNodes, true); err != nil {
			return err
		}
	}
	env.logf("services.programming: %d endpoints on %d proxies after %v", len(all), svcProgNodes, time.Since(start).Round(time.Millisecond))

	// The samples: pods spread over the Services, made not ready (their
	// endpoints leave), then Ready again one after the other.
	samples := make([]int, svcProgSamples)
	for k := range samples {
		samples[k] = (k * 7919) % len(all)
	}
	for _, i := range samples {
		if all[i], err = setReady(ctx, all[i], false); err != nil {
			return err
		}
	}
	for _, i := range samples {
		if _, err := w.waitRouted(wctx, i/svcProgEndpoints, i%svcProgEndpoints, svcProgNodes, false); err != nil {
			return err
		}
	}
	settle()
	cpu0 := cpuTime()
	lat := make([]time.Duration, len(samples))
	tick := time.NewTicker(time.Second / svcProgRate)
	defer tick.Stop()
	var mwg sync.WaitGroup
	errs := make(chan error, len(samples))
	for k, i := range samples {
		<-tick.C
		p := all[i]
		mwg.Go(func() {
			t0 := time.Now()
			if _, err := setReady(ctx, p, true); err != nil {
				errs <- err
				return
			}
			at, err := w.waitRouted(wctx, i/svcProgEndpoints, i%svcProgEndpoints, svcProgNodes, true)
			if err != nil {
				errs <- err
				return
			}
			lat[k] = at.Sub(t0)
		})
	}
	mwg.Wait()
	cpu := cpuTime() - cpu0
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	slices.Sort(lat)
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	where := "every proxy's its applied model (not root: no kernel)"
	if kernel != nil {
		where = "node-0's proxy in a real kernel's nftables (its own network namespace), the others' their applied model"
	}
	note := fmt.Sprintf("%d pods made Ready at %d/s, routed by all %d proxies (%s): p50 %v, p99 %v, max %v (proxy MinSync %v)",
		len(samples), svcProgRate, svcProgNodes, where, p50.Round(time.Millisecond), p99.Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), proxy.DefaultMinSync)
	rs.Add(figSvcProgP99, ms(p99), note)
	rs.Add(figSvcProgP50, ms(p50), "")
	rs.Add(figSvcProgCPU, float64(cpu.Microseconds())/float64(len(samples)),
		fmt.Sprintf("process CPU (apiserver, controller, %d proxies' informers and syncs) during the %d changes / changes", svcProgNodes, len(samples)))
	return nil
}

// svcProgKernel is netnsNFTables for node 0's proxy; nil when the
// benchmark does not run as root.
func svcProgKernel() (knftables.Interface, func(), error) {
	if os.Geteuid() != 0 {
		return nil, func() {}, nil
	}
	return netnsNFTables()
}

// discardTable stands for a node's kernel: it accepts every transaction
// the proxy builds and keeps nothing (knftables' Fake checks each element
// against all others: quadratic at 11,000 map elements). What a proxy
// applied is its own model (OnApplied); the kernel's cost of a sync is
// services.sync_1000_ms.
type discardTable struct{}

func (discardTable) NewTransaction() *knftables.Transaction {
	return knftables.NewFake(knftables.IPv4Family, proxy.TableName).NewTransaction()
}
func (discardTable) Run(context.Context, *knftables.Transaction) error   { return nil }
func (discardTable) Check(context.Context, *knftables.Transaction) error { return nil }
func (discardTable) ListAll(context.Context) (map[string][]string, error) {
	return map[string][]string{}, nil
}
func (discardTable) List(context.Context, string) ([]string, error)               { return nil, nil }
func (discardTable) ListRules(context.Context, string) ([]*knftables.Rule, error) { return nil, nil }
func (discardTable) ListElements(context.Context, string, string) ([]*knftables.Element, error) {
	return nil, nil
}
func (discardTable) ListCounters(context.Context) ([]*knftables.Counter, error) { return nil, nil }

// noConntrack clears nothing: the proxies program no kernel.
type noConntrack struct{}

func (noConntrack) ClearUDP([]proxy.StaleUDP) error { return nil }
