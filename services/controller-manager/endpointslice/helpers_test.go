package endpointslice_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/endpointslice"
	"skiff.dev/services/controller-manager/manager/managertest"
)

// patience bounds each wait for the controller to act.
const patience = 30 * time.Second

const ns = "default"

// cluster is one test's apiserver with an endpointslice controller.
type cluster struct {
	*managertest.Env
	slices   *informer.Informer[*discoveryv1.EndpointSlice]
	services *informer.Informer[*corev1.Service]
	stop     context.CancelFunc // stops the controller
	stopped  chan struct{}
}

// start starts an apiserver and runs a controller with o on it.
func start(t *testing.T, o endpointslice.Options) *cluster {
	t.Helper()
	return startOn(t, managertest.Start(t), o)
}

// startOn runs a controller with o on env, until the test ends or Stop.
func startOn(t *testing.T, env *managertest.Env, o endpointslice.Options) *cluster {
	t.Helper()
	c := &cluster{
		Env:      env,
		slices:   informer.For(env.Manager.Informers, client.EndpointSlices(env.Conn)),
		services: informer.For(env.Manager.Informers, client.Services(env.Conn)),
		stopped:  make(chan struct{}),
	}
	managertest.Watch(env, c.slices)
	managertest.Watch(env, c.services)
	ctrl := endpointslice.New(env.Manager, o)
	env.StartInformers()
	ctx, cancel := context.WithCancel(env.Ctx)
	c.stop = cancel
	env.Go(func(context.Context) {
		defer close(c.stopped)
		if err := ctrl.Run(ctx); err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	return c
}

// Stop stops the controller and waits for it.
func (c *cluster) Stop() {
	c.stop()
	<-c.stopped
}

func (c *cluster) node(t *testing.T, name, zone string) {
	t.Helper()
	n := &corev1.Node{Metadata: &metav1.ObjectMeta{Name: name}}
	if zone != "" {
		n.Metadata.Labels = map[string]string{endpointslice.LabelTopologyZone: zone}
	}
	if _, err := client.Nodes(c.Conn).Create(c.Ctx, n); err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
}

// port is a Service port; target is a number or a container port's name.
func port(name string, p int32, target any) *corev1.ServicePort {
	sp := &corev1.ServicePort{Name: name, Port: p, Protocol: "TCP"}
	switch v := target.(type) {
	case int:
		sp.TargetPort = &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: int32(v)}}
	case string:
		sp.TargetPort = &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: v}}
	}
	return sp
}

func (c *cluster) service(t *testing.T, name string, selector map[string]string, ports ...*corev1.ServicePort) *corev1.Service {
	t.Helper()
	svc, err := client.Services(c.Conn).Create(c.Ctx, &corev1.Service{
		Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"tier": "backend"}},
		Spec:     &corev1.ServiceSpec{Selector: selector, Ports: ports},
	})
	if err != nil {
		t.Fatalf("create service %s: %v", name, err)
	}
	return svc
}

// podSpec describes a test pod.
type podSpec struct {
	name     string
	labels   map[string]string
	node     string
	ip       string // "": no IP yet
	ready    bool
	ports    map[string]int32 // named container ports
	hostname string
	sub      string
	phase    string // default Running
}

// pod creates a pod on its node and writes its status (IP, phase, Ready),
// as a node agent would.
func (c *cluster) pod(t *testing.T, ps podSpec) *corev1.Pod {
	t.Helper()
	p, err := c.createPod(ps)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// pods creates pods as pod does, 8 at a time, and returns them in order.
func (c *cluster) pods(t *testing.T, specs []podSpec) []*corev1.Pod {
	t.Helper()
	out := make([]*corev1.Pod, len(specs))
	errs := make([]error, len(specs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = c.createPod(specs[i])
			}
		})
	}
	for i := range specs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func (c *cluster) createPod(ps podSpec) (*corev1.Pod, error) {
	ctr := &corev1.Container{Name: "app", Image: "demo"}
	for _, name := range slices.Sorted(maps.Keys(ps.ports)) {
		ctr.Ports = append(ctr.Ports, &corev1.ContainerPort{Name: name, ContainerPort: ps.ports[name], Protocol: "TCP"})
	}
	p, err := client.Pods(c.Conn).Create(c.Ctx, &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: ns, Name: ps.name, Labels: ps.labels},
		Spec: &corev1.PodSpec{
			NodeName: ps.node, Hostname: ps.hostname, Subdomain: ps.sub,
			Containers:                    []*corev1.Container{ctr},
			TerminationGracePeriodSeconds: proto.Int64(30),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("create pod %s: %w", ps.name, err)
	}
	phase := ps.phase
	if phase == "" {
		phase = "Running"
	}
	p.Status = &corev1.PodStatus{Phase: phase, PodIp: ps.ip}
	if ps.ip != "" {
		p.Status.PodIps = []*corev1.PodIP{{Ip: ps.ip}}
	}
	p.Status.Conditions = []*corev1.PodCondition{readyCondition(ps.ready)}
	if p, err = client.Pods(c.Conn).UpdateStatus(c.Ctx, p); err != nil {
		return nil, fmt.Errorf("pod %s: write status: %w", ps.name, err)
	}
	return p, nil
}

func readyCondition(ready bool) *corev1.PodCondition {
	s := "False"
	if ready {
		s = "True"
	}
	return &corev1.PodCondition{Type: "Ready", Status: s}
}

// setReady writes a pod's Ready condition, retrying on conflicts.
func (c *cluster) setReady(t testing.TB, name string, ready bool) {
	t.Helper()
	err := client.RetryOnConflict(c.Ctx, client.DefaultRetry, func() error {
		p, err := client.Pods(c.Conn).Get(c.Ctx, ns, name)
		if err != nil {
			return err
		}
		p.Status.Conditions = []*corev1.PodCondition{readyCondition(ready)}
		_, err = client.Pods(c.Conn).UpdateStatus(c.Ctx, p)
		return err
	})
	if err != nil {
		t.Errorf("pod %s: set ready=%v: %v", name, ready, err)
	}
}

// slicesOf returns the cached slices of a Service, by name.
func (c *cluster) slicesOf(svc string) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, s := range c.slices.Store().ByNamespace(ns) {
		if s.GetMetadata().GetLabels()[endpointslice.LabelServiceName] == svc {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *discoveryv1.EndpointSlice) int {
		return strings.Compare(a.GetMetadata().GetName(), b.GetMetadata().GetName())
	})
	return out
}

// endpoint is what a test checks of an endpoint.
type endpoint struct {
	pod                         string
	ready, serving, terminating bool
}

func (e endpoint) String() string {
	return fmt.Sprintf("%s(r=%v s=%v t=%v)", e.pod, e.ready, e.serving, e.terminating)
}

// endpointsOf returns a Service's endpoints over all its slices, sorted by
// pod name, and the number of slices.
func (c *cluster) endpointsOf(svc string) ([]endpoint, int) {
	var out []endpoint
	ss := c.slicesOf(svc)
	for _, s := range ss {
		for _, ep := range s.GetEndpoints() {
			cd := ep.GetConditions()
			out = append(out, endpoint{ep.GetTargetRef().GetName(), cd.GetReady(), cd.GetServing(), cd.GetTerminating()})
		}
	}
	slices.SortFunc(out, func(a, b endpoint) int { return strings.Compare(a.pod, b.pod) })
	return out, len(ss)
}

// awaitEndpoints waits until a Service's slices hold exactly want.
func (c *cluster) awaitEndpoints(t *testing.T, svc string, want ...endpoint) {
	t.Helper()
	c.Await(patience, "endpoints of "+svc, func() (bool, string) {
		got, n := c.endpointsOf(svc)
		return slices.Equal(got, want), fmt.Sprintf("%d slices with %v, want %v", n, got, want)
	})
}

// writeCounter counts the slice events the watch delivers: each one is a
// write to the API.
type writeCounter struct {
	mu     sync.Mutex
	counts map[string]int // "ADDED", "MODIFIED", "DELETED"
}

func (c *cluster) countWrites() *writeCounter {
	w := &writeCounter{counts: map[string]int{}}
	var armed atomic.Bool // AddHandler replays the cache to OnAdd first
	c.slices.AddHandler(informer.Handler[*discoveryv1.EndpointSlice]{
		OnAdd: func(*discoveryv1.EndpointSlice) {
			if armed.Load() {
				w.add("ADDED")
			}
		},
		OnUpdate: func(old, cur *discoveryv1.EndpointSlice) {
			if old.GetMetadata().GetResourceVersion() != cur.GetMetadata().GetResourceVersion() {
				w.add("MODIFIED")
			}
		},
		OnDelete: func(*discoveryv1.EndpointSlice) { w.add("DELETED") },
	})
	armed.Store(true)
	return w
}

func (w *writeCounter) add(typ string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.counts[typ]++
}

func (w *writeCounter) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, v := range w.counts {
		n += v
	}
	return n
}
