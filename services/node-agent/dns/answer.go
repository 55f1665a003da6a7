package dns

import (
	"context"
	"net/netip"

	"github.com/miekg/dns"
)

// maxChase bounds the CNAME chain followed inside the zone.
const maxChase = 8

// answerZone answers a query for a name of the cluster zone (base: the
// labels before it, lower case), as CoreDNS's kubernetes plugin does. The
// answer is authoritative; a missing name is NXDOMAIN, an existing one
// without records of the type NODATA, both with the zone's SOA (negative
// caching, RFC 2308), except that before the informers have synced a
// missing name is SERVFAIL (it may exist).
func (s *Server) answerZone(ctx context.Context, req *dns.Msg, base string) *dns.Msg {
	q := req.Question[0]
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	m.RecursionAvailable = true

	if base == "dns-version" && q.Qtype == dns.TypeTXT {
		m.Answer = []dns.RR{&dns.TXT{Hdr: s.hdr(q.Name, dns.TypeTXT), Txt: []string{SchemaVersion}}}
		return m
	}
	res := s.index.lookup(parseName(base))
	if !res.exists {
		if !s.synced() {
			m.Rcode = dns.RcodeServerFailure
			return m
		}
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{s.soa()}
		return m
	}
	switch q.Qtype {
	case dns.TypeA:
		if res.cname != "" {
			m.Answer = s.chase(ctx, req, q.Name, res.cname, q.Qtype, 0)
			break
		}
		m.Answer = s.aRecords(q.Name, res.targets)
	case dns.TypeAAAA:
		// IPv4 only: NODATA, except for the CNAME of an ExternalName
		// Service, followed as for A.
		if res.cname != "" {
			m.Answer = s.chase(ctx, req, q.Name, res.cname, q.Qtype, 0)
		}
	case dns.TypeCNAME:
		if res.cname != "" {
			m.Answer = []dns.RR{s.cnameRecord(q.Name, res.cname)}
		}
	case dns.TypeSRV:
		m.Answer, m.Extra = s.srvRecords(q.Name, res.targets)
	case dns.TypeSOA:
		if base == "" {
			m.Answer = []dns.RR{s.soa()}
		}
	case dns.TypeAXFR, dns.TypeIXFR:
		m.Rcode = dns.RcodeRefused
		return m
	}
	if len(m.Answer) == 0 {
		m.Ns = []dns.RR{s.soa()}
	}
	return m
}

// chase returns the CNAME from owner to target and, after it, the records
// of type qtype of target: from the index when target is in the zone, else
// from the upstream resolvers (as CoreDNS's kubernetes plugin resolves an
// ExternalName). A target that does not resolve leaves the CNAME alone;
// the client sees what it points at.
func (s *Server) chase(ctx context.Context, req *dns.Msg, owner, target string, qtype uint16, depth int) []dns.RR {
	out := []dns.RR{s.cnameRecord(owner, target)}
	if depth >= maxChase {
		return out
	}
	if base, ok := inZone(target, s.zone); ok {
		res := s.index.lookup(parseName(base))
		switch {
		case res.cname != "":
			return append(out, s.chase(ctx, req, target, res.cname, qtype, depth+1)...)
		case qtype == dns.TypeA:
			return append(out, s.aRecords(target, res.targets)...)
		}
		return out
	}
	fq := new(dns.Msg)
	fq.SetQuestion(target, qtype)
	fq.RecursionDesired = true
	if opt := req.IsEdns0(); opt != nil {
		fq.SetEdns0(opt.UDPSize(), opt.Do())
	}
	resp, err := s.fwd.exchange(ctx, fq)
	if err != nil {
		s.log.Debug("Following an ExternalName's CNAME failed", zapName(target), zapErr(err))
		return out
	}
	return append(out, resp.Answer...)
}

// answerReverse answers a PTR query for a ClusterIP or an
// endpoint's address; ok is false for an address the cluster does not
// name (the query goes upstream, as with CoreDNS's "fallthrough
// in-addr.arpa").
func (s *Server) answerReverse(req *dns.Msg, ip netip.Addr) (*dns.Msg, bool) {
	q := req.Question[0]
	if q.Qtype != dns.TypePTR {
		return nil, false
	}
	names := s.index.ptr(ip)
	if len(names) == 0 {
		return nil, false
	}
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	m.RecursionAvailable = true
	for _, n := range names {
		m.Answer = append(m.Answer, &dns.PTR{Hdr: s.hdr(q.Name, dns.TypePTR), Ptr: n})
	}
	return m, true
}

func (s *Server) hdr(name string, t uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: TTL}
}

func (s *Server) cnameRecord(owner, target string) dns.RR {
	return &dns.CNAME{Hdr: s.hdr(owner, dns.TypeCNAME), Target: target}
}

// aRecords are the A records of owner for the distinct addresses of ts,
// in random order (CoreDNS's loadbalance plugin, in Kubernetes' default
// configuration, shuffles them too).
func (s *Server) aRecords(owner string, ts []target) []dns.RR {
	out := make([]dns.RR, 0, len(ts))
	seen := make(map[netip.Addr]bool, len(ts))
	for _, t := range ts {
		if seen[t.ip] {
			continue
		}
		seen[t.ip] = true
		out = append(out, &dns.A{Hdr: s.hdr(owner, dns.TypeA), A: t.ip.AsSlice()})
	}
	s.shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// srvRecords are the SRV records of owner for the targets with a port
// (priority 0, weights as CoreDNS's: 100 over their number, at least 1),
// and the A records of their targets for the additional section.
func (s *Server) srvRecords(owner string, ts []target) (answer, extra []dns.RR) {
	type srvKey struct {
		name string
		port uint16
	}
	type aKey struct {
		name string
		ip   netip.Addr
	}
	var keys []srvKey
	seen := map[srvKey]bool{}
	seenA := map[aKey]bool{}
	for _, t := range ts {
		if t.port == 0 {
			continue
		}
		if k := (srvKey{t.name, t.port}); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
		if k := (aKey{t.name, t.ip}); !seenA[k] {
			seenA[k] = true
			extra = append(extra, &dns.A{Hdr: s.hdr(t.name, dns.TypeA), A: t.ip.AsSlice()})
		}
	}
	weight := uint16(max(1, 100/max(1, len(keys))))
	for _, k := range keys {
		answer = append(answer, &dns.SRV{Hdr: s.hdr(owner, dns.TypeSRV), Priority: 0, Weight: weight, Port: k.port, Target: k.name})
	}
	s.shuffle(len(answer), func(i, j int) { answer[i], answer[j] = answer[j], answer[i] })
	return answer, extra
}

// soa is the zone's SOA record, for the authority section of negative
// answers: CoreDNS's (ns.dns.<zone>, hostmaster.<zone>, minimum TTL 5 s).
func (s *Server) soa() dns.RR {
	return &dns.SOA{
		Hdr:     s.hdr(s.zone, dns.TypeSOA),
		Ns:      "ns.dns." + s.zone,
		Mbox:    "hostmaster." + s.zone,
		Serial:  s.index.Serial(),
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  TTL,
	}
}
