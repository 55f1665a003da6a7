// Package hostaddr chooses a host's own address when none is given, as
// Kubernetes does for the kubelet's node IP and the apiserver's advertise
// address (k8s.io/apimachinery's ChooseHostInterface): the IPv4 address of
// the interface the default route leaves through. Not the first address
// of the first interface: on a node that already runs pods that is the
// pod bridge's (cni0, 10.244.0.1), which no other machine reaches.
package hostaddr

import (
	"bufio"
	"bytes"
	"cmp"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Interface is what the choice reads of a network interface.
type Interface struct {
	Name         string
	Up, Loopback bool
	Addrs        []netip.Addr
}

// Default is the host's address: the first global unicast IPv4 address
// of the interface of the default route (the one of lowest metric when
// there are several), from /proc/net/route; with no default route, or
// none through an interface with such an address, the first such address
// of an interface that is up and not a loopback. ok is false when the
// host has none.
func Default() (netip.Addr, bool) {
	routes, _ := os.ReadFile("/proc/net/route")
	return Choose(routes, interfaces())
}

// Choose is Default's choice from the content of /proc/net/route and the
// interfaces, in order.
func Choose(procNetRoute []byte, ifaces []Interface) (netip.Addr, bool) {
	byName := map[string]Interface{}
	for _, i := range ifaces {
		byName[i.Name] = i
	}
	for _, name := range defaultRouteInterfaces(procNetRoute) {
		if a, ok := address(byName[name]); ok {
			return a, true
		}
	}
	for _, i := range ifaces {
		if a, ok := address(i); ok {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// address is the first global unicast IPv4 address of an interface that
// is up and not a loopback.
func address(i Interface) (netip.Addr, bool) {
	if !i.Up || i.Loopback {
		return netip.Addr{}, false
	}
	for _, a := range i.Addrs {
		if a = a.Unmap(); a.Is4() && a.IsGlobalUnicast() {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// defaultRouteInterfaces are the interfaces of the default routes that
// are up in /proc/net/route ("Iface Destination Gateway Flags RefCnt Use
// Metric Mask ...", hexadecimal), lowest metric first.
func defaultRouteInterfaces(procNetRoute []byte) []string {
	type route struct {
		iface  string
		metric uint64
	}
	var routes []route
	sc := bufio.NewScanner(bytes.NewReader(procNetRoute))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[1] != "00000000" || f[7] != "00000000" {
			continue
		}
		flags, err := strconv.ParseUint(f[3], 16, 32)
		if err != nil || flags&0x1 == 0 { // RTF_UP
			continue
		}
		metric, err := strconv.ParseUint(f[6], 10, 32)
		if err != nil {
			continue
		}
		routes = append(routes, route{f[0], metric})
	}
	// Of equal metrics, the table's order.
	slices.SortStableFunc(routes, func(a, b route) int { return cmp.Compare(a.metric, b.metric) })
	names := make([]string, len(routes))
	for i, r := range routes {
		names[i] = r.iface
	}
	return names
}

// interfaces are the host's interfaces and their addresses.
func interfaces() []Interface {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	out := make([]Interface, 0, len(ifs))
	for _, i := range ifs {
		it := Interface{Name: i.Name, Up: i.Flags&net.FlagUp != 0, Loopback: i.Flags&net.FlagLoopback != 0}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok {
					it.Addrs = append(it.Addrs, ip.Unmap())
				}
			}
		}
		out = append(out, it)
	}
	return out
}
