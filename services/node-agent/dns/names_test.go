package dns

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseName(t *testing.T) {
	const zone = "cluster.local."
	cases := []struct {
		qname string
		want  clusterName
	}{
		{"cluster.local.", clusterName{kind: nameApex}},
		{"svc.cluster.local.", clusterName{kind: nameApex}},
		{"pod.cluster.local.", clusterName{kind: nameApex}},
		{"default.svc.cluster.local.", clusterName{kind: nameNamespace, namespace: "default"}},
		{"default.pod.cluster.local.", clusterName{kind: nameNamespace, namespace: "default"}},
		{"web.default.svc.cluster.local.", clusterName{kind: nameService, namespace: "default", service: "web"}},
		{"db-0.db.default.svc.cluster.local.", clusterName{kind: nameEndpoint, namespace: "default", service: "db", endpoint: "db-0"}},
		{"_http._tcp.web.default.svc.cluster.local.",
			clusterName{kind: namePort, namespace: "default", service: "web", port: "http", protocol: "tcp"}},
		{"http.tcp.web.default.svc.cluster.local.", // underscores are optional, as CoreDNS reads them
			clusterName{kind: namePort, namespace: "default", service: "web", port: "http", protocol: "tcp"}},
		{"__http._tcp.web.default.svc.cluster.local.", // one underscore is taken off
			clusterName{kind: namePort, namespace: "default", service: "web", port: "_http", protocol: "tcp"}},
		{"_._tcp.web.default.svc.cluster.local.", clusterName{kind: nameInvalid}},
		{"a.b.c.d.default.svc.cluster.local.", clusterName{kind: nameInvalid}},
		{"10-244-1-5.default.pod.cluster.local.",
			clusterName{kind: namePod, namespace: "default", podIP: netip.MustParseAddr("10.244.1.5")}},
		{"10-244-1.default.pod.cluster.local.", clusterName{kind: nameInvalid}},
		{"10-244-1-500.default.pod.cluster.local.", clusterName{kind: nameInvalid}},
		{"010-244-1-5.default.pod.cluster.local.", clusterName{kind: nameInvalid}},
		{"x.10-244-1-5.default.pod.cluster.local.", clusterName{kind: nameInvalid}},
		{"fd00--1.default.pod.cluster.local.", clusterName{kind: nameInvalid}},
		{"foo.cluster.local.", clusterName{kind: nameInvalid}},
		{"web.default.cluster.local.", clusterName{kind: nameInvalid}},
		{"dns-version.cluster.local.", clusterName{kind: nameInvalid}},
	}
	for _, tc := range cases {
		t.Run(tc.qname, func(t *testing.T) {
			base, ok := inZone(tc.qname, zone)
			if !ok {
				t.Fatalf("%s is not in %s", tc.qname, zone)
			}
			if got := parseName(base); got != tc.want {
				t.Errorf("parseName(%q) = %+v, want %+v", base, got, tc.want)
			}
		})
	}
}

func TestInZone(t *testing.T) {
	cases := []struct {
		qname, zone string
		base        string
		ok          bool
	}{
		{"cluster.local.", "cluster.local.", "", true},
		{"a.cluster.local.", "cluster.local.", "a", true},
		{"acluster.local.", "cluster.local.", "", false},
		{"local.", "cluster.local.", "", false},
		{"example.org.", "cluster.local.", "", false},
		{"a.b.", ".", "a.b", true},
	}
	for _, tc := range cases {
		base, ok := inZone(tc.qname, tc.zone)
		if base != tc.base || ok != tc.ok {
			t.Errorf("inZone(%q, %q) = %q, %v, want %q, %v", tc.qname, tc.zone, base, ok, tc.base, tc.ok)
		}
	}
}

func TestReverseNames(t *testing.T) {
	cases := []struct {
		qname string
		ip    string // "" not an address
	}{
		{"10.0.96.10.in-addr.arpa.", "10.96.0.10"},
		{"0.96.10.in-addr.arpa.", ""},
		{"1.10.0.96.10.in-addr.arpa.", ""},
		{"256.0.96.10.in-addr.arpa.", ""},
		{"10.0.96.10.in-addr.arpa.example.", ""},
	}
	for _, tc := range cases {
		ip, ok := parseReverse(tc.qname)
		if (tc.ip == "") == ok || (ok && ip.String() != tc.ip) {
			t.Errorf("parseReverse(%q) = %v, %v, want %q", tc.qname, ip, ok, tc.ip)
		}
		if ok && reverseName(ip) != tc.qname {
			t.Errorf("reverseName(%v) = %q, want %q", ip, reverseName(ip), tc.qname)
		}
	}
}

// FuzzParseName checks that any name parses without panicking, and that
// what it parses to names itself again: the parts, put back together,
// parse to the same parts.
func FuzzParseName(f *testing.F) {
	for _, s := range []string{"", "svc", "web.default.svc", "db-0.db.default.svc", "_http._tcp.web.default.svc",
		"10-1-2-3.default.pod", "a..svc", ".svc", "a.b.c.d.e.svc", "x.pod", "-.-.svc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, base string) {
		base = strings.ToLower(base)
		n := parseName(base)
		var again string
		switch n.kind {
		case nameInvalid, nameApex:
			return
		case nameNamespace:
			again = n.namespace + "." + base[strings.LastIndexByte(base, '.')+1:]
		case nameService:
			again = n.service + "." + n.namespace + ".svc"
		case nameEndpoint:
			again = n.endpoint + "." + n.service + "." + n.namespace + ".svc"
		case namePort:
			again = "_" + n.port + "._" + n.protocol + "." + n.service + "." + n.namespace + ".svc"
		case namePod:
			if !n.podIP.Is4() {
				t.Fatalf("pod name %q: address %v is not IPv4", base, n.podIP)
			}
			again = dashedIPv4(n.podIP) + "." + n.namespace + ".pod"
		}
		for _, l := range strings.Split(again, ".") {
			if l == "" {
				t.Fatalf("%q parsed to %+v, with an empty label", base, n)
			}
		}
		if n2 := parseName(again); n2 != n {
			t.Fatalf("%q parsed to %+v; %q, made of it, to %+v", base, n, again, n2)
		}
	})
}
