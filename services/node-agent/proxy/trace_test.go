package proxy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"
)

// tracer follows a new connection's first packet through the table a
// knftables.Fake holds, interpreting the rule forms WriteTable writes
// (and failing the test on any other): what the filter chains decide, the
// endpoints the nat chains may send it to, and whether it leaves
// masqueraded. numgen branches: every endpoint the packet may reach is an
// outcome of its own.
type tracer struct {
	t     *testing.T
	table *knftables.FakeTable
	// local are the node's own addresses (fib daddr type local).
	local []netip.Addr
	// affinity are the affinity sets the client's address is in.
	affinity map[string]bool
}

type packet struct {
	src, dst netip.Addr
	proto    Protocol
	dport    uint16
}

// outcome is where one path of a packet ends.
type outcome struct {
	verdict string         // "accept", "reject" or "drop"
	dnat    netip.AddrPort // valid when DNATed
	masq    bool           // source NAT on the way out
	updates []string       // affinity sets the path adds the client to
}

func (o outcome) String() string {
	s := o.verdict
	if o.dnat.IsValid() {
		s += " dnat " + o.dnat.String()
	}
	if o.masq {
		s += " masq"
	}
	return s
}

type pstate struct {
	pkt     packet
	mark    bool
	dnat    netip.AddrPort
	masq    bool
	updates []string
	verdict string // "" (fell through or returned), accept, reject, drop
}

func newTracer(t *testing.T, fake *knftables.Fake, local ...string) *tracer {
	t.Helper()
	if fake.Table == nil {
		t.Fatal("the fake has no table")
	}
	tr := &tracer{t: t, table: fake.Table, affinity: map[string]bool{}}
	for _, a := range local {
		tr.local = append(tr.local, netip.MustParseAddr(a))
	}
	return tr
}

// trace runs a packet from a pod or the outside (prerouting, forward or
// input) or from a node process (output), then postrouting.
func (tr *tracer) trace(src, dst string, proto Protocol, dport uint16, fromNode bool) []outcome {
	tr.t.Helper()
	pkt := packet{netip.MustParseAddr(src), netip.MustParseAddr(dst), proto, dport}
	st := pstate{pkt: pkt}
	filter := "filter-forward"
	if fromNode {
		filter = "filter-output"
	} else if slices.Contains(tr.local, pkt.dst) {
		filter = "filter-input"
	}
	nat := "nat-prerouting"
	if fromNode {
		nat = "nat-output"
	}
	var out []outcome
	for _, f := range tr.chain(filter, st) {
		if f.verdict == "reject" || f.verdict == "drop" {
			out = append(out, outcome{verdict: f.verdict})
			continue
		}
		for _, n := range tr.chain(nat, pstate{pkt: pkt}) {
			n.verdict = ""
			for _, p := range tr.chain("nat-postrouting", n) {
				out = append(out, outcome{verdict: "accept", dnat: p.dnat, masq: p.masq, updates: p.updates})
			}
		}
	}
	return out
}

func (tr *tracer) chain(name string, st pstate) []pstate {
	tr.t.Helper()
	c := tr.table.Chains[name]
	if c == nil {
		tr.t.Fatalf("trace: no chain %q", name)
	}
	states := []pstate{st}
	var done []pstate
	for _, r := range c.Rules {
		var next []pstate
		for _, s := range states {
			for _, res := range tr.rule(r.Rule, s) {
				if res.verdict != "" {
					done = append(done, res) // the chain ends here
				} else {
					next = append(next, res)
				}
			}
		}
		states = next
		if len(states) == 0 {
			break
		}
	}
	return append(done, states...)
}

// rule applies one rule. Results with verdict "" continue in the chain;
// "return" is turned into "" by the caller of the chain.
func (tr *tracer) rule(rule string, st pstate) []pstate {
	tr.t.Helper()
	w := strings.Fields(rule)
	pkt := st.pkt
	// selector reads "ip saddr", "ip daddr" (after DNAT: the new
	// destination, as postrouting sees it), "meta l4proto" or "th dport"
	// at w[i].
	selector := func(i int) (string, bool) {
		if i+1 >= len(w) {
			return "", false
		}
		switch w[i] + " " + w[i+1] {
		case "ip saddr":
			return pkt.src.String(), true
		case "ip daddr":
			if st.dnat.IsValid() {
				return st.dnat.Addr().String(), true
			}
			return pkt.dst.String(), true
		case "meta l4proto":
			return string(pkt.proto), true
		case "th dport":
			return strconv.Itoa(int(pkt.dport)), true
		}
		return "", false
	}
	for i := 0; i < len(w); i++ {
		if v, ok := selector(i); ok {
			// A selector, or a concatenation of them, then what it is
			// matched against: a verdict map, a set (or a map's keys), a
			// value or range (== implied, or !=); else a statement follows
			// ("meta l4proto tcp dnat ...").
			key := []string{v}
			i += 2
			for i < len(w) && w[i] == "." {
				v, ok := selector(i + 1)
				if !ok {
					tr.t.Fatalf("trace: cannot read the concatenation in rule %q", rule)
				}
				key = append(key, v)
				i += 3
			}
			switch {
			case w[i] == "vmap":
				if i+2 != len(w) {
					tr.t.Fatalf("trace: a vmap not ending rule %q", rule)
				}
				return tr.vmap(strings.TrimPrefix(w[i+1], "@"), key, st)
			case strings.HasPrefix(w[i], "@"):
				if !tr.inSet(w[i][1:], key) {
					return []pstate{st}
				}
			default:
				neg := w[i] == "!="
				if neg {
					i++
				}
				if len(key) != 1 {
					tr.t.Fatalf("trace: cannot compare a concatenation in rule %q", rule)
				}
				if matches(key[0], w[i]) == neg {
					return []pstate{st}
				}
			}
			continue
		}
		switch {
		case w[i] == "ct" && w[i+1] == "state" && w[i+2] == "new":
			i += 2
		case w[i] == "ct" && w[i+1] == "status" && w[i+2] == "dnat":
			if !st.dnat.IsValid() {
				return []pstate{st}
			}
			i += 2
		case w[i] == "fib" && strings.Join(w[i:i+4], " ") == "fib daddr type local":
			if !slices.Contains(tr.local, pkt.dst) {
				return []pstate{st}
			}
			i += 3
		case (w[i] == "tcp" || w[i] == "udp" || w[i] == "sctp") && w[i+1] == "dport":
			if w[i] != string(pkt.proto) || w[i+2] != strconv.Itoa(int(pkt.dport)) {
				return []pstate{st}
			}
			i += 2
		case w[i] == "mark" && w[i+1] == "and": // mark and M == 0 return
			if st.mark {
				return []pstate{st} // the rule does not apply
			}
			st.verdict = "return"
			return []pstate{st}
		case w[i] == "mark" && w[i+1] == "set":
			st.mark = w[i+3] == "or"
			i += 4
		case w[i] == "masquerade":
			st.masq = true
			return []pstate{st}
		case w[i] == "update":
			st.updates = append(slices.Clone(st.updates), strings.TrimPrefix(w[i+1], "@"))
			return []pstate{st}
		case w[i] == "dnat" && w[i+1] == "to":
			st.dnat = netip.MustParseAddrPort(w[i+2])
			st.verdict = "accept"
			return []pstate{st}
		case w[i] == "dnat" && strings.Join(w[i:i+12], " ") == "dnat ip addr . port to numgen random mod "+w[i+9]+" map {":
			// dnat ip addr . port to numgen random mod N map { 0 : A . P , 1 : ... }
			n, _ := strconv.Atoi(w[i+9])
			arms := strings.Split(strings.Join(w[i+12:len(w)-1], " "), ",")
			if w[len(w)-1] != "}" || len(arms) != n {
				tr.t.Fatalf("trace: numgen mod %d with %d arms: %q", n, len(arms), rule)
			}
			var out []pstate
			for j, arm := range arms {
				f := strings.Fields(arm)
				if len(f) != 5 || f[0] != strconv.Itoa(j) || f[1] != ":" || f[3] != "." {
					tr.t.Fatalf("trace: numgen arm %q", arm)
				}
				o := st
				o.dnat = netip.AddrPortFrom(netip.MustParseAddr(f[2]), uint16(mustAtoi(tr.t, f[4])))
				o.verdict = "accept"
				out = append(out, o)
			}
			return out
		case w[i] == "numgen":
			n, _ := strconv.Atoi(w[i+3])
			body := strings.Join(w[i+6:len(w)-1], " ")
			var out []pstate
			for j, arm := range strings.Split(body, ",") {
				f := strings.Fields(arm)
				if f[0] != strconv.Itoa(j) || f[1] != ":" || f[2] != "goto" {
					tr.t.Fatalf("trace: numgen arm %q", arm)
				}
				out = append(out, tr.jump(f[3], st, true)...)
			}
			if len(out) < n {
				tr.t.Fatalf("trace: numgen mod %d with fewer arms: %q", n, rule)
			}
			return out
		case w[i] == "jump" || w[i] == "goto":
			return tr.jump(w[i+1], st, w[i] == "goto")
		case w[i] == "reject" || w[i] == "drop" || w[i] == "accept":
			st.verdict = w[i]
			return []pstate{st}
		default:
			tr.t.Fatalf("trace: cannot read %q in rule %q", w[i], rule)
		}
	}
	return []pstate{st}
}

// matches compares a selector's value to a rule's: an address, a range,
// a protocol or a port.
func matches(v, want string) bool {
	if p, err := netip.ParsePrefix(want); err == nil {
		return p.Contains(netip.MustParseAddr(v))
	}
	return v == want
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("trace: %q: %v", s, err)
	}
	return n
}

// jump runs a chain; after it returns (or falls through) the caller's
// chain goes on after a jump and ends after a goto.
func (tr *tracer) jump(chain string, st pstate, isGoto bool) []pstate {
	var out []pstate
	for _, r := range tr.chain(chain, st) {
		if r.verdict == "return" {
			r.verdict = ""
		}
		if isGoto && r.verdict == "" {
			r.verdict = "return" // ends the calling chain
		}
		out = append(out, r)
	}
	return out
}

func (tr *tracer) vmap(name string, key []string, st pstate) []pstate {
	tr.t.Helper()
	m := tr.table.Maps[name]
	if m == nil {
		tr.t.Fatalf("trace: no map %q", name)
	}
	e := m.FindElement(key...)
	if e == nil {
		return []pstate{st}
	}
	v := strings.Fields(e.Value[0])
	switch v[0] {
	case "goto", "jump":
		return tr.jump(v[1], st, v[0] == "goto")
	case "drop", "accept", "reject":
		st.verdict = v[0]
		return []pstate{st}
	}
	tr.t.Fatalf("trace: verdict %q in map %s", e.Value, name)
	return nil
}

// inSet looks key up in a set, or in a map's keys. The client is in an
// affinity set when tr.affinity says so.
func (tr *tracer) inSet(name string, key []string) bool {
	tr.t.Helper()
	if s := tr.table.Sets[name]; s != nil {
		if strings.HasPrefix(name, affinitySetPrefix) {
			return tr.affinity[name]
		}
		return s.FindElement(key...) != nil
	}
	if m := tr.table.Maps[name]; m != nil {
		return m.FindElement(key...) != nil
	}
	tr.t.Fatalf("trace: no set or map %q", name)
	return false
}

// dnats sums outcomes up: "reject", "drop", or the sorted endpoints with
// " masq" on those masqueraded.
func dnats(out []outcome) string {
	var s []string
	for _, o := range out {
		switch {
		case o.verdict != "accept":
			s = append(s, o.verdict)
		case o.dnat.IsValid():
			x := o.dnat.String()
			if o.masq {
				x += " masq"
			}
			s = append(s, x)
		default:
			x := "no-dnat"
			if o.masq {
				x += " masq"
			}
			s = append(s, x)
		}
	}
	slices.Sort(s)
	return fmt.Sprint(slices.Compact(s))
}
