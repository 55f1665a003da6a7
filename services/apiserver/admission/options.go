package admission

import (
	"crypto/x509"
	"flag"
	"fmt"
	"slices"
	"strings"
)

// Options are the admission flags of skiff-apiserver. The zero value is
// off: no plugin runs.
type Options struct {
	// EnablePlugins are the plugins to run, in order (mutating ones run
	// first in this order, then the validating ones in this order).
	EnablePlugins []string
	// DisablePlugins are removed from EnablePlugins.
	DisablePlugins []string
	// DefaultNotReadyTolerationSeconds and DefaultUnreachableTolerationSeconds
	// are the tolerationSeconds DefaultTolerationSeconds gives pods
	// (0: 300, the default).
	DefaultNotReadyTolerationSeconds    int64
	DefaultUnreachableTolerationSeconds int64
	// WebhookClusterCA verifies the serving certificates of webhooks whose
	// clientConfig has no caBundle: the cluster CA, which the apiserver's
	// TLS wiring sets. nil: the system roots.
	WebhookClusterCA *x509.CertPool
	// NoTokenVolumes: the apiserver issues no service-account tokens
	// (--insecure: no key), so the ServiceAccount plugin mounts no token
	// volume, which nothing could fill. The apiserver sets it.
	NoTokenVolumes bool
}

// DefaultPlugins are the command's --enable-admission-plugins.
var DefaultPlugins = []string{
	NamespaceLifecycleName, LimitRangerName, ServiceAccountName, NodeRestrictionName, DefaultTolerationSecondsName,
	DefaultStorageClassName, StorageObjectInUseProtectionName, PriorityName, RuntimeClassName,
	MutatingWebhookName, ValidatingWebhookName, ResourceQuotaName,
}

// DefaultTolerationSeconds is tolerationSeconds when the options leave it 0.
const DefaultTolerationSeconds = 300

// AddFlags registers the options' flags on fs, with the command's defaults.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	o.EnablePlugins = slices.Clone(DefaultPlugins)
	o.DefaultNotReadyTolerationSeconds = DefaultTolerationSeconds
	o.DefaultUnreachableTolerationSeconds = DefaultTolerationSeconds
	known := strings.Join(Known(), ", ")
	fs.Func("enable-admission-plugins", fmt.Sprintf("comma-separated admission `plugins` to run, in order (mutating ones first, then validating ones; \"\" for none). Known: %s (default %q)", known, strings.Join(DefaultPlugins, ",")),
		func(v string) (err error) {
			o.EnablePlugins, err = parsePluginList(v)
			return err
		})
	fs.Func("disable-admission-plugins", "comma-separated admission `plugins` not to run, even if enabled. Known: "+known,
		func(v string) (err error) {
			o.DisablePlugins, err = parsePluginList(v)
			return err
		})
	fs.Int64Var(&o.DefaultNotReadyTolerationSeconds, "default-not-ready-toleration-seconds", DefaultTolerationSeconds,
		"tolerationSeconds of the node.kubernetes.io/not-ready:NoExecute toleration that DefaultTolerationSeconds adds to every pod without one (0: 300)")
	fs.Int64Var(&o.DefaultUnreachableTolerationSeconds, "default-unreachable-toleration-seconds", DefaultTolerationSeconds,
		"tolerationSeconds of the node.kubernetes.io/unreachable:NoExecute toleration that DefaultTolerationSeconds adds to every pod without one (0: 300)")
}

// parsePluginList splits a flag's list and checks every name.
func parsePluginList(v string) ([]string, error) {
	var out, unknown []string
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if _, ok := catalogue[n]; !ok {
			unknown = append(unknown, n)
			continue
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown admission plugin(s) %s (known: %s)", strings.Join(unknown, ", "), strings.Join(Known(), ", "))
	}
	return out, nil
}

// Validate checks the options (the flags check names as they are parsed;
// this catches Options built in code).
func (o *Options) Validate() error {
	for flagName, list := range map[string][]string{"--enable-admission-plugins": o.EnablePlugins, "--disable-admission-plugins": o.DisablePlugins} {
		if _, err := parsePluginList(strings.Join(list, ",")); err != nil {
			return fmt.Errorf("%s: %w", flagName, err)
		}
	}
	if o.DefaultNotReadyTolerationSeconds < 0 {
		return fmt.Errorf("--default-not-ready-toleration-seconds: %d, must be 0 or more", o.DefaultNotReadyTolerationSeconds)
	}
	if o.DefaultUnreachableTolerationSeconds < 0 {
		return fmt.Errorf("--default-unreachable-toleration-seconds: %d, must be 0 or more", o.DefaultUnreachableTolerationSeconds)
	}
	return nil
}

// Enabled is the ordered list of plugins that run.
func (o *Options) Enabled() []string {
	var out []string
	for _, n := range o.EnablePlugins {
		if !slices.Contains(o.DisablePlugins, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
