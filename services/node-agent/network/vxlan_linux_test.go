//go:build linux

package network

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// onThread runs f on a thread of its own, which it may move to another
// network namespace: the thread is never given back, it ends with its
// goroutine, locked.
func onThread(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the runtime discards the thread
		done <- f()
	}()
	return <-done
}

// inNetns runs f in the network namespace ns: the sockets f opens live
// there, and so do the /proc/sys/net files it writes.
func inNetns(ns netns.NsHandle, f func() error) error {
	return onThread(func() error {
		if err := netns.Set(ns); err != nil {
			return fmt.Errorf("entering network namespace: %w", err)
		}
		return f()
	})
}

// emptyNetns makes a network namespace for the test, closed (and so
// removed, with its links) when the test ends, and a netlink handle into
// it, its loopback up.
func emptyNetns(t *testing.T) (netns.NsHandle, *netlink.Handle) {
	t.Helper()
	if os.Geteuid() != 0 {
		privileged(t, "a network namespace needs root", os.ErrPermission)
	}
	var ns netns.NsHandle
	if err := onThread(func() (err error) { ns, err = netns.New(); return err }); err != nil {
		privileged(t, "creating a network namespace", err)
	}
	t.Cleanup(func() { ns.Close() })
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		t.Fatal(err)
	}
	return ns, h
}

// netnsOf is a network namespace of the test: its handle, a netlink
// handle into it.
type netnsOf struct {
	ns netns.NsHandle
	h  *netlink.Handle
}

func newNetnsOf(t *testing.T) netnsOf {
	ns, h := emptyNetns(t)
	return netnsOf{ns, h}
}

// link connects a and b with a veth pair, named name in both, with the
// addresses (as prefixes) addrA and addrB, up.
func link(t *testing.T, a, b netnsOf, name, addrA, addrB string) {
	t.Helper()
	la := netlink.NewLinkAttrs()
	la.Name = name
	if err := a.h.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: name, PeerNamespace: netlink.NsFd(int(b.ns))}); err != nil {
		t.Fatalf("veth %s: %v", name, err)
	}
	for _, end := range []struct {
		n    netnsOf
		addr string
	}{{a, addrA}, {b, addrB}} {
		l, err := end.n.h.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		addr, err := netlink.ParseAddr(end.addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := end.n.h.AddrAdd(l, addr); err != nil {
			t.Fatalf("%s on %s: %v", end.addr, name, err)
		}
		if err := end.n.h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
}

// defaultVia gives n a default route through gw.
func (n netnsOf) defaultVia(t *testing.T, gw string) {
	t.Helper()
	if err := n.h.RouteAdd(&netlink.Route{Gw: net.ParseIP(gw)}); err != nil {
		t.Fatalf("default via %s: %v", gw, err)
	}
}

// forward turns IPv4 forwarding on in n (net.ipv4.ip_forward).
func (n netnsOf) forward(t *testing.T) {
	t.Helper()
	err := inNetns(n.ns, func() error { return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0) })
	if err != nil {
		t.Fatal(err)
	}
}

// overlayTopology is two nodes on different subnets joined by a router,
// each with a pod (a namespace behind a veth, as the bridge would give
// it), the Nodes describing them in an apiserver:
//
//	podA 10.244.1.2 -- 10.244.1.1 nodeA 192.168.10.2 -- 192.168.10.1 router
//	podB 10.244.2.2 -- 10.244.2.1 nodeB 192.168.20.2 -- 192.168.20.1 router
//
// The nodes share no L2 segment: a route through the other's InternalIP
// is not one the kernel accepts.
type overlayTopology struct {
	router, nodeA, nodeB, podA, podB netnsOf
	api                              *apiservertest.Server
}

func newOverlayTopology(t *testing.T) *overlayTopology {
	t.Helper()
	o := &overlayTopology{
		router: newNetnsOf(t), nodeA: newNetnsOf(t), nodeB: newNetnsOf(t), podA: newNetnsOf(t), podB: newNetnsOf(t),
	}
	link(t, o.router, o.nodeA, "eth0", "192.168.10.1/24", "192.168.10.2/24")
	link(t, o.router, o.nodeB, "eth1", "192.168.20.1/24", "192.168.20.2/24")
	link(t, o.nodeA, o.podA, "pod0", "10.244.1.1/24", "10.244.1.2/24")
	link(t, o.nodeB, o.podB, "pod0", "10.244.2.1/24", "10.244.2.2/24")
	o.nodeA.defaultVia(t, "192.168.10.1")
	o.nodeB.defaultVia(t, "192.168.20.1")
	o.podA.defaultVia(t, "10.244.1.1")
	o.podB.defaultVia(t, "10.244.2.1")
	for _, n := range []netnsOf{o.router, o.nodeA, o.nodeB} {
		n.forward(t)
	}
	o.api = apiservertest.Start(t)
	nodes := client.Nodes(o.api.Conn)
	for _, n := range []*corev1.Node{
		node("a", []string{"10.244.1.0/24"}, "InternalIP=192.168.10.2"),
		node("b", []string{"10.244.2.0/24"}, "InternalIP=192.168.20.2"),
	} {
		if _, err := nodes.Create(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// agent is a Manager run as a node's agent in its namespace.
type agent struct {
	mgr     *Manager
	confDir string
	router  *NetlinkRouter
	overlay *NetlinkOverlay
	stop    func()
}

// runAgent runs the Manager of the node named name in n, with backend,
// over fresh netlink handles (as a new process would have), until stop or
// the test's end.
func runAgent(t *testing.T, conn *grpc.ClientConn, n netnsOf, name string, backend Backend) *agent {
	t.Helper()
	router, err := NewNetlinkRouterAt(n.ns)
	if err != nil {
		t.Fatal(err)
	}
	overlay, err := NewNetlinkOverlayAt(n.ns)
	if err != nil {
		t.Fatal(err)
	}
	log := zap.NewNop()
	if testing.Verbose() {
		log = zaptest.NewLogger(t).With(zap.String("node", name))
	}
	confDir := filepath.Join(t.TempDir(), "net.d")
	mgr, err := New(Config{
		NodeName: name, API: conn, ConfDir: confDir, ClusterCIDR: cluster,
		Router: router, Overlay: overlay, Backend: backend, Resync: time.Hour, Logger: log, Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { mgr.Run(ctx) })
	var once sync.Once
	a := &agent{mgr: mgr, confDir: confDir, router: router, overlay: overlay}
	a.stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			router.Close()
			overlay.Close()
		})
	}
	t.Cleanup(a.stop)
	return a
}

// echo connects from the pod from to port on to's address, sends a line
// and returns the reply: the server in the pod to answers with the
// address the connection came from.
func echo(from, to netnsOf, addr string) (string, error) {
	return exchange(from, to, addr, "hello", patience)
}

// echoWithin is echo, its connection given up after timeout.
func echoWithin(from, to netnsOf, addr string, timeout time.Duration) (string, error) {
	return exchange(from, to, addr, "hello", timeout)
}

// exchange is echo with the line msg, the connection given up after
// timeout.
func exchange(from, to netnsOf, addr, msg string, timeout time.Duration) (string, error) {
	var l net.Listener
	if err := inNetns(to.ns, func() (err error) { l, err = net.Listen("tcp", addr); return err }); err != nil {
		return "", err
	}
	defer l.Close()
	served := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(patience))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil {
			_, err = fmt.Fprintf(c, "%s from %s\n", line[:len(line)-1], c.RemoteAddr().(*net.TCPAddr).IP)
		}
		served <- err
	}()
	var c net.Conn
	err := inNetns(from.ns, func() (err error) { c, err = net.DialTimeout("tcp", l.Addr().String(), timeout); return err })
	if err != nil {
		l.Close()
		<-served
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(patience))
	if _, err := fmt.Fprintf(c, "%s\n", msg); err != nil {
		return "", err
	}
	reply, err := bufio.NewReader(c).ReadString('\n')
	if serr := <-served; err == nil && serr != nil {
		err = serr
	}
	return reply, err
}

// awaitKernel waits for cond, looked at again every await.Recheck.
func awaitKernel(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var never await.Signal
	never.Until(t, patience, what, t.Context().Done(), cond)
}

// kernelState is what a node's namespace has of the overlay: its routes
// (protocol 83), FDB and neighbour entries on the device.
func (a *agent) kernelState(t *testing.T) vxlanWant {
	t.Helper()
	ctx := t.Context()
	routes, err1 := a.router.List(ctx)
	fdb, err2 := a.overlay.List(ctx, FDB)
	neighbors, err3 := a.overlay.List(ctx, Neighbors)
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	return vxlanWant{routes, fdb, neighbors}
}

// vtep is the node's VXLAN device, and the MAC its Node publishes.
func vtep(t *testing.T, n netnsOf) *netlink.Vxlan {
	t.Helper()
	l, err := n.h.LinkByName(VXLANDevice)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := l.(*netlink.Vxlan)
	if !ok {
		t.Fatalf("%s is a %s, not a vxlan device", VXLANDevice, l.Type())
	}
	return v
}

// awaitPeered waits until the agent on node self has the overlay state
// for the peer node (its subnet, InternalIP and device in n).
func awaitPeered(t *testing.T, a *agent, peer netnsOf, subnet, internalIP string) {
	t.Helper()
	awaitKernel(t, "the overlay to "+subnet, func() (bool, string) {
		l, err := peer.h.LinkByName(VXLANDevice)
		if err != nil {
			return false, "the peer's device: " + err.Error()
		}
		mac := l.Attrs().HardwareAddr.String()
		want := vxlanWant{
			routes:    []Route{overlayRoute(subnet)},
			fdb:       []Entry{entry(internalIP, mac)},
			neighbors: []Entry{entry(netip.MustParsePrefix(subnet).Addr().String(), mac)},
		}
		got := a.kernelState(t)
		return reflect.DeepEqual(got, want), fmt.Sprintf("got %v, want %v", got, want)
	})
}

// TestVXLANAcrossRouter: two nodes on different subnets behind a router.
// The routes backend cannot reach the other node's pods (the kernel
// refuses a route through an address not on a local segment); the VXLAN
// backend, run by each node's Manager in its namespace, carries a TCP
// connection from a pod on one to a pod on the other, addresses unchanged.
func TestVXLANAcrossRouter(t *testing.T) {
	o := newOverlayTopology(t)

	routes := runAgent(t, o.api.Conn, o.nodeA, "a", BackendRoutes)
	awaitKernel(t, "the routes backend to fail its route", func() (bool, string) {
		v := testutil.ToFloat64(routes.mgr.m.errors.WithLabelValues(opReplaceRoute))
		return v >= 1, fmt.Sprintf("errors{operation=replace_route} = %v", v)
	})
	routes.stop()
	// The router has no route to the pods: the SYN is lost (and the ICMP
	// error with it), the connection times out.
	if _, err := echoWithin(o.podA, o.podB, "10.244.2.2:7001", time.Second); err == nil {
		t.Fatal("pod A reached pod B without an overlay")
	} else {
		t.Logf("without an overlay, as expected: %v", err)
	}

	a := runAgent(t, o.api.Conn, o.nodeA, "a", BackendVXLAN)
	b := runAgent(t, o.api.Conn, o.nodeB, "b", BackendVXLAN)
	awaitPeered(t, a, o.nodeB, "10.244.2.0/24", "192.168.20.2")
	awaitPeered(t, b, o.nodeA, "10.244.1.0/24", "192.168.10.2")
	awaitKernel(t, "both pod networks ready (CNI configuration written)", func() (bool, string) {
		return a.mgr.Problem() == "" && b.mgr.Problem() == "", fmt.Sprintf("a: %q, b: %q", a.mgr.Problem(), b.mgr.Problem())
	})

	for _, n := range []struct {
		ns       netnsOf
		agent    *agent
		name     string
		local    string
		addr     string
		podCIDR  string
		underMTU int
	}{
		{o.nodeA, a, "a", "192.168.10.2", "10.244.1.0/32", "10.244.1.0/24", 1500},
		{o.nodeB, b, "b", "192.168.20.2", "10.244.2.0/32", "10.244.2.0/24", 1500},
	} {
		v := vtep(t, n.ns)
		if v.VxlanId != 1 || v.Port != 8472 || v.Learning || !v.SrcAddr.Equal(net.ParseIP(n.local)) || v.MTU != n.underMTU-VXLANOverhead || v.Flags&net.FlagUp == 0 {
			t.Errorf("node %s: device vni %d port %d learning %v local %s mtu %d flags %v; want vni 1 port 8472 nolearning local %s mtu %d up",
				n.name, v.VxlanId, v.Port, v.Learning, v.SrcAddr, v.MTU, v.Flags, n.local, n.underMTU-VXLANOverhead)
		}
		addrs, err := n.ns.h.AddrList(v, netlink.FAMILY_V4)
		if err != nil || len(addrs) != 1 || addrs[0].IPNet.String() != n.addr {
			t.Errorf("node %s: device addresses %v (%v), want %s", n.name, addrs, err, n.addr)
		}
		// The pods' MTU is the device's.
		conf, err := os.ReadFile(filepath.Join(n.agent.confDir, ConflistName))
		if want := ConflistMTU(n.underMTU-VXLANOverhead, netip.MustParsePrefix(n.podCIDR)); err != nil || string(conf) != string(want) {
			t.Errorf("node %s: CNI configuration %s (%v), want\n%s", n.name, conf, err, want)
		}
		got, err := client.Nodes(o.api.Conn).Get(t.Context(), "", n.name)
		if err != nil || got.GetMetadata().GetAnnotations()[AnnVTEPMAC] != v.HardwareAddr.String() {
			t.Errorf("node %s: annotation %v (%v), want %s=%s", n.name, got.GetMetadata().GetAnnotations(), err, AnnVTEPMAC, v.HardwareAddr)
		}
	}

	reply, err := echo(o.podA, o.podB, "10.244.2.2:7001")
	if err != nil || reply != "hello from 10.244.1.2\n" {
		t.Fatalf("pod A to pod B through the overlay: %q, %v", reply, err)
	}
	reply, err = echo(o.podB, o.podA, "10.244.1.2:7002")
	if err != nil || reply != "hello from 10.244.2.2\n" {
		t.Fatalf("pod B to pod A through the overlay: %q, %v", reply, err)
	}
	// 256 KiB each way: full-size segments, bigger than the device's MTU
	// on the pods' 1500-byte veths here, cross it (path MTU discovery).
	big := strings.Repeat("0123456789abcdef", 1<<14)
	reply, err = exchange(o.podA, o.podB, "10.244.2.2:7006", big, patience)
	if err != nil || reply != big+" from 10.244.1.2\n" {
		t.Fatalf("256 KiB from pod A to pod B and back: %d bytes, %v", len(reply), err)
	}
}

// TestVXLANRestartAndRemoval: a restarted agent finds its device and
// entries and changes nothing; one that finds a device of that name with
// other settings makes it again, publishes its new MAC, and the other
// node follows; a node removed takes its route, FDB and neighbour entries
// with it.
func TestVXLANRestartAndRemoval(t *testing.T) {
	o := newOverlayTopology(t)
	a := runAgent(t, o.api.Conn, o.nodeA, "a", BackendVXLAN)
	b := runAgent(t, o.api.Conn, o.nodeB, "b", BackendVXLAN)
	awaitPeered(t, a, o.nodeB, "10.244.2.0/24", "192.168.20.2")
	awaitPeered(t, b, o.nodeA, "10.244.1.0/24", "192.168.10.2")
	before, state := vtep(t, o.nodeA), a.kernelState(t)

	a.stop()
	a = runAgent(t, o.api.Conn, o.nodeA, "a", BackendVXLAN)
	awaitKernel(t, "the restarted agent's first sync", func() (bool, string) {
		return a.mgr.Problem() == "", a.mgr.Problem()
	})
	awaitPeered(t, a, o.nodeB, "10.244.2.0/24", "192.168.20.2")
	after := vtep(t, o.nodeA)
	if after.Index != before.Index || after.HardwareAddr.String() != before.HardwareAddr.String() {
		t.Errorf("device after the restart: index %d mac %s, before %d %s: made again", after.Index, after.HardwareAddr, before.Index, before.HardwareAddr)
	}
	if got := a.kernelState(t); !reflect.DeepEqual(got, state) {
		t.Errorf("after the restart %v, before %v", got, state)
	}
	for _, op := range []string{opEnsureVXLANDevice, "replace_fdb", "replace_neighbor", opReplaceRoute} {
		if v := testutil.ToFloat64(a.mgr.m.errors.WithLabelValues(op)); v != 0 {
			t.Errorf("errors{operation=%s} = %v after the restart", op, v)
		}
	}
	if reply, err := echo(o.podA, o.podB, "10.244.2.2:7003"); err != nil || reply != "hello from 10.244.1.2\n" {
		t.Fatalf("pod A to pod B after the restart: %q, %v", reply, err)
	}

	// Someone replaced the device with one on IANA's port, learning.
	a.stop()
	if err := o.nodeA.h.LinkDel(after); err != nil {
		t.Fatal(err)
	}
	la := netlink.NewLinkAttrs()
	la.Name, la.MTU = VXLANDevice, 1400
	if err := o.nodeA.h.LinkAdd(&netlink.Vxlan{LinkAttrs: la, VxlanId: 1, SrcAddr: net.ParseIP("192.168.10.2"), Port: 4789, Learning: true}); err != nil {
		t.Fatal(err)
	}
	wrong := vtep(t, o.nodeA)
	a = runAgent(t, o.api.Conn, o.nodeA, "a", BackendVXLAN)
	awaitKernel(t, "the device made again with the agent's settings", func() (bool, string) {
		l, err := o.nodeA.h.LinkByName(VXLANDevice)
		if err != nil {
			return false, err.Error()
		}
		v, _ := l.(*netlink.Vxlan)
		if v == nil {
			return false, "not a vxlan device: " + l.Type()
		}
		return v.Index != wrong.Index && v.Port == 8472 && !v.Learning && v.MTU == 1450,
			fmt.Sprintf("index %d (the wrong one's %d), port %d, learning %v, mtu %d", v.Index, wrong.Index, v.Port, v.Learning, v.MTU)
	})
	awaitPeered(t, a, o.nodeB, "10.244.2.0/24", "192.168.20.2")
	awaitPeered(t, b, o.nodeA, "10.244.1.0/24", "192.168.10.2") // b follows a's new MAC
	if reply, err := echo(o.podA, o.podB, "10.244.2.2:7004"); err != nil || reply != "hello from 10.244.1.2\n" {
		t.Fatalf("pod A to pod B after the device was made again: %q, %v", reply, err)
	}

	if _, err := client.Nodes(o.api.Conn).Delete(t.Context(), &metav1.DeleteRequest{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	awaitKernel(t, "node b's route, FDB and neighbour entries gone from node a", func() (bool, string) {
		got := a.kernelState(t)
		return len(got.routes)+len(got.fdb)+len(got.neighbors) == 0, got.String()
	})
	// Nothing of b's left in the kernel at all, ours or not.
	if rs, err := o.nodeA.h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: ipNet(netip.MustParsePrefix("10.244.2.0/24"))}, netlink.RT_FILTER_DST); err != nil || len(rs) != 0 {
		t.Errorf("routes to 10.244.2.0/24 left: %v, %v", rs, err)
	}
	if _, err := echoWithin(o.podA, o.podB, "10.244.2.2:7005", time.Second); err == nil {
		t.Error("pod A still reaches pod B after node b was removed")
	}
}
