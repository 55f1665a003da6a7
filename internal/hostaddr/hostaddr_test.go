package hostaddr

import (
	"net/netip"
	"testing"
)

// A route table as /proc/net/route gives it: the default route through
// eth0 (gateway 10.211.62.1), its subnet, and a pod subnet on cni0.
const routesViaEth0 = `Iface	Destination	Gateway 	Flags	RefCnt	Use	Metric	Mask		MTU	Window	IRTT
eth0	00000000	013ED30A	0003	0	0	0	00000000	0	0	0
eth0	003ED30A	00000000	0001	0	0	0	00FFFFFF	0	0	0
cni0	0000F40A	00000000	0001	0	0	0	00FFFFFF	0	0	0
`

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// TestChoose: the address of the default route's interface, whatever
// comes first in the interfaces' order: a node agent restarted on a node
// whose pod bridge (cni0) is listed before eth0 took the bridge's address
// for its InternalIP (seen in the install test: node1 became 10.244.0.1,
// and the other nodes' routes and tunnels to it went nowhere).
func TestChoose(t *testing.T) {
	lo := Interface{Name: "lo", Up: true, Loopback: true, Addrs: addrs("127.0.0.1")}
	cni0 := Interface{Name: "cni0", Up: true, Addrs: addrs("10.244.0.1")}
	vxlan := Interface{Name: "skiff.vxlan", Up: true, Addrs: addrs("10.244.0.0")}
	eth0 := Interface{Name: "eth0", Up: true, Addrs: addrs("fe80::1", "169.254.3.4", "10.211.62.21", "10.211.62.99")}
	eth1 := Interface{Name: "eth1", Up: true, Addrs: addrs("192.168.7.2")}
	for _, tc := range []struct {
		name   string
		routes string
		ifaces []Interface
		want   string
	}{
		{"the default route's interface, not the first", routesViaEth0, []Interface{lo, cni0, vxlan, eth0}, "10.211.62.21"},
		{"of two default routes, the lower metric", "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n" +
			"eth0\t00000000\t013ED30A\t0003\t0\t0\t200\t00000000\n" +
			"eth1\t00000000\t0107A8C0\t0003\t0\t0\t100\t00000000\n", []Interface{lo, eth0, eth1}, "192.168.7.2"},
		{"a default route that is down is none", "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n" +
			"eth1\t00000000\t0107A8C0\t0002\t0\t0\t0\t00000000\n" +
			"eth0\t00000000\t013ED30A\t0003\t0\t0\t50\t00000000\n", []Interface{lo, eth1, eth0}, "10.211.62.21"},
		{"the default route's interface down: the first address up", routesViaEth0, []Interface{lo, {Name: "eth0", Addrs: eth0.Addrs}, eth1}, "192.168.7.2"},
		{"no default route: the first address up, not a loopback's", "", []Interface{lo, eth1, eth0}, "192.168.7.2"},
		{"nothing but a loopback", routesViaEth0, []Interface{lo}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Choose([]byte(tc.routes), tc.ifaces)
			if tc.want == "" {
				if ok {
					t.Errorf("chose %s, want none", got)
				}
				return
			}
			if !ok || got.String() != tc.want {
				t.Errorf("chose %v (%v), want %s", got, ok, tc.want)
			}
		})
	}
}

// TestDefault: this host has an address (CI's machines and containers
// have a default route).
func TestDefault(t *testing.T) {
	a, ok := Default()
	if !ok || !a.Is4() || a.IsLoopback() {
		t.Errorf("Default() = %v, %v", a, ok)
	}
}
