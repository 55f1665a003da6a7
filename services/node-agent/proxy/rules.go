package proxy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/knftables"
)

// TableName is the nftables table the proxy owns, in family ip. Nothing
// else in it is anyone else's: every sync rewrites it whole.
const TableName = "skiff-proxy"

// MasqueradeMark is the packet mark bit that asks the masquerading chain
// to source-NAT a packet (kube-proxy's default bit, 14).
const MasqueradeMark = "0x00004000"

// Chains, maps and sets of the table that do not depend on the Services.
const (
	servicesChain      = "services"
	endpointsCheck     = "endpoints-check"
	rejectChain        = "reject-chain"
	markMasqChain      = "mark-for-masquerade"
	masqueradingChain  = "masquerading"
	podEgressChain     = "pod-egress"
	serviceIPsMap      = "service-ips"
	serviceNodePorts   = "service-nodeports"
	noEndpointServices = "no-endpoint-services"
	noEndpointNodePort = "no-endpoint-nodeports"
	nodePortIPsSet     = "nodeport-ips"
	hairpinSet         = "hairpin-pairs"
)

// Prefixes of the per-service-port chains and sets. Every one of their
// names has a "/" in it (none of the fixed names does): that is how a sync
// tells the chains it manages per Service from the fixed ones.
const (
	serviceChainPrefix  = "service-"
	localChainPrefix    = "local-"
	endpointChainPrefix = "endpoint-"
	affinitySetPrefix   = "affinity-"
)

type baseChain struct {
	name     string
	typ      knftables.BaseChainType
	hook     knftables.BaseChainHook
	priority knftables.BaseChainPriority
}

// baseChains hook the table into netfilter. The filter chains run before
// DNAT (they look at the service address); reject is only allowed in
// input, forward and output. The nat output chain is what lets a process
// of the node itself reach a ClusterIP.
var baseChains = []baseChain{
	{"filter-input", knftables.FilterType, knftables.InputHook, knftables.DNATPriority + "-10"},
	{"filter-forward", knftables.FilterType, knftables.ForwardHook, knftables.DNATPriority + "-10"},
	{"filter-output", knftables.FilterType, knftables.OutputHook, knftables.DNATPriority + "-10"},
	{"nat-prerouting", knftables.NATType, knftables.PreroutingHook, knftables.DNATPriority},
	{"nat-output", knftables.NATType, knftables.OutputHook, knftables.DNATPriority},
	{"nat-postrouting", knftables.NATType, knftables.PostroutingHook, knftables.SNATPriority},
}

// jumps are the fixed rules of the base chains.
var jumps = []struct{ from, rule string }{
	{"filter-input", "ct state new jump " + endpointsCheck},
	{"filter-forward", "ct state new jump " + endpointsCheck},
	{"filter-output", "ct state new jump " + endpointsCheck},
	{"nat-prerouting", "jump " + servicesChain},
	{"nat-output", "jump " + servicesChain},
	{"nat-postrouting", "jump " + masqueradingChain},
	{"nat-postrouting", "jump " + podEgressChain},
}

// Existing is what the table holds before a sync, as far as WriteTable
// needs to know. The zero value is a table that does not exist (or that
// the same transaction deletes first): nothing is flushed.
type Existing struct {
	// Exists: the table is there, with the fixed chains, maps and sets
	// WriteTable writes (their contents are replaced).
	Exists bool
	// Chains and Sets are the names of its chains and sets.
	Chains, Sets []string
	// Content is what per-service-port chains hold (Written.Content of
	// the transaction that wrote them) when that is known for sure: a
	// chain whose rules would be the same is left as it is. Nil: every
	// chain is written anew.
	Content map[string]string
}

// Written is what WriteTable put in a transaction.
type Written struct {
	// Chains are the per-service-port chains the table has after it, Sets
	// its affinity sets.
	Chains, Sets map[string]bool
	// Stale are per-service-port chains of Existing no longer used: the
	// transaction flushes them (and nothing jumps to them any more); they
	// are to be deleted by a later transaction (see Proxier: kernels
	// before 6.2 refuse to delete a chain a just-removed map element
	// pointed to).
	Stale []string
	// Content is what each of Chains holds: its rules, one a line.
	Content map[string]string
	// Rules is the number of rules the table holds after the transaction,
	// Elements the number of map and set elements (not counting the
	// endpoints listed in the rules' own anonymous maps). Unchanged is
	// the number of chains the transaction left as they were (see
	// Existing.Content).
	Rules, Elements, Unchanged int
}

// writer adds to one transaction and counts what it adds.
type writer struct {
	tx     *knftables.Transaction
	s      *Snapshot
	exists bool // the table is there: objects are flushed after their add
	before map[string]string
	out    *Written
	// The per-service-port chains of the port being written, in order,
	// and their rules: written by endPort unless unchanged.
	pending []string
	bodies  map[string][]string
}

func (w *writer) rule(chain string, parts ...any) {
	r := knftables.Concat(parts...)
	w.out.Rules++
	if isPortChain(chain) {
		w.bodies[chain] = append(w.bodies[chain], r)
		return
	}
	w.tx.Add(&knftables.Rule{Chain: chain, Rule: r})
}

func (w *writer) element(e *knftables.Element) {
	w.tx.Add(e)
	w.out.Elements++
}

// add makes sure a chain, map or set exists and is empty: a new table's
// are, an existing table's are flushed.
func (w *writer) add(obj knftables.Object) {
	w.tx.Add(obj)
	if w.exists {
		w.tx.Flush(obj)
	}
}

// WriteTable adds to tx what makes table TableName hold exactly the rules
// of s, whatever it held before (as existing tells): the table, its fixed
// chains, maps and sets (created if missing, emptied), every service
// port's chains written anew, the chains and affinity sets of existing
// that s no longer uses flushed and removed (sets at once, chains by the
// caller later: see Written.Stale). Affinity sets of ports still there
// are kept with their contents, so clients stay on their endpoints across
// syncs.
//
// A packet to ClusterIP:port (nat prerouting for pods and the outside,
// nat output for the node's own processes) meets the service-ips verdict
// map and goes to the port's chain; a packet to a node address at a
// NodePort is marked for masquerading and meets service-nodeports, which
// sends it to the same chain (under internalTrafficPolicy Local, the one
// with every endpoint). A port chain picks an endpoint at random and
// DNATs to it in one rule (numgen into an anonymous map of address .
// port); with ClientIP affinity it sends the client to the endpoint it
// has affinity to, if any, else picks an endpoint chain at random, which
// records the client in the endpoint's affinity set and DNATs. A client
// that lands on itself (hairpin) is masqueraded in postrouting: its
// source and new destination are a pair of hairpin-pairs. Ports without
// endpoints are in the no-endpoint maps instead, whose verdict is reject
// (drop when only the Local policy leaves none), checked for new
// connections in the filter chains.
func WriteTable(tx *knftables.Transaction, s *Snapshot, existing Existing) Written {
	out := Written{Chains: map[string]bool{}, Sets: map[string]bool{}, Content: map[string]string{}}
	w := &writer{tx: tx, s: s, exists: existing.Exists, before: existing.Content, out: &out, bodies: map[string][]string{}}
	if !existing.Exists {
		w.before = nil
	}
	w.fixed(s)
	hairpin := map[netip.Addr]bool{}
	for i := range s.Ports {
		w.servicePort(&s.Ports[i], hairpin)
	}
	pairs := make([]netip.Addr, 0, len(hairpin))
	for a := range hairpin {
		pairs = append(pairs, a)
	}
	slices.SortFunc(pairs, netip.Addr.Compare)
	for _, a := range pairs {
		w.element(&knftables.Element{Set: hairpinSet, Key: []string{a.String(), a.String()}})
	}
	for _, c := range existing.Chains {
		if isPortChain(c) && !out.Chains[c] {
			tx.Flush(&knftables.Chain{Name: c})
			out.Stale = append(out.Stale, c)
		}
	}
	for _, set := range existing.Sets {
		if strings.HasPrefix(set, affinitySetPrefix) && !out.Sets[set] {
			tx.Delete(&knftables.Set{Name: set})
		}
	}
	return out
}

// isPortChain reports whether a chain is one made per service port.
func isPortChain(name string) bool { return strings.Contains(name, "/") }

// fixed writes what does not depend on the Services.
func (w *writer) fixed(s *Snapshot) {
	tx := w.tx
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("Skiff node agent: Service virtual IPs and NodePorts")})
	for _, bc := range baseChains {
		w.add(&knftables.Chain{Name: bc.name, Type: knftables.PtrTo(bc.typ), Hook: knftables.PtrTo(bc.hook), Priority: knftables.PtrTo(bc.priority)})
	}
	for _, c := range []string{servicesChain, endpointsCheck, rejectChain, markMasqChain, masqueradingChain, podEgressChain} {
		w.add(&knftables.Chain{Name: c})
	}
	const key = "ipv4_addr . inet_proto . inet_service : verdict"
	for _, m := range []*knftables.Map{
		{Name: serviceIPsMap, Type: key, Comment: knftables.PtrTo("ClusterIP traffic")},
		{Name: serviceNodePorts, Type: "inet_proto . inet_service : verdict", Comment: knftables.PtrTo("NodePort traffic")},
		{Name: noEndpointServices, Type: key, Comment: knftables.PtrTo("service ports without endpoints: reject or drop")},
		{Name: noEndpointNodePort, Type: "inet_proto . inet_service : verdict", Comment: knftables.PtrTo("NodePorts without endpoints: reject")},
	} {
		w.add(m)
	}
	w.add(&knftables.Set{Name: nodePortIPsSet, Type: "ipv4_addr", Comment: knftables.PtrTo("addresses NodePorts answer on")})
	w.add(&knftables.Set{Name: hairpinSet, Type: "ipv4_addr . ipv4_addr", Comment: knftables.PtrTo("endpoint . endpoint: a client DNATed to itself")})
	for _, a := range s.NodePortAddresses {
		if a.Is4() && !a.IsLoopback() {
			w.element(&knftables.Element{Set: nodePortIPsSet, Key: []string{a.String()}})
		}
	}

	for _, j := range jumps {
		w.rule(j.from, j.rule)
	}
	w.rule(markMasqChain, "mark set mark or", MasqueradeMark)
	// Hairpin: the client is the endpoint it was DNATed to. (Any DNAT: a
	// CNI hostPort to a pod reaching itself needs the same.)
	w.rule(masqueradingChain, "ct status dnat ip saddr . ip daddr @"+hairpinSet, "jump", markMasqChain)
	w.rule(masqueradingChain, "mark and", MasqueradeMark, "== 0 return")
	w.rule(masqueradingChain, "mark set mark xor", MasqueradeMark)
	w.rule(masqueradingChain, "masquerade fully-random")
	if s.ClusterCIDR.IsValid() {
		cidr := s.ClusterCIDR.Masked()
		w.rule(podEgressChain, "ip saddr", cidr, "ip daddr !=", cidr, "masquerade")
	}
	w.rule(rejectChain, "reject")

	// Traffic to a ClusterIP from outside the pod network (the node's own
	// processes, or a router sending the service range here) is marked
	// for masquerading so that the reply comes back through this node;
	// so is all NodePort traffic (it may leave for another node, whose
	// reply must come back here).
	if cidr := s.ClusterCIDR; cidr.IsValid() {
		w.rule(servicesChain, "ip saddr !=", cidr.Masked(), "ip daddr . meta l4proto . th dport @"+serviceIPsMap, "jump", markMasqChain)
	}
	w.rule(servicesChain, "ip daddr . meta l4proto . th dport vmap @"+serviceIPsMap)
	w.rule(endpointsCheck, "ip daddr . meta l4proto . th dport vmap @"+noEndpointServices)
	nodePortMatch := "fib daddr type local ip daddr != 127.0.0.0/8"
	if len(s.NodePortAddresses) > 0 {
		nodePortMatch = "ip daddr @" + nodePortIPsSet
	}
	w.rule(servicesChain, nodePortMatch, "meta l4proto . th dport @"+serviceNodePorts, "jump", markMasqChain)
	w.rule(servicesChain, nodePortMatch, "meta l4proto . th dport vmap @"+serviceNodePorts)
	w.rule(endpointsCheck, nodePortMatch, "meta l4proto . th dport vmap @"+noEndpointNodePort)
}

// servicePort writes the chains and map elements of one service port, and
// adds its endpoints' addresses to hairpin.
func (w *writer) servicePort(sp *ServicePort, hairpin map[netip.Addr]bool) {
	base := portChainBase(sp.Name)
	clusterChain := serviceChainPrefix + base
	internalChain := clusterChain
	internalSame := sameEndpoints(sp.InternalEndpoints, sp.Endpoints)
	if !internalSame {
		internalChain = localChainPrefix + base
	}
	proto := string(sp.Name.Protocol)
	port := strconv.Itoa(int(sp.Port))
	// Everything is written before what refers to it: affinity sets and
	// endpoint chains, port chains, then the map elements.

	// With affinity, endpoint chains: one per endpoint any port chain
	// uses, recording the client in the endpoint's affinity set, then
	// DNATing.
	if sp.Affinity > 0 {
		done := map[string]bool{}
		for _, eps := range [][]Endpoint{sp.Endpoints, sp.InternalEndpoints} {
			for _, ep := range eps {
				c := endpointChainPrefix + endpointBase(base, ep)
				if done[c] {
					continue
				}
				done[c] = true
				w.use(c)
				set := affinitySetName(base, ep, sp.Affinity)
				w.out.Sets[set] = true
				w.tx.Add(&knftables.Set{
					Name:    set,
					Type:    "ipv4_addr",
					Flags:   []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag},
					Timeout: knftables.PtrTo(sp.Affinity),
				})
				w.rule(c, "update @"+set, "{ ip saddr }")
				w.rule(c, "meta l4proto", proto, "dnat to", ep.Addr)
			}
		}
	}

	// The port chains: the cluster one (all endpoints) and, under policy
	// Local, the internal one (this node's) when they differ.
	if len(sp.Endpoints) > 0 && (sp.NodePort != 0 || internalSame) {
		w.use(clusterChain)
		w.endpointsRules(sp, base, clusterChain, sp.Endpoints, hairpin)
	}
	if len(sp.InternalEndpoints) > 0 && !internalSame {
		w.use(internalChain)
		w.endpointsRules(sp, base, internalChain, sp.InternalEndpoints, hairpin)
	}

	w.endPort()

	// ClusterIP traffic.
	vip := []string{sp.ClusterIP.String(), proto, port}
	comment := knftables.PtrTo(sp.Name.String())
	switch {
	case len(sp.InternalEndpoints) > 0:
		w.element(&knftables.Element{Map: serviceIPsMap, Key: vip, Value: []string{"goto " + internalChain}})
	case len(sp.Endpoints) > 0: // policy Local, none here: drop, as Kubernetes
		w.element(&knftables.Element{Map: noEndpointServices, Key: vip, Value: []string{"drop"}, Comment: comment})
	default:
		w.element(&knftables.Element{Map: noEndpointServices, Key: vip, Value: []string{"goto " + rejectChain}, Comment: comment})
	}

	// NodePort traffic (marked for masquerading by the services chain):
	// to the cluster chain.
	if sp.NodePort != 0 {
		np := []string{proto, strconv.Itoa(int(sp.NodePort))}
		if len(sp.Endpoints) > 0 {
			w.element(&knftables.Element{Map: serviceNodePorts, Key: np, Value: []string{"goto " + clusterChain}})
		} else {
			w.element(&knftables.Element{Map: noEndpointNodePort, Key: np, Value: []string{"goto " + rejectChain}, Comment: comment})
		}
	}
}

// use adds a per-service-port chain the table keeps, to be written by
// endPort.
func (w *writer) use(chain string) {
	if w.out.Chains[chain] {
		return
	}
	w.out.Chains[chain] = true
	w.pending = append(w.pending, chain)
}

// endPort writes the chains of a port, in the order they were used (a
// chain before the chains that jump to it), each created (or flushed) and
// filled, unless it already holds exactly those rules.
func (w *writer) endPort() {
	for _, c := range w.pending {
		rules := w.bodies[c]
		body := strings.Join(rules, "\n")
		w.out.Content[c] = body
		if old, ok := w.before[c]; ok && old == body {
			w.out.Unchanged++
			continue
		}
		w.add(&knftables.Chain{Name: c})
		for _, r := range rules {
			w.tx.Add(&knftables.Rule{Chain: c, Rule: r})
		}
	}
	w.pending = w.pending[:0]
	clear(w.bodies)
}

// endpointsRules fills a port chain. Without affinity, one rule picks an
// endpoint at random and DNATs to it. With affinity, a client goes to the
// endpoint chain it has affinity to, else to one at random.
func (w *writer) endpointsRules(sp *ServicePort, base, chain string, eps []Endpoint, hairpin map[netip.Addr]bool) {
	for _, ep := range eps {
		// Only a pod of this node can be DNATed here to itself: another
		// node's pods reach a ClusterIP through their own node's rules
		// (NodePort traffic is masqueraded anyway). An endpoint whose
		// node is not known is kept, to be safe.
		if ep.Local || ep.NodeName == "" {
			hairpin[ep.Addr.Addr()] = true
		}
	}
	if sp.Affinity > 0 {
		for _, ep := range eps {
			w.rule(chain, "ip saddr @"+affinitySetName(base, ep, sp.Affinity), "goto", endpointChainPrefix+endpointBase(base, ep))
		}
		var vmap []string
		for i, ep := range eps {
			if i > 0 {
				vmap = append(vmap, ",")
			}
			vmap = append(vmap, strconv.Itoa(i), ":", "goto", endpointChainPrefix+endpointBase(base, ep))
		}
		w.rule(chain, "numgen random mod", len(eps), "vmap {", vmap, "}")
		return
	}
	proto := string(sp.Name.Protocol)
	if len(eps) == 1 {
		w.rule(chain, "meta l4proto", proto, "dnat to", eps[0].Addr)
		return
	}
	var m []string
	for i, ep := range eps {
		if i > 0 {
			m = append(m, ",")
		}
		m = append(m, strconv.Itoa(i), ":", ep.Addr.Addr().String(), ".", strconv.Itoa(int(ep.Addr.Port())))
	}
	w.rule(chain, "meta l4proto", proto, "dnat ip addr . port to numgen random mod", len(eps), "map {", m, "}")
}

func sameEndpoints(a, b []Endpoint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Addr != b[i].Addr {
			return false
		}
	}
	return true
}

// portChainBase is the name part shared by a service port's chains:
// "HASH-namespace/name/protocol/port". Namespaces, names and port names
// are DNS labels, so the name is valid for nftables as it is; the hash
// keeps names apart that differ only near their end, as kube-proxy's.
func portChainBase(n ServicePortName) string {
	return hashed(n.String())
}

// endpointBase adds the endpoint: "HASH-namespace/name/protocol/port__ip/port".
func endpointBase(portBase string, ep Endpoint) string {
	_, name, _ := strings.Cut(portBase, "-")
	return hashed(fmt.Sprintf("%s__%s/%d", name, ep.Addr.Addr(), ep.Addr.Port()))
}

// affinitySetName is the name of an endpoint's affinity set, with the
// timeout in it: "affinity-HASH-namespace/name/protocol/port__ip/port/60s".
// Adding a set again with another timeout changes it only on kernels
// with set updates (mid-2023; this machine's 6.18 does), not in the Fake
// nor, as far as we know, on older kernels: a new timeout makes new sets
// instead, and the old ones are deleted as any set no longer used (their
// clients lose their affinity once).
func affinitySetName(portBase string, ep Endpoint, timeout time.Duration) string {
	_, name, _ := strings.Cut(portBase, "-")
	return affinitySetPrefix + hashed(fmt.Sprintf("%s__%s/%d/%ds", name, ep.Addr.Addr(), ep.Addr.Port(), int64(timeout/time.Second)))
}

// hashed prefixes name with 8 characters of its hash, and cuts it to fit
// in an nftables name with the longest prefix ("affinity-").
func hashed(name string) string {
	sum := sha256.Sum256([]byte(name))
	s := base32.StdEncoding.EncodeToString(sum[:])[:8] + "-" + name
	if max := knftables.NameLengthMax - 16; len(s) > max {
		s = s[:max-3] + "..."
	}
	return s
}
