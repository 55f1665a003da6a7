package network

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

const patience = 15 * time.Second

// harness is a Manager for node "self" over a real apiserver and a
// MemoryRouter (and a MemoryOverlay for the VXLAN backend).
type harness struct {
	t       *testing.T
	ctx     context.Context
	nodes   *client.Resource[*corev1.Node, *corev1.NodeList]
	router  *MemoryRouter
	overlay *MemoryOverlay
	mgr     *Manager
	reg     *prometheus.Registry
	dir     string
	ready   atomic.Int32 // OnReady calls
	waker   await.Signal
	stop    func() // stops mgr
}

func startManager(t *testing.T, resync time.Duration, seed ...Route) *harness {
	t.Helper()
	api := apiservertest.Start(t)
	return startOn(t, api.Conn, api.Conn, func(c *Config) { c.Resync = resync }, seed...)
}

// startOn starts the harness's Manager on the connection conn, with
// admin the test's own, its Config changed by tweak.
func startOn(t *testing.T, admin, conn *grpc.ClientConn, tweak func(*Config), seed ...Route) *harness {
	t.Helper()
	h := &harness{t: t, ctx: t.Context(), nodes: client.Nodes(admin), router: &MemoryRouter{}, overlay: &MemoryOverlay{},
		dir: filepath.Join(t.TempDir(), "net.d")}
	for _, r := range seed {
		if err := h.router.Replace(h.ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	h.start(conn, tweak)
	return h
}

// start starts a Manager (after stopping the one running) over the
// harness's router and overlay, with a registry of its own.
func (h *harness) start(conn *grpc.ClientConn, tweak func(*Config)) {
	h.t.Helper()
	if h.stop != nil {
		h.stop()
	}
	log := zap.NewNop()
	if testing.Verbose() {
		log = zaptest.NewLogger(h.t)
	}
	h.reg = prometheus.NewRegistry()
	cfg := Config{
		NodeName: "self", API: conn, ConfDir: h.dir, ClusterCIDR: cluster, Router: h.router, Overlay: h.overlay,
		OnReady: func() { h.ready.Add(1); h.waker.Poke() }, Logger: log, Registerer: h.reg,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	mgr, err := New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.mgr = mgr
	ctx, cancel := context.WithCancel(h.ctx)
	var wg sync.WaitGroup
	wg.Go(func() { mgr.Run(ctx) })
	var once sync.Once
	h.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	h.t.Cleanup(h.stop)
}

// await waits for cond, looked at again every await.Recheck and on OnReady.
func (h *harness) await(what string, cond func() (bool, string)) {
	h.t.Helper()
	h.waker.Until(h.t, patience, what, h.ctx.Done(), cond)
}

func (h *harness) create(n *corev1.Node) {
	h.t.Helper()
	if _, err := h.nodes.Create(h.ctx, n); err != nil {
		h.t.Fatalf("create node %s: %v", n.GetMetadata().GetName(), err)
	}
}

// update changes a node's spec (Update) or status (UpdateStatus).
func (h *harness) update(name string, status bool, change func(*corev1.Node)) {
	h.t.Helper()
	err := client.RetryOnConflict(h.ctx, client.DefaultRetry, func() error {
		n, err := h.nodes.Get(h.ctx, "", name)
		if err != nil {
			return err
		}
		n = proto.Clone(n).(*corev1.Node)
		change(n)
		if status {
			_, err = h.nodes.UpdateStatus(h.ctx, n)
		} else {
			_, err = h.nodes.Update(h.ctx, n)
		}
		return err
	})
	if err != nil {
		h.t.Fatalf("update node %s: %v", name, err)
	}
}

// awaitRoutes waits until the router holds want, in address order.
func (h *harness) awaitRoutes(what string, want ...Route) {
	h.t.Helper()
	h.await(what, func() (bool, string) {
		got, _ := h.router.List(h.ctx)
		return reflect.DeepEqual(got, want), explain("routes %v, want %v", got, want)
	})
}

// TestManager follows a node from registration without podCIDR to a
// ready pod network, and its routes as the other nodes come, move and go.
func TestManager(t *testing.T) {
	foreign := route("10.99.0.0/24", "172.18.0.99") // outside the cluster CIDR: never touched
	h := startManager(t, time.Hour, foreign)
	conflist := filepath.Join(h.dir, ConflistName)

	h.create(node("self", nil, "InternalIP=172.18.0.2"))
	h.await("the problem to name the missing podCIDR", func() (bool, string) {
		p := h.mgr.Problem()
		return p == "Node self has no spec.podCIDR yet (the controller-manager's nodeipam controller assigns one)", p
	})
	if _, err := os.Stat(conflist); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s before the node has a podCIDR: %v", conflist, err)
	}

	h.update("self", false, func(n *corev1.Node) {
		n.Spec.PodCidr, n.Spec.PodCidrs = "10.244.1.0/24", []string{"10.244.1.0/24"}
	})
	h.await("the pod network ready", func() (bool, string) {
		return h.mgr.Problem() == "" && h.ready.Load() == 1, explain("problem %q, OnReady calls %d", h.mgr.Problem(), h.ready.Load())
	})
	if b, err := os.ReadFile(conflist); err != nil || string(b) != entrypointConflist {
		t.Fatalf("%s: %q, %v", conflist, b, err)
	}
	if v := testutil.ToFloat64(h.mgr.m.ready); v != 1 {
		t.Errorf("skiff_node_pod_network_ready = %v, want 1", v)
	}

	h.create(node("b", []string{"10.244.2.0/24"}, "InternalIP=172.18.0.3"))
	h.create(node("c", []string{"10.244.3.0/24"}, "InternalIP=172.18.0.4"))
	h.awaitRoutes("routes to b and c", foreign, route("10.244.2.0/24", "172.18.0.3"), route("10.244.3.0/24", "172.18.0.4"))

	// b comes back with another address (a restarted container).
	h.update("b", true, func(n *corev1.Node) { n.Status.Addresses[0].Address = "172.18.0.5" })
	h.awaitRoutes("the route to b through its new address", foreign, route("10.244.2.0/24", "172.18.0.5"), route("10.244.3.0/24", "172.18.0.4"))

	if _, err := h.nodes.Delete(h.ctx, &metav1.DeleteRequest{Name: "c"}); err != nil {
		t.Fatal(err)
	}
	h.awaitRoutes("the route to c removed", foreign, route("10.244.2.0/24", "172.18.0.5"))
	if v := testutil.ToFloat64(h.mgr.m.routes); v != 1 {
		t.Errorf("skiff_node_pod_network_routes = %v, want 1", v)
	}
	if h.ready.Load() != 1 {
		t.Errorf("OnReady called %d times, want once", h.ready.Load())
	}
}

// TestManagerRepairs: a route removed behind the agent's back comes back
// at the next resync, and a failing router is retried with backoff and
// counted.
func TestManagerRepairs(t *testing.T) {
	h := startManager(t, 300*time.Millisecond)
	var failing atomic.Bool
	failing.Store(true)
	h.router.Fail = func(op string, r Route) error {
		if failing.Load() {
			return errors.New("injected failure")
		}
		return nil
	}
	h.create(node("self", []string{"10.244.1.0/24"}, "InternalIP=172.18.0.2"))
	h.create(node("b", []string{"10.244.2.0/24"}, "InternalIP=172.18.0.3"))
	h.await("replace_route errors counted", func() (bool, string) {
		v := testutil.ToFloat64(h.mgr.m.errors.WithLabelValues(opReplaceRoute))
		return v >= 2, explain("skiff_node_pod_network_errors_total{operation=replace_route} = %v", v)
	})
	if h.mgr.Problem() != "" {
		t.Errorf("a route failure made the pod network not ready: %q", h.mgr.Problem())
	}
	failing.Store(false)
	b := route("10.244.2.0/24", "172.18.0.3")
	h.awaitRoutes("the route installed once the router works", b)

	h.router.mu.Lock()
	delete(h.router.routes, b.Dst) // someone else's doing
	h.router.mu.Unlock()
	h.awaitRoutes("the route repaired at the next resync", b)
}

func explain(format string, args ...any) string { return fmt.Sprintf(format, args...) }
