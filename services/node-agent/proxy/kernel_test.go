//go:build linux

package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
)

// needRoot skips the test, or fails it under CI=true (where tests run as
// root), when the machine cannot give it what it needs.
func needRoot(t testing.TB, why string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %v (CI runs the tests as root and must run this one)", why, err)
	}
	t.Skipf("skipped: %s: %v (run the tests as root, with nft installed)", why, err)
}

// inNetns runs f on an OS thread in ns; the thread is thrown away after
// (it is never unlocked), so no other goroutine ever runs in ns. Sockets
// f opens stay in ns and may be used from any goroutine.
func inNetns(t testing.TB, ns netns.NsHandle, f func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		errc <- f()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// testNet is a node (network namespace) with a bridge cni0 10.244.1.1/24
// and two pods on it, A 10.244.1.2 and B 10.244.1.3, and an "outside"
// namespace linked to the node by a veth: node 192.168.50.1, outside
// 192.168.50.2 (the node's default route).
type testNet struct {
	node, podA, podB, outside netns.NsHandle
}

const (
	podAIP      = "10.244.1.2"
	podBIP      = "10.244.1.3"
	kNodeIP     = "192.168.50.1"
	outsideIP   = "192.168.50.2"
	clusterCIDR = "10.244.0.0/16"
)

func newNamespace(t testing.TB) netns.NsHandle {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.New()
	if err != nil {
		needRoot(t, "creating a network namespace", err)
	}
	if err := netns.Set(orig); err != nil {
		t.Fatalf("back to the original network namespace: %v", err)
	}
	t.Cleanup(func() { ns.Close() }) // the last reference: the namespace goes
	return ns
}

func newTestNet(t testing.TB) *testNet {
	t.Helper()
	if os.Geteuid() != 0 {
		needRoot(t, "network namespaces need root", os.ErrPermission)
	}
	if _, err := os.Stat("/usr/sbin/nft"); err != nil {
		needRoot(t, "the nft binary", err)
	}
	n := &testNet{node: newNamespace(t), podA: newNamespace(t), podB: newNamespace(t), outside: newNamespace(t)}
	h := handle(t, n.node)
	// The node's loopback is up, as on any host. The reject a node
	// process's own connection meets (in filter-output) is an ICMP error
	// addressed to the node itself, delivered through lo: with lo down the
	// kernel sends it (IcmpOutDestUnreachs grows) but never receives it,
	// and the connect times out instead of being refused.
	lo, err := h.LinkByName("lo")
	must(t, err)
	must(t, h.LinkSetUp(lo))
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "cni0"}}
	must(t, h.LinkAdd(br))
	must(t, h.AddrAdd(br, addr(t, "10.244.1.1/24")))
	must(t, h.LinkSetUp(br))
	n.veth(t, h, "veth-a", n.podA, podAIP+"/24", "10.244.1.1", br)
	n.veth(t, h, "veth-b", n.podB, podBIP+"/24", "10.244.1.1", br)
	n.veth(t, h, "veth-out", n.outside, outsideIP+"/24", "", nil)
	out, err := h.LinkByName("veth-out")
	must(t, err)
	must(t, h.AddrAdd(out, addr(t, kNodeIP+"/24")))
	must(t, h.RouteAdd(&netlink.Route{Gw: net.ParseIP(outsideIP), LinkIndex: out.Attrs().Index}))
	inNetns(t, n.node, func() error {
		for file, v := range map[string]string{
			"/proc/sys/net/ipv4/ip_forward":                "1",
			"/proc/sys/net/bridge/bridge-nf-call-iptables": "1",
		} {
			if err := os.WriteFile(file, []byte(v), 0o644); err != nil {
				return fmt.Errorf("%s in the node namespace: %w", file, err)
			}
		}
		return nil
	})
	return n
}

// veth links the node to namespace peer: name on the node side (on the
// bridge, if any), eth0 with address cidr and a default route through gw
// (if any) in peer.
func (n *testNet) veth(t testing.TB, h *netlink.Handle, name string, peer netns.NsHandle, cidr, gw string, br *netlink.Bridge) {
	t.Helper()
	must(t, h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: name + "-p"}))
	link, err := h.LinkByName(name)
	must(t, err)
	if br != nil {
		must(t, h.LinkSetMaster(link, br))
		// As the bridge CNI plugin with hairpinMode (network.Conflist):
		// a pod reaching itself through a Service gets its packets back
		// through the port they came in by.
		must(t, h.LinkSetHairpin(link, true))
	}
	must(t, h.LinkSetUp(link))
	p, err := h.LinkByName(name + "-p")
	must(t, err)
	must(t, h.LinkSetNsFd(p, int(peer)))
	ph := handle(t, peer)
	p, err = ph.LinkByName(name + "-p")
	must(t, err)
	must(t, ph.LinkSetName(p, "eth0"))
	must(t, ph.AddrAdd(p, addr(t, cidr)))
	must(t, ph.LinkSetUp(p))
	lo, err := ph.LinkByName("lo")
	must(t, err)
	must(t, ph.LinkSetUp(lo))
	if gw != "" {
		must(t, ph.RouteAdd(&netlink.Route{Gw: net.ParseIP(gw), LinkIndex: p.Attrs().Index}))
	}
}

func handle(t testing.TB, ns netns.NsHandle) *netlink.Handle {
	t.Helper()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func addr(t testing.TB, cidr string) *netlink.Addr {
	t.Helper()
	a, err := netlink.ParseAddr(cidr)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// serve starts, in ns, a TCP server on port that writes name and then
// echoes lines, and a UDP server on the same port that answers name.
func serve(t testing.TB, ns netns.NsHandle, name string, port int) {
	t.Helper()
	var l net.Listener
	var pc net.PacketConn
	inNetns(t, ns, func() (err error) {
		if l, err = net.Listen("tcp4", fmt.Sprintf(":%d", port)); err != nil {
			return err
		}
		pc, err = net.ListenPacket("udp4", fmt.Sprintf(":%d", port))
		return err
	})
	done := make(chan struct{}, 2)
	t.Cleanup(func() { l.Close(); pc.Close(); <-done; <-done })
	go func() {
		defer func() { done <- struct{}{} }()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				fmt.Fprintf(c, "%s\n", name)
				io.Copy(c, c)
			}()
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 512)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo([]byte(name), from)
		}
	}()
}

// serveWho starts, in ns, a TCP server on port that writes the address
// the connection comes from (after any source NAT) and closes.
func serveWho(t testing.TB, ns netns.NsHandle, port int) {
	t.Helper()
	var l net.Listener
	inNetns(t, ns, func() (err error) {
		l, err = net.Listen("tcp4", fmt.Sprintf(":%d", port))
		return err
	})
	done := make(chan struct{})
	t.Cleanup(func() { l.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "%s\n", c.RemoteAddr().(*net.TCPAddr).IP)
			c.Close()
		}
	}()
}

// dial connects from ns to addr (TCP) and returns the connection and the
// name the server wrote.
func dial(t testing.TB, ns netns.NsHandle, addr string) (net.Conn, string, error) {
	t.Helper()
	var c net.Conn
	var err error
	inNetns(t, ns, func() error {
		c, err = net.DialTimeout("tcp4", addr, 2*time.Second)
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		c.Close()
		return nil, "", err
	}
	c.SetDeadline(time.Time{})
	return c, strings.TrimSpace(line), nil
}

// hello dials and closes, returning the server's name.
func hello(t testing.TB, ns netns.NsHandle, addr string) string {
	t.Helper()
	c, name, err := dial(t, ns, addr)
	if err != nil {
		t.Fatalf("connecting to %s: %v", addr, err)
	}
	c.Close()
	return name
}

// askUDP sends a datagram from ns to addr and returns the answer.
func askUDP(t testing.TB, ns netns.NsHandle, addr string) string {
	t.Helper()
	var c net.Conn
	inNetns(t, ns, func() (err error) {
		c, err = net.Dial("udp4", addr)
		return err
	})
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("?")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("UDP %s: %v", addr, err)
	}
	return string(buf[:n])
}

// kernelProxier is a Proxier programming n's node namespace.
func kernelProxier(t testing.TB, n *testNet, viaPath bool) *Proxier {
	t.Helper()
	cfg := Config{
		NodeName:    "n1",
		NodeIPs:     nil,
		ClusterCIDR: mustPrefix(clusterCIDR),
	}
	cfg.NodeIPs = append(cfg.NodeIPs, mustAddr(kNodeIP))
	if viaPath {
		cfg.NetnsPath = fmt.Sprintf("/proc/self/fd/%d", int(n.node))
	} else {
		th, err := NewNetnsThread(n.node)
		must(t, err)
		t.Cleanup(th.Close)
		nft, err := NewNFTablesIn(th)
		if err != nil {
			needRoot(t, "nft in the node namespace", err)
		}
		ct, closeCT, err := NewConntrackAt(n.node)
		must(t, err)
		t.Cleanup(closeCT)
		cfg.NFTables, cfg.Conntrack = nft, ct
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestKernel runs the proxy's table in a node namespace with two pods
// and an outside, and connects through it.
func TestKernel(t *testing.T) {
	n := newTestNet(t)
	serve(t, n.podA, "A", 8080)
	serve(t, n.podB, "B", 8080)
	serveWho(t, n.podA, 9000)
	p := kernelProxier(t, n, false)
	ctx := context.Background()
	web := []string{":8080"}
	both := slice("default/web", "web-a", web, ep{podAIP + "@n1", ""}, ep{podBIP + "@n1", ""})
	services := []*corev1.Service{
		svc("default/web", "10.96.0.10", ":80/TCP:30080"),
		svc("default/self", "10.96.0.11", ":80"),
		svc("default/empty", "10.96.0.12", ":80/TCP:30082"),
		withAffinity(svc("default/sticky", "10.96.0.13", ":80"), 0),
		svc("default/dns", "10.96.0.53", "dns:53/UDP"),
		svc("default/who", "10.96.0.14", ":80/TCP:30084"),
	}
	slices := []*discoveryv1.EndpointSlice{
		both,
		slice("default/self", "self-a", web, ep{podAIP + "@n1", ""}),
		slice("default/empty", "empty-a", web, ep{podAIP + "@n1", "-"}),
		slice("default/sticky", "sticky-a", web, ep{podAIP + "@n1", ""}, ep{podBIP + "@n1", ""}),
		slice("default/dns", "dns-a", []string{"dns:8080/UDP"}, ep{podAIP + "@n1", ""}),
		slice("default/who", "who-a", []string{":9000"}, ep{podAIP + "@n1", ""}),
	}
	for _, s := range services {
		p.OnServiceAdd(s)
	}
	for _, s := range slices {
		p.OnEndpointSliceAdd(s)
	}
	p.OnInitialSync()
	if err := p.Sync(ctx, true); err != nil {
		t.Fatalf("first sync: %v", err)
	}

	t.Run("ClusterIP from another pod reaches both endpoints", func(t *testing.T) {
		seen := map[string]bool{}
		for i := 0; i < 20 && len(seen) < 2; i++ {
			seen[hello(t, n.podB, "10.96.0.10:80")] = true
		}
		if !seen["A"] || !seen["B"] {
			t.Errorf("20 connections reached %v, want A and B", seen)
		}
	})
	t.Run("ClusterIP from the node itself (output hook)", func(t *testing.T) {
		if got := hello(t, n.node, "10.96.0.13:80"); got != "A" && got != "B" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("hairpin: a pod through its own Service", func(t *testing.T) {
		if got := hello(t, n.podA, "10.96.0.11:80"); got != "A" {
			t.Errorf("got %q, want A", got)
		}
	})
	t.Run("the source an endpoint sees", func(t *testing.T) {
		// Masqueraded to the node's address on the pods' bridge: NodePort
		// traffic, a node process's, a pod reaching itself; a pod's
		// ClusterIP traffic keeps its source.
		for _, c := range []struct {
			name string
			from netns.NsHandle
			addr string
			want string
		}{
			{"NodePort from outside", n.outside, kNodeIP + ":30084", "10.244.1.1"},
			{"ClusterIP from the node", n.node, "10.96.0.14:80", "10.244.1.1"},
			{"hairpin", n.podA, "10.96.0.14:80", "10.244.1.1"},
			{"ClusterIP from another pod", n.podB, "10.96.0.14:80", podBIP},
		} {
			if got := hello(t, c.from, c.addr); got != c.want {
				t.Errorf("%s: the endpoint sees %s, want %s", c.name, got, c.want)
			}
		}
	})
	t.Run("NodePort from outside the node", func(t *testing.T) {
		seen := map[string]bool{}
		for i := 0; i < 20 && len(seen) < 2; i++ {
			seen[hello(t, n.outside, kNodeIP+":30080")] = true
		}
		if !seen["A"] || !seen["B"] {
			t.Errorf("20 connections reached %v, want A and B", seen)
		}
	})
	t.Run("no endpoints: refused at once", func(t *testing.T) {
		for _, target := range []struct {
			ns   netns.NsHandle
			addr string
		}{{n.podB, "10.96.0.12:80"}, {n.outside, kNodeIP + ":30082"}, {n.node, "10.96.0.12:80"}} {
			start := time.Now()
			_, _, err := dial(t, target.ns, target.addr)
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("%s: %v, want connection refused", target.addr, err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("%s: refused after %v, want at once", target.addr, d)
			}
		}
	})
	t.Run("affinity sticks to one endpoint", func(t *testing.T) {
		first := hello(t, n.podB, "10.96.0.13:80")
		for i := 0; i < 20; i++ {
			if got := hello(t, n.podB, "10.96.0.13:80"); got != first {
				t.Fatalf("connection %d reached %s, the first %s", i+2, got, first)
			}
		}
	})
	t.Run("UDP", func(t *testing.T) {
		if got := askUDP(t, n.podB, "10.96.0.53:53"); got != "A" {
			t.Errorf("got %q, want A", got)
		}
	})
	t.Run("pod egress is masqueraded", func(t *testing.T) {
		// The outside has no route to the pods: only a masqueraded
		// connection gets its answer back.
		serve(t, n.outside, "O", 9090)
		if got := hello(t, n.podB, outsideIP+":9090"); got != "O" {
			t.Errorf("got %q, want O", got)
		}
	})

	t.Run("a full resync by a restarted agent keeps an established connection", func(t *testing.T) {
		c, name, err := dial(t, n.podB, "10.96.0.10:80")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		r := bufio.NewReader(c)
		echo := func(what string) {
			t.Helper()
			c.SetDeadline(time.Now().Add(2 * time.Second))
			if _, err := fmt.Fprintf(c, "%s\n", what); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			line, err := r.ReadString('\n')
			if err != nil || strings.TrimSpace(line) != what {
				t.Fatalf("%s: read %q, %v", what, line, err)
			}
		}
		echo("before")
		restarted := kernelProxier(t, n, true)
		for _, s := range services {
			restarted.OnServiceAdd(s)
		}
		for _, s := range slices {
			restarted.OnEndpointSliceAdd(s)
		}
		restarted.OnInitialSync()
		if err := restarted.Sync(ctx, true); err != nil {
			t.Fatalf("sync after restart: %v", err)
		}
		echo("after the resync")
		if got := hello(t, n.podB, "10.96.0.10:80"); got != "A" && got != "B" {
			t.Errorf("new connection after the resync: %q", got)
		}
		t.Logf("the connection to %s lived through the resync", name)
	})

	t.Run("a removed Service's rules are gone", func(t *testing.T) {
		p.OnServiceDelete(services[1])
		p.OnEndpointSliceDelete(slices[1])
		if err := p.Sync(ctx, false); err != nil {
			t.Fatal(err)
		}
		if _, _, err := dial(t, n.podA, "10.96.0.11:80"); err == nil {
			t.Error("the removed Service still answers")
		}
		// A second later the flushed chains are deleted.
		p.stale = ageStale(p.stale)
		if err := p.Sync(ctx, false); err != nil {
			t.Fatal(err)
		}
		chains, err := p.nft.List(ctx, "chains")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chains {
			if strings.Contains(c, "default/self/") {
				t.Errorf("chain %s left", c)
			}
		}
		if !containsPrefix(chains, "service-") {
			t.Errorf("chains %v: the other Services' are gone too", chains)
		}
	})
}

func ageStale(m map[string]time.Time) map[string]time.Time {
	for c := range m {
		m[c] = m[c].Add(-2 * staleChainDelay)
	}
	return m
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// TestKernelAffinityTimeout: changing a Service's ClientIP affinity
// timeout is applied (the kernel refuses to re-add a set with another
// timeout), later syncs keep working, and affinity still holds.
func TestKernelAffinityTimeout(t *testing.T) {
	n := newTestNet(t)
	serve(t, n.podA, "A", 8080)
	serve(t, n.podB, "B", 8080)
	p := kernelProxier(t, n, false)
	ctx := context.Background()
	sticky := slice("default/sticky", "sticky-a", []string{":8080"}, ep{podAIP + "@n1", ""}, ep{podBIP + "@n1", ""})
	p.OnEndpointSliceAdd(sticky)
	p.OnServiceAdd(withAffinity(svc("default/sticky", "10.96.0.13", ":80"), 60))
	p.OnInitialSync()
	if err := p.Sync(ctx, true); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	p.OnServiceUpdate(nil, withAffinity(svc("default/sticky", "10.96.0.13", ":80"), 120))
	if err := p.Sync(ctx, false); err != nil {
		t.Fatalf("sync with the timeout changed from 60 to 120 s: %v", err)
	}
	p.OnServiceAdd(svc("default/web", "10.96.0.10", ":80"))
	p.OnEndpointSliceAdd(slice("default/web", "web-a", []string{":8080"}, ep{podAIP + "@n1", ""}))
	if err := p.Sync(ctx, false); err != nil {
		t.Fatalf("the sync after: %v", err)
	}
	if got := hello(t, n.podB, "10.96.0.10:80"); got != "A" {
		t.Errorf("the Service added after: %q, want A", got)
	}
	first := hello(t, n.podB, "10.96.0.13:80")
	for i := 0; i < 10; i++ {
		if got := hello(t, n.podB, "10.96.0.13:80"); got != first {
			t.Fatalf("connection %d reached %s, the first %s", i+2, got, first)
		}
	}
	sets, err := p.nft.List(ctx, "sets")
	if err != nil {
		t.Fatal(err)
	}
	var affinity []string
	for _, s := range sets {
		if strings.HasPrefix(s, affinitySetPrefix) {
			affinity = append(affinity, s)
		}
	}
	if len(affinity) != 2 {
		t.Errorf("affinity sets %v, want the 2 of the 120 s timeout", affinity)
	}
}
