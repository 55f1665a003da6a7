//go:build linux

package app

import (
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"skiff.dev/services/node-agent/network"
)

// ensureLocalAddress gives the agent's network namespace addr (the DNS
// server's), on its loopback interface unless an interface has it.
func ensureLocalAddress(addr netip.Addr) error {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer h.Close()
	return network.EnsureLocalAddress(h, addr)
}
