//go:build linux

package network

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// EnsureLocalAddress makes addr an address of this network namespace, as
// NodeLocal DNSCache binds its link-local address: nothing when an
// interface has it already, else addr/32 on the loopback interface (not a
// dummy interface: some kernels have no dummy driver). The kernel accepts
// packets to it arriving on any interface, so pods reach it through their
// default route (the node), and no other machine routes to it.
func EnsureLocalAddress(h *netlink.Handle, addr netip.Addr) error {
	addrs, err := h.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("listing addresses: %w", err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == addr {
			return nil
		}
	}
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("the loopback interface: %w", err)
	}
	if err := h.AddrAdd(lo, &netlink.Addr{IPNet: &net.IPNet{IP: addr.AsSlice(), Mask: net.CIDRMask(32, 32)}}); err != nil {
		return fmt.Errorf("adding %s to lo: %w", addr, err)
	}
	return nil
}
