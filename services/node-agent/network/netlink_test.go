//go:build linux

package network

import (
	"context"
	"net"
	"os"
	"reflect"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// privileged skips the test, or fails it under CI=true (where tests run as
// root), when the machine cannot give it what it needs.
func privileged(t *testing.T, why string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %v (CI runs the tests as root and must run this one)", why, err)
	}
	t.Skipf("skipped: %s: %v (run the tests as root to cover the netlink router)", why, err)
}

// newNetns makes a network namespace of its own for the test, with a veth
// pair up, one end 192.0.2.1/24 (TEST-NET-1, in that namespace only), and
// returns a netlink handle into it.
func newNetns(t *testing.T) (netns.NsHandle, *netlink.Handle) {
	t.Helper()
	if os.Geteuid() != 0 {
		privileged(t, "a network namespace needs root", os.ErrPermission)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	ns, err := netns.New() // and this thread is in it
	if err != nil {
		privileged(t, "creating a network namespace", err)
	}
	if err := netns.Set(orig); err != nil {
		t.Fatalf("back to the original network namespace: %v", err)
	}
	t.Cleanup(func() { ns.Close() })
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	la := netlink.NewLinkAttrs()
	la.Name = "skiff-test0"
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: "skiff-test1"}); err != nil {
		t.Fatalf("add veth pair: %v", err)
	}
	for _, name := range []string{"skiff-test0", "skiff-test1"} {
		link, err := h.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "skiff-test0" {
			addr, _ := netlink.ParseAddr("192.0.2.1/24")
			if err := h.AddrAdd(link, addr); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.LinkSetUp(link); err != nil {
			t.Fatal(err)
		}
	}
	return ns, h
}

// TestNetlinkRouter runs the real router in a network namespace of the
// test's own: it lists only its own routes (protocol 83), replaces them in
// place, deletes them, and leaves another route in the same range alone.
func TestNetlinkRouter(t *testing.T) {
	ns, h := newNetns(t)
	ctx := context.Background()
	_, other, _ := net.ParseCIDR("10.244.9.0/24")
	if err := h.RouteAdd(&netlink.Route{Dst: other, Gw: net.ParseIP("192.0.2.9")}); err != nil { // proto boot, as `ip route add`
		t.Fatal(err)
	}
	r, err := NewNetlinkRouterAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	list := func() []Route {
		t.Helper()
		l, err := r.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if l := list(); len(l) != 0 {
		t.Fatalf("routes before any change: %v, want none (the boot one is not ours)", l)
	}
	if err := r.Replace(ctx, route("10.244.2.0/24", "192.0.2.2")); err != nil {
		t.Fatal(err)
	}
	if err := r.Replace(ctx, route("10.244.2.0/24", "192.0.2.3")); err != nil {
		t.Fatal(err)
	}
	if l, want := list(), []Route{route("10.244.2.0/24", "192.0.2.3")}; !reflect.DeepEqual(l, want) {
		t.Fatalf("after two replaces: %v, want %v", l, want)
	}
	got, err := h.RouteGet(net.ParseIP("10.244.2.7"))
	if err != nil || len(got) != 1 || !got[0].Gw.Equal(net.ParseIP("192.0.2.3")) {
		t.Errorf("the kernel routes 10.244.2.7 by %v (%v), want via 192.0.2.3", got, err)
	}
	if err := r.Delete(ctx, route("10.244.2.0/24", "192.0.2.3")); err != nil {
		t.Fatal(err)
	}
	if l := list(); len(l) != 0 {
		t.Errorf("after delete: %v", l)
	}
	if err := r.Replace(ctx, route("10.244.3.0/24", "198.51.100.1")); err == nil {
		t.Error("a route through an unreachable address was accepted")
	}
	kept, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Dst: other}, netlink.RT_FILTER_DST)
	if err != nil || len(kept) != 1 {
		t.Errorf("the other route to %s: %v, %v; want it kept", other, kept, err)
	}
}
