package crienv

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// layout is where an Env keeps things under its directory. The directory
// is short (/tmp/skiff-crienv-XXXX): a unix socket path must fit in 108
// bytes.
type layout struct {
	dir string
}

func (l layout) config() string   { return l.dir + "/config.toml" }
func (l layout) socket() string   { return l.dir + "/containerd.sock" }
func (l layout) root() string     { return l.dir + "/root" }
func (l layout) state() string    { return l.dir + "/state" }
func (l layout) runcRoot() string { return l.dir + "/state/runc" }
func (l layout) cniConf() string  { return l.dir + "/cni" }
func (l layout) cniIPAM() string  { return l.dir + "/cni-ipam" }
func (l layout) podLogs() string  { return l.dir + "/pods" }
func (l layout) log() string      { return l.dir + "/containerd.log" }
func (l layout) certsD() string   { return l.dir + "/certs.d" }

// disabledPlugins are containerd plugins a test runtime does not need:
// other snapshotters, tracing, the /opt installer.
var disabledPlugins = []string{
	"io.containerd.snapshotter.v1.aufs",
	"io.containerd.snapshotter.v1.btrfs",
	"io.containerd.snapshotter.v1.devmapper",
	"io.containerd.snapshotter.v1.zfs",
	"io.containerd.tracing.processor.v1.otlp",
	"io.containerd.internal.v1.tracing",
	"io.containerd.internal.v1.opt",
}

// containerdParams are the inputs of containerd's config.
type containerdParams struct {
	layout       layout
	sandboxImage string
	snapshotter  string
	logLevel     string
}

// containerdConfig renders config.toml (version 2) for containerd 1.6.
func containerdConfig(p containerdParams) string {
	q := strconv.Quote
	var quoted []string
	for _, d := range disabledPlugins {
		quoted = append(quoted, q(d))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# Written by skiff.dev/services/node-agent/crienv: a private containerd for tests.
version = 2
root = %s
state = %s
disabled_plugins = [%s]

[grpc]
  address = %s

[debug]
  level = %s

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %s
  # No CAP_SYS_RESOURCE here: without it every RunPodSandbox fails (runc
  # cannot write /proc/self/oom_score_adj).
  restrict_oom_score_adj = true
  # Network namespaces under the state directory, not /var/run/netns.
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = %s
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        # runc's state under the Env's directory, not /run/containerd/runc.
        Root = %s
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %s
    conf_dir = %s
    max_conf_num = 1
  # Registries: hosts.toml files (hostsFiles), so that no pull leaves the
  # machine.
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %s
`,
		q(p.layout.root()), q(p.layout.state()), strings.Join(quoted, ", "),
		q(p.layout.socket()), q(p.logLevel),
		q(p.sandboxImage), q(p.snapshotter), q(p.layout.runcRoot()),
		q(CNIBinDir), q(p.layout.cniConf()), q(p.layout.certsD()))
	return b.String()
}

// cniParams are the inputs of the CNI conflist.
type cniParams struct {
	network string
	bridge  string
	subnet  netip.Prefix
	ipamDir string
}

// cniConflist renders the bridge network: the host is the bridge's gateway
// and reaches pod IPs directly; no masquerade and no default route in the
// pods, so pod traffic stays on the bridge.
func cniConflist(p cniParams) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       p.network,
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      p.bridge,
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": p.subnet.String()}}},
					"dataDir": p.ipamDir,
				},
			},
			map[string]any{
				"type":         "portmap",
				"capabilities": map[string]bool{"portMappings": true},
			},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// NoRegistry is where image pulls go when no registry is given: a loopback
// port nothing listens on, so a pull fails at once ("connection refused")
// and never reaches the network.
const NoRegistry = "127.0.0.1:1"

// hostsFiles are containerd's registry host configs (certs.d/<host>/
// hosts.toml): skiff.local and every other registry (_default) are served
// by registry ("host:port", plain HTTP). Pulls of skiff.local/... then
// reach only that address.
func hostsFiles(registry string) map[string]string {
	hosts := fmt.Sprintf("server = %s\n\n[host.%s]\n  capabilities = [\"pull\", \"resolve\"]\n",
		strconv.Quote("http://"+registry), strconv.Quote("http://"+registry))
	return map[string]string{
		"skiff.local/hosts.toml": hosts,
		"_default/hosts.toml":    hosts,
	}
}
