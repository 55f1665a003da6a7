//go:build linux

package network

import (
	"net"
	"net/netip"
	"testing"
)

// TestEnsureLocalAddress: in a namespace of the test's own, the address
// goes on the loopback interface once; again is a no-op; an address some
// interface has already is left alone.
func TestEnsureLocalAddress(t *testing.T) {
	_, h := newNetns(t)
	lo, err := h.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		addrs, err := h.AddrList(lo, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, a := range addrs {
			if a.IP.Equal(net.ParseIP("169.254.20.10")) {
				n++
			}
		}
		return n
	}
	for range 2 {
		if err := EnsureLocalAddress(h, netip.MustParseAddr("169.254.20.10")); err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 1 {
			t.Fatalf("169.254.20.10 on lo %d times", n)
		}
	}
	// 192.0.2.1 is skiff-test0's: not added to lo.
	if err := EnsureLocalAddress(h, netip.MustParseAddr("192.0.2.1")); err != nil {
		t.Fatal(err)
	}
	addrs, _ := h.AddrList(lo, 0)
	for _, a := range addrs {
		if a.IP.Equal(net.ParseIP("192.0.2.1")) {
			t.Error("added an address the namespace has to lo")
		}
	}
}
