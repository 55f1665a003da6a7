package app

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"skiff.dev/services/apiserver/apiservertest"
)

func TestServiceFlags(t *testing.T) {
	o, err := ParseFlags([]string{"--node-name", "n1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s := o.Services
	if s.ProxyMode != "nftables" || s.ClusterDNS != DefaultClusterDNS || s.dnsListen() != "169.254.20.10:53" || s.ClusterDomain != "cluster.local" || s.ResolvConf != "/etc/resolv.conf" {
		t.Errorf("defaults: %+v, listen %q", s, s.dnsListen())
	}
	o, err = ParseFlags([]string{"--node-name", "n1", "--proxy-mode", "none", "--cluster-dns", ""}, io.Discard)
	if err != nil || o.Services.dnsListen() != "" {
		t.Fatalf("no cluster DNS: listen %q, %v", o.Services.dnsListen(), err)
	}
	for _, bad := range [][]string{
		{"--proxy-mode", "iptables"},
		{"--cluster-dns", "dns.example"},
		{"--cluster-dns", "fd00::10"},
		{"--dns-listen", "169.254.20.10"},
	} {
		if _, err := ParseFlags(append([]string{"--node-name", "n1"}, bad...), io.Discard); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: %v, want an error naming %s", bad, err, bad[0])
		}
	}
}

// TestProgramServesClusterDNS: the program's DNS server answers from the
// apiserver's Services (the kubernetes Service, made at its start).
func TestProgramServesClusterDNS(t *testing.T) {
	api := apiservertest.Start(t)
	rt := startRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := startProgram(t, ctx, rt, "--server", api.Addr(), "--insecure", "--dns-listen", "127.0.0.1:0")
	if a.DNS == "" {
		t.Fatal("no DNS server address")
	}
	q := new(dns.Msg)
	q.SetQuestion("kubernetes.default.svc.cluster.local.", dns.TypeA)
	var last string
	for ctx.Err() == nil { // until the informers have listed
		r, err := dns.ExchangeContext(ctx, q, a.DNS)
		if err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1 {
			if got := r.Answer[0].(*dns.A).A.String(); got != "10.96.0.1" {
				t.Fatalf("kubernetes.default: %s, want 10.96.0.1", got)
			}
			// Namespaces are followed too, as CoreDNS does: a namespace that
			// exists has no records of its own (NODATA), one that does not
			// exist is no name (NXDOMAIN).
			for ns, want := range map[string]int{"default": dns.RcodeSuccess, "nosuch": dns.RcodeNameError} {
				q := new(dns.Msg)
				q.SetQuestion(ns+".svc.cluster.local.", dns.TypeA)
				r, err := dns.ExchangeContext(ctx, q, a.DNS)
				if err != nil || r.Rcode != want {
					t.Fatalf("%s.svc.cluster.local: %v %v, want %s", ns, r, err, dns.RcodeToString[want])
				}
			}
			runWebPod(t, ctx, api.Conn) // the agent is up: a stop before its start is an error of Run's
			return
		}
		last = strings.TrimSpace(r.String())
		if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond): // the server is another component: poll its answers
		}
	}
	t.Fatalf("no answer for kubernetes.default.svc.cluster.local: %s", last)
}
