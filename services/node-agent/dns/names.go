package dns

import (
	"net/netip"
	"strconv"
	"strings"
)

// nameKind is what a name of the cluster zone designates, as CoreDNS's
// kubernetes plugin takes names apart (plugin/kubernetes/parse.go).
type nameKind int

const (
	// nameInvalid is a name of the zone that cannot exist (an unknown
	// second label, too many labels): NXDOMAIN.
	nameInvalid nameKind = iota
	// nameApex is <zone>, svc.<zone> or pod.<zone>: exists, no records.
	nameApex
	// nameNamespace is <ns>.svc.<zone> or <ns>.pod.<zone>: exists when
	// the namespace does, no records.
	nameNamespace
	// nameService is <svc>.<ns>.svc.<zone>.
	nameService
	// nameEndpoint is <endpoint>.<svc>.<ns>.svc.<zone>, the endpoint named
	// by its hostname or its dashed address.
	nameEndpoint
	// namePort is _<port>._<proto>.<svc>.<ns>.svc.<zone>, the SRV name of
	// a named port.
	namePort
	// namePod is <a-b-c-d>.<ns>.pod.<zone>.
	namePod
)

// clusterName is a name of the cluster zone taken apart. Labels are lower
// case (names are compared without regard to case, RFC 4343).
type clusterName struct {
	kind      nameKind
	namespace string
	service   string
	endpoint  string
	port      string // without its underscore
	protocol  string // without its underscore, lower case: "tcp"
	podIP     netip.Addr
}

// fqdn returns the lower-case fully qualified form of name ("a.b.").
func fqdn(name string) string {
	name = strings.ToLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return name
}

// inZone reports whether qname (lower case, fully qualified) is zone
// (lower case, fully qualified) or under it, and returns the labels before
// it ("" for the apex).
func inZone(qname, zone string) (base string, ok bool) {
	if qname == zone {
		return "", true
	}
	if strings.HasSuffix(qname, "."+zone) {
		return qname[:len(qname)-len(zone)-1], true
	}
	if zone == "." { // the root zone holds every name
		return strings.TrimSuffix(qname, "."), true
	}
	return "", false
}

// parseName takes apart qname, a lower-case fully qualified name of zone
// (inZone returned its base): the rules of CoreDNS's parseRequest, except
// that a pod name with labels before the address is invalid (CoreDNS
// ignores them).
func parseName(base string) clusterName {
	if base == "" || base == "svc" || base == "pod" {
		return clusterName{kind: nameApex}
	}
	segs := strings.Split(base, ".")
	for _, s := range segs {
		if s == "" { // "a..b": not a name a resolver sends
			return clusterName{kind: nameInvalid}
		}
	}
	last := len(segs) - 1
	typ := segs[last]
	if typ != "svc" && typ != "pod" {
		return clusterName{kind: nameInvalid}
	}
	n := clusterName{kind: nameNamespace, namespace: segs[last-1]}
	rest := segs[:last-1]
	if typ == "pod" {
		switch len(rest) {
		case 0:
			return n
		case 1:
			ip, ok := parseDashedIPv4(rest[0])
			if !ok {
				return clusterName{kind: nameInvalid}
			}
			n.kind, n.podIP = namePod, ip
			return n
		default:
			return clusterName{kind: nameInvalid}
		}
	}
	switch len(rest) {
	case 0:
		return n
	case 1:
		n.kind, n.service = nameService, rest[0]
	case 2:
		n.kind, n.service, n.endpoint = nameEndpoint, rest[1], rest[0]
	case 3:
		// As CoreDNS: the port and protocol labels lose one leading
		// underscore each if they have one.
		n.kind, n.service = namePort, rest[2]
		n.port = strings.TrimPrefix(rest[0], "_")
		n.protocol = strings.TrimPrefix(rest[1], "_")
		if n.port == "" || n.protocol == "" {
			return clusterName{kind: nameInvalid}
		}
	default:
		return clusterName{kind: nameInvalid}
	}
	return n
}

// parseDashedIPv4 reads "10-244-1-5" as 10.244.1.5.
func parseDashedIPv4(label string) (netip.Addr, bool) {
	if strings.Count(label, "-") != 3 {
		return netip.Addr{}, false
	}
	ip, err := netip.ParseAddr(strings.ReplaceAll(label, "-", "."))
	if err != nil || !ip.Is4() {
		return netip.Addr{}, false
	}
	return ip, true
}

// dashedIPv4 is the name label of an address: 10.244.1.5 -> "10-244-1-5",
// as endpoints without a hostname are named.
func dashedIPv4(ip netip.Addr) string {
	return strings.ReplaceAll(ip.String(), ".", "-")
}

// reverseZone is the IPv4 reverse zone, in-addr.arpa.
const reverseZone = "in-addr.arpa."

// parseReverse reads "d.c.b.a.in-addr.arpa." (lower case, fully qualified)
// as a.b.c.d; ok is false for any other name, including the shorter names
// of reverse sub-zones.
func parseReverse(qname string) (netip.Addr, bool) {
	base, ok := strings.CutSuffix(qname, "."+reverseZone)
	if !ok {
		return netip.Addr{}, false
	}
	segs := strings.Split(base, ".")
	if len(segs) != 4 {
		return netip.Addr{}, false
	}
	ip, err := netip.ParseAddr(segs[3] + "." + segs[2] + "." + segs[1] + "." + segs[0])
	if err != nil || !ip.Is4() {
		return netip.Addr{}, false
	}
	return ip, true
}

// reverseName is the PTR owner name of ip: 10.96.0.1 -> 1.0.96.10.in-addr.arpa.
func reverseName(ip netip.Addr) string {
	b := ip.As4()
	return strconv.Itoa(int(b[3])) + "." + strconv.Itoa(int(b[2])) + "." + strconv.Itoa(int(b[1])) + "." +
		strconv.Itoa(int(b[0])) + "." + reverseZone
}
