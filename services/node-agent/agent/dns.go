package agent

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "skiff.dev/proto/core/v1"
)

// DefaultClusterDomain is the cluster's DNS domain unless --cluster-domain
// says otherwise.
const DefaultClusterDomain = "cluster.local"

// Bounds of a resolv.conf, as the kubelet keeps them: glibc reads three
// nameservers; Kubernetes allows 32 search domains.
const (
	maxNameservers = 3
	maxSearches    = 32
)

// hostDNS is what a node's resolv.conf says.
type hostDNS struct {
	nameservers, searches, options []string
}

// readResolvConf parses a resolv.conf ("" or a missing file: nothing).
func readResolvConf(path string) (hostDNS, error) {
	var h hostDNS
	if path == "" {
		return h, nil
	}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return h, nil
	}
	if err != nil {
		return h, fmt.Errorf("reading the node's resolv.conf: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "nameserver":
			h.nameservers = append(h.nameservers, f[1])
		case "search", "domain":
			h.searches = f[1:] // the last one wins, as in glibc
		case "options":
			h.options = append(h.options, f[1:]...)
		}
	}
	return h, sc.Err()
}

// dnsConfig is the resolv.conf of pod p as the kubelet writes it:
// ClusterFirst (and ClusterFirstWithHostNet for a hostNetwork pod) use
// the cluster DNS with the search path <ns>.svc.<domain> svc.<domain>
// <domain> and the node's domains, and ndots:5; a ClusterFirst
// hostNetwork pod, Default, and ClusterFirst without a cluster DNS use
// the node's resolv.conf; None only dnsConfig. dnsConfig's nameservers
// and searches are appended (without duplicates), its options replace
// those of the same name. nil: let the runtime use the node's.
func dnsConfig(p *corev1.Pod, clusterDNS []string, domain string, host hostDNS) *runtimeapi.DNSConfig {
	spec := p.GetSpec()
	policy := spec.GetDnsPolicy()
	if policy == "" {
		policy = "ClusterFirst"
	}
	if policy == "ClusterFirst" && spec.GetHostNetwork() {
		policy = "Default"
	}
	if (policy == "ClusterFirst" || policy == "ClusterFirstWithHostNet") && len(clusterDNS) == 0 {
		policy = "Default" // as the kubelet does, with a warning at start
	}
	var servers, searches, options []string
	switch policy {
	case "ClusterFirst", "ClusterFirstWithHostNet":
		if domain == "" {
			domain = DefaultClusterDomain
		}
		servers = clusterDNS
		searches = append([]string{p.GetMetadata().GetNamespace() + ".svc." + domain, "svc." + domain, domain}, host.searches...)
		options = []string{"ndots:5"}
	case "Default":
		servers, searches, options = host.nameservers, host.searches, host.options
	}
	if c := spec.GetDnsConfig(); c != nil {
		servers = appendNew(servers, c.GetNameservers()...)
		searches = appendNew(searches, c.GetSearches()...)
		for _, o := range c.GetOptions() {
			opt := o.GetName()
			if o.Value != nil {
				opt += ":" + o.GetValue()
			}
			options = slices.DeleteFunc(options, func(x string) bool { n, _, _ := strings.Cut(x, ":"); return n == o.GetName() })
			options = append(options, opt)
		}
	}
	if policy == "Default" && spec.GetDnsConfig() == nil {
		return nil // the runtime copies the node's resolv.conf
	}
	return &runtimeapi.DNSConfig{
		Servers:  servers[:min(len(servers), maxNameservers)],
		Searches: searches[:min(len(searches), maxSearches)],
		Options:  options,
	}
}

// appendNew appends the items of add that list does not hold yet.
func appendNew(list []string, add ...string) []string {
	out := slices.Clone(list)
	for _, a := range add {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}
