package validation

import (
	"net/netip"
	"strings"

	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
)

// Kubernetes' bounds of a pod's DNS configuration (those of glibc's
// resolv.conf, as Kubernetes raised them).
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// podDNSConfig validates dnsConfig as Kubernetes does: with dnsPolicy
// None at least one nameserver; at most 3 nameservers, IP addresses; at
// most 32 search domains of 2,048 characters in all, each a DNS
// subdomain (a trailing dot allowed); options with names.
func podDNSConfig(policy string, cfg *corev1.PodDNSConfig, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policy == "None" && cfg == nil {
		return field.ErrorList{field.Required(p, "must provide `dnsConfig` when `dnsPolicy` is None")}
	}
	if cfg == nil {
		return nil
	}
	np := p.Child("nameservers")
	if policy == "None" && len(cfg.Nameservers) == 0 {
		errs = append(errs, field.Required(np, "must provide at least one DNS nameserver when `dnsPolicy` is None"))
	}
	if len(cfg.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(np, cfg.Nameservers, "must not have more than 3 nameservers"))
	}
	for i, ns := range cfg.Nameservers {
		if _, err := netip.ParseAddr(ns); err != nil {
			errs = append(errs, field.Invalid(np.Index(i), ns, "must be a valid IP address"))
		}
	}
	sp := p.Child("searches")
	if len(cfg.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(sp, cfg.Searches, "must not have more than 32 search paths"))
	}
	if n := len(strings.Join(cfg.Searches, " ")); n > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(sp, cfg.Searches, "must not have more than 2048 characters (including spaces) in the search list"))
	}
	for i, s := range cfg.Searches {
		if s == "." {
			continue // the root domain, as Kubernetes allows it
		}
		errs = append(errs, invalidEach(sp.Index(i), s, isDNS1123Subdomain(strings.TrimSuffix(s, ".")))...)
	}
	for i, o := range cfg.Options {
		if o.GetName() == "" {
			errs = append(errs, field.Required(p.Child("options").Index(i).Child("name"), "must not be empty"))
		}
	}
	return errs
}
