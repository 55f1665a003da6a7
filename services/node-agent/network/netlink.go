//go:build linux

package network

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netlinkHandle is a netlink socket of a network namespace, shared by
// NetlinkRouter and NetlinkOverlay.
type netlinkHandle struct {
	h *netlink.Handle
}

// openNetlink opens a netlink socket in ns (nil: the agent's own
// namespace).
func openNetlink(ns *netns.NsHandle) (netlinkHandle, error) {
	var h *netlink.Handle
	var err error
	if ns == nil {
		h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
	} else {
		h, err = netlink.NewHandleAt(*ns, unix.NETLINK_ROUTE)
	}
	if err != nil {
		return netlinkHandle{}, fmt.Errorf("netlink: %w", err)
	}
	return netlinkHandle{h: h}, nil
}

// Close releases the netlink socket.
func (n netlinkHandle) Close() { n.h.Close() }

// NetlinkRouter is the Router of a network namespace's main routing table,
// through netlink. It needs CAP_NET_ADMIN to change routes.
type NetlinkRouter struct{ netlinkHandle }

// NewNetlinkRouter returns the Router of the agent's own network namespace.
func NewNetlinkRouter() (*NetlinkRouter, error) {
	n, err := openNetlink(nil)
	return &NetlinkRouter{n}, err
}

// NewNetlinkRouterAt returns the Router of the network namespace ns.
func NewNetlinkRouterAt(ns netns.NsHandle) (*NetlinkRouter, error) {
	n, err := openNetlink(&ns)
	return &NetlinkRouter{n}, err
}

// List implements Router: the main table's routes of protocol
// RouteProtocol with a single gateway, of both families, with their
// device when onlink.
func (r *NetlinkRouter) List(context.Context) ([]Route, error) {
	filter := &netlink.Route{Table: unix.RT_TABLE_MAIN, Protocol: RouteProtocol}
	routes, err := r.h.RouteListFiltered(netlink.FAMILY_ALL, filter, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	var out []Route
	for _, nr := range routes {
		if nr.Dst == nil || nr.Gw == nil {
			continue // not one of the agent's shape: leave it to whoever made it
		}
		dst, ok1 := prefixOf(nr.Dst)
		via, ok2 := netip.AddrFromSlice(nr.Gw)
		if !ok1 || !ok2 {
			continue
		}
		rt := Route{Dst: dst, Via: via.Unmap()}
		if nr.Flags&int(netlink.FLAG_ONLINK) != 0 {
			link, err := r.h.LinkByIndex(nr.LinkIndex)
			if err != nil {
				return nil, fmt.Errorf("list routes: the device of %s: %w", rt, err)
			}
			rt.Dev = link.Attrs().Name
		}
		out = append(out, rt)
	}
	return out, nil
}

// Replace implements Router (`ip route replace DST via VIA [dev DEV
// onlink] proto 83`).
func (r *NetlinkRouter) Replace(_ context.Context, rt Route) error {
	nr, err := r.toNetlink(rt)
	if err == nil {
		err = r.h.RouteReplace(nr)
	}
	if err != nil {
		return fmt.Errorf("replace route %s: %w", rt, err)
	}
	return nil
}

// Delete implements Router.
func (r *NetlinkRouter) Delete(_ context.Context, rt Route) error {
	nr, err := r.toNetlink(rt)
	if err == nil {
		err = r.h.RouteDel(nr)
	}
	if err != nil {
		return fmt.Errorf("delete route %s: %w", rt, err)
	}
	return nil
}

func (r *NetlinkRouter) toNetlink(rt Route) (*netlink.Route, error) {
	nr := &netlink.Route{
		Dst:      ipNet(rt.Dst),
		Gw:       rt.Via.AsSlice(),
		Table:    unix.RT_TABLE_MAIN,
		Protocol: RouteProtocol,
	}
	if rt.Dev != "" {
		link, err := r.h.LinkByName(rt.Dev)
		if err != nil {
			return nil, err
		}
		nr.LinkIndex = link.Attrs().Index
		nr.Flags = int(netlink.FLAG_ONLINK)
	}
	return nr, nil
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	ip, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ip = ip.Unmap()
	ones, bits := n.Mask.Size()
	if bits != ip.BitLen() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(ip, ones), true
}

// DefaultRouter is the Router of the agent's own network namespace.
func DefaultRouter() (Router, error) { return NewNetlinkRouter() }
