package network

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authz"
	"skiff.dev/services/apiserver/user"
)

// withMAC sets a node's AnnVTEPMAC.
func withMAC(n *corev1.Node, mac string) *corev1.Node {
	n.Metadata.Annotations = map[string]string{AnnVTEPMAC: mac}
	return n
}

func entry(ip, mac string) Entry { return Entry{IP: netip.MustParseAddr(ip), MAC: mac} }

func overlayRoute(dst string) Route {
	p := netip.MustParsePrefix(dst)
	return Route{Dst: p, Via: p.Addr(), Dev: VXLANDevice}
}

func TestParseBackend(t *testing.T) {
	for _, s := range []string{"routes", "vxlan"} {
		if b, err := ParseBackend(s); err != nil || string(b) != s {
			t.Errorf("ParseBackend(%q) = %q, %v", s, b, err)
		}
	}
	if _, err := ParseBackend("host-gw"); err == nil || !strings.Contains(err.Error(), "want routes or vxlan") {
		t.Errorf("ParseBackend(host-gw): %v", err)
	}
}

func TestDesiredVXLAN(t *testing.T) {
	self := node("self", []string{"10.244.1.0/24", "fd00:1::/64"}, "InternalIP=fd00::2", "InternalIP=192.168.10.2")
	nodes := []*corev1.Node{
		self,
		withMAC(node("b", []string{"10.244.2.0/24"}, "InternalIP=192.168.20.2"), "02:00:00:00:00:0B"),
		withMAC(node("a", []string{"10.244.3.0/24", "10.244.4.0/24"}, "InternalIP=192.168.30.2"), "02:00:00:00:00:0a"),
		node("no-mac", []string{"10.244.5.0/24"}, "InternalIP=192.168.40.2"),
		withMAC(node("bad-mac", []string{"10.244.6.0/24"}, "InternalIP=192.168.50.2"), "00:11:22:33:44:55:66:77"),
		withMAC(node("no-ip", []string{"10.244.7.0/24"}, "Hostname=no-ip"), "02:00:00:00:00:07"),
	}
	got, skipped := DesiredVXLAN(nodes, "self", cluster, VXLAN{VNI: 7})
	want := VXLANState{
		Device: Device{Name: "skiff.vxlan", VNI: 7, Port: 8472, Local: netip.MustParseAddr("192.168.10.2"), Addr: netip.MustParsePrefix("10.244.1.0/32")},
		Routes: []Route{overlayRoute("10.244.2.0/24"), overlayRoute("10.244.3.0/24"), overlayRoute("10.244.4.0/24")},
		// a's two subnets share its FDB entry.
		FDB:       []Entry{entry("192.168.20.2", "02:00:00:00:00:0b"), entry("192.168.30.2", "02:00:00:00:00:0a")},
		Neighbors: []Entry{entry("10.244.2.0", "02:00:00:00:00:0b"), entry("10.244.3.0", "02:00:00:00:00:0a"), entry("10.244.4.0", "02:00:00:00:00:0a")},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	all := strings.Join(skipped, "\n")
	for _, s := range []string{
		"node no-mac: no VTEP MAC yet (annotation skiff.dev/vxlan-vtep-mac) for its pod CIDR 10.244.5.0/24",
		`node bad-mac: annotation skiff.dev/vxlan-vtep-mac="00:11:22:33:44:55:66:77" is not a MAC address`,
		"node no-ip: no InternalIP address for its pod CIDR 10.244.7.0/24",
	} {
		if !strings.Contains(all, s) {
			t.Errorf("skipped lacks %q:\n%s", s, all)
		}
	}

	// Without its own pod subnet a node has no device, and routes nothing.
	nodes[0] = node("self", nil, "InternalIP=192.168.10.2")
	got, skipped = DesiredVXLAN(nodes, "self", cluster, VXLAN{})
	if !reflect.DeepEqual(got, VXLANState{}) || len(skipped) != 1 || !strings.Contains(skipped[0], "no VXLAN device") {
		t.Errorf("without a pod CIDR: %+v, skipped %q", got, skipped)
	}
}

func TestPlanEntries(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		table                   Table
		desired, current        []Entry
		wantReplace, wantRemove []Entry
	}{{
		name:    "fdb: a node moved, another gone, a stale second destination",
		table:   FDB,
		desired: []Entry{entry("192.168.20.2", "02:00:00:00:00:0b"), entry("192.168.30.9", "02:00:00:00:00:0c")},
		current: []Entry{
			entry("192.168.20.2", "02:00:00:00:00:0b"), entry("192.168.20.3", "02:00:00:00:00:0b"),
			entry("192.168.30.2", "02:00:00:00:00:0c"), entry("192.168.40.2", "02:00:00:00:00:0d"),
		},
		wantReplace: []Entry{entry("192.168.30.9", "02:00:00:00:00:0c")},
		wantRemove:  []Entry{entry("192.168.20.3", "02:00:00:00:00:0b"), entry("192.168.30.2", "02:00:00:00:00:0c"), entry("192.168.40.2", "02:00:00:00:00:0d")},
	}, {
		name:        "neighbors: a new MAC replaces in place, a gone gateway goes",
		table:       Neighbors,
		desired:     []Entry{entry("10.244.2.0", "02:00:00:00:00:0b"), entry("10.244.3.0", "02:00:00:00:00:0e"), entry("10.244.5.0", "02:00:00:00:00:05")},
		current:     []Entry{entry("10.244.2.0", "02:00:00:00:00:0b"), entry("10.244.3.0", "02:00:00:00:00:0c"), entry("10.244.4.0", "02:00:00:00:00:0d")},
		wantReplace: []Entry{entry("10.244.3.0", "02:00:00:00:00:0e"), entry("10.244.5.0", "02:00:00:00:00:05")},
		wantRemove:  []Entry{entry("10.244.4.0", "02:00:00:00:00:0d")},
	}, {
		name:    "in place",
		table:   Neighbors,
		desired: []Entry{entry("10.244.2.0", "02:00:00:00:00:0b")},
		current: []Entry{entry("10.244.2.0", "02:00:00:00:00:0b")},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			replace, remove := PlanEntries(tc.table, tc.desired, tc.current)
			if !reflect.DeepEqual(replace, tc.wantReplace) || !reflect.DeepEqual(remove, tc.wantRemove) {
				t.Errorf("replace %v, remove %v\nwant    %v, remove %v", replace, remove, tc.wantReplace, tc.wantRemove)
			}
		})
	}
}

// vxlanWant is the MemoryOverlay's and the MemoryRouter's state.
type vxlanWant struct {
	routes         []Route
	fdb, neighbors []Entry
}

func (w vxlanWant) String() string {
	return fmt.Sprintf("routes %v, fdb %v, neighbors %v", w.routes, w.fdb, w.neighbors)
}

func (h *harness) awaitVXLAN(what string, want vxlanWant) {
	h.t.Helper()
	h.await(what, func() (bool, string) {
		routes, _ := h.router.List(h.ctx)
		fdb, _ := h.overlay.List(h.ctx, FDB)
		neighbors, _ := h.overlay.List(h.ctx, Neighbors)
		got := vxlanWant{routes, fdb, neighbors}
		return reflect.DeepEqual(got, want), explain("got %v, want %v", got, want)
	})
}

// TestManagerVXLAN runs the VXLAN backend over a MemoryOverlay as node
// "self" with its own identity (system:node:self, under the apiserver's
// default authorization, Node and RBAC, and admission: the node authorizer,
// NodeRestriction and the registry accept its annotation): it makes the device, publishes
// its MAC, replaces a route of the routes backend, follows the other
// nodes' MACs, addresses and removal, and a restart finds everything in
// place.
func TestManagerVXLAN(t *testing.T) {
	api := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Authz = authz.Options{Modes: authz.DefaultModes}
		c.Admission = admission.Options{EnablePlugins: admission.DefaultPlugins, DisablePlugins: []string{admission.ServiceAccountName}}
	}))
	as := api.ConnAs(t, user.NodeUserPrefix+"self", user.NodesGroup)
	foreign := route("10.99.0.0/24", "172.18.0.99")
	old := route("10.244.2.0/24", "192.168.20.2") // the routes backend's
	vxlan := func(c *Config) { c.Backend = BackendVXLAN }
	h := startOn(t, api.Conn, as, vxlan, foreign, old)

	h.create(node("self", []string{"10.244.1.0/24"}, "InternalIP=192.168.10.2"))
	h.create(withMAC(node("b", []string{"10.244.2.0/24"}, "InternalIP=192.168.20.2"), "02:00:00:00:00:0b"))
	h.create(node("c", []string{"10.244.3.0/24"}, "InternalIP=192.168.30.2"))
	h.await("the own VTEP MAC published", func() (bool, string) {
		n, err := h.nodes.Get(h.ctx, "", "self")
		got := n.GetMetadata().GetAnnotations()[AnnVTEPMAC]
		return got == memoryMAC(1), explain("annotation %q (%v), want %s", got, err, memoryMAC(1))
	})
	// The authorizer is on: the same identity may not annotate another Node.
	b, err := h.nodes.Get(h.ctx, "", "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Nodes(as).Update(h.ctx, withMAC(proto.Clone(b).(*corev1.Node), "02:00:00:00:00:ff")); !apierrors.IsForbidden(err) {
		t.Fatalf("system:node:self updating Node b: %v, want Forbidden", err)
	}
	dev, created, _ := h.overlay.Device()
	if want := (Device{Name: VXLANDevice, VNI: 1, Port: 8472, Local: netip.MustParseAddr("192.168.10.2"), Addr: netip.MustParsePrefix("10.244.1.0/32")}); dev != want || created != 1 {
		t.Fatalf("device %+v (created %d times), want %+v once", dev, created, want)
	}
	h.await("the pod network ready", func() (bool, string) { return h.mgr.Problem() == "", h.mgr.Problem() })
	if b, err := os.ReadFile(filepath.Join(h.dir, ConflistName)); err != nil || string(b) != string(ConflistMTU(MemoryOverlayMTU, netip.MustParsePrefix("10.244.1.0/24"))) {
		t.Errorf("CNI configuration %q, %v; want the device's MTU %d", b, err, MemoryOverlayMTU)
	}
	h.awaitVXLAN("b reached through the overlay, c without a MAC left out", vxlanWant{
		routes:    []Route{foreign, overlayRoute("10.244.2.0/24")},
		fdb:       []Entry{entry("192.168.20.2", "02:00:00:00:00:0b")},
		neighbors: []Entry{entry("10.244.2.0", "02:00:00:00:00:0b")},
	})

	h.update("c", false, func(n *corev1.Node) { withMAC(n, "02:00:00:00:00:0c") })
	h.update("b", false, func(n *corev1.Node) { withMAC(n, "02:00:00:00:00:bb") }) // b's device made again
	h.update("b", true, func(n *corev1.Node) { n.Status.Addresses[0].Address = "192.168.20.3" })
	both := vxlanWant{
		routes:    []Route{foreign, overlayRoute("10.244.2.0/24"), overlayRoute("10.244.3.0/24")},
		fdb:       []Entry{entry("192.168.20.3", "02:00:00:00:00:bb"), entry("192.168.30.2", "02:00:00:00:00:0c")},
		neighbors: []Entry{entry("10.244.2.0", "02:00:00:00:00:bb"), entry("10.244.3.0", "02:00:00:00:00:0c")},
	}
	h.awaitVXLAN("c added, b's new MAC and address", both)

	// A restart finds its device and entries: nothing made again.
	_, _, ensured := h.overlay.Device()
	h.start(as, vxlan)
	h.await("the device ensured after the restart", func() (bool, string) {
		_, _, n := h.overlay.Device()
		return n > ensured, explain("Ensure called %d times, %d before the restart", n, ensured)
	})
	h.awaitVXLAN("the same state after the restart", both)
	if _, created, _ := h.overlay.Device(); created != 1 {
		t.Errorf("device created %d times, want once", created)
	}

	if _, err := h.nodes.Delete(h.ctx, &metav1.DeleteRequest{Name: "c"}); err != nil {
		t.Fatal(err)
	}
	h.awaitVXLAN("c's route, FDB and neighbour entries removed", vxlanWant{
		routes:    []Route{foreign, overlayRoute("10.244.2.0/24")},
		fdb:       []Entry{entry("192.168.20.3", "02:00:00:00:00:bb")},
		neighbors: []Entry{entry("10.244.2.0", "02:00:00:00:00:bb")},
	})
	for _, op := range []string{opEnsureVXLANDevice, opPublishVTEPMAC, "replace_fdb", "delete_fdb", "replace_neighbor", "delete_neighbor", opReplaceRoute, opDeleteRoute} {
		if v := testutil.ToFloat64(h.mgr.m.errors.WithLabelValues(op)); v != 0 {
			t.Errorf("errors{operation=%s} = %v, want 0", op, v)
		}
	}
	if v := testutil.ToFloat64(h.mgr.m.routes); v != 1 {
		t.Errorf("skiff_node_pod_network_routes = %v, want 1", v)
	}
}

// TestManagerVXLANDeviceFails: a device that cannot be made is retried
// and counted, the pod network is not ready (no CNI configuration), and
// nothing is routed through it meanwhile.
func TestManagerVXLANDeviceFails(t *testing.T) {
	api := apiservertest.Start(t)
	h := startOn(t, api.Conn, api.Conn, func(c *Config) { c.Backend = BackendVXLAN; c.Resync = 300 * time.Millisecond })
	h.overlay.Fail = func(op string, _ Table, _ Entry) error {
		if op == "ensure" {
			return errors.New("injected failure")
		}
		return nil
	}
	h.create(node("self", []string{"10.244.1.0/24"}, "InternalIP=192.168.10.2"))
	h.create(withMAC(node("b", []string{"10.244.2.0/24"}, "InternalIP=192.168.20.2"), "02:00:00:00:00:0b"))
	h.await("ensure_vxlan_device errors counted", func() (bool, string) {
		v := testutil.ToFloat64(h.mgr.m.errors.WithLabelValues(opEnsureVXLANDevice))
		return v >= 2, explain("errors{operation=ensure_vxlan_device} = %v", v)
	})
	if p, want := h.mgr.Problem(), "VXLAN device skiff.vxlan not set up: injected failure"; p != want {
		t.Errorf("problem %q, want %q", p, want)
	}
	if _, err := os.Stat(filepath.Join(h.dir, ConflistName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CNI configuration without a device: %v", err)
	}
	if l, _ := h.router.List(context.Background()); len(l) != 0 {
		t.Errorf("routes without a device: %v", l)
	}
	if n, err := client.Nodes(api.Conn).Get(h.ctx, "", "self"); err != nil || n.GetMetadata().GetAnnotations()[AnnVTEPMAC] != "" {
		t.Errorf("a VTEP MAC published without a device: %v, %v", n.GetMetadata().GetAnnotations(), err)
	}
}
