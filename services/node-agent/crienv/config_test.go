package crienv

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerdConfig(t *testing.T) {
	l := layout{dir: "/tmp/skiff-crienv-123"}
	cfg := containerdConfig(containerdParams{layout: l, sandboxImage: PauseImage, snapshotter: "overlayfs", logLevel: "info"})
	for _, want := range []string{
		"version = 2\n",
		`root = "/tmp/skiff-crienv-123/root"`,
		`state = "/tmp/skiff-crienv-123/state"`,
		`address = "/tmp/skiff-crienv-123/containerd.sock"`,
		`sandbox_image = "skiff.local/pause:3.9"`,
		"restrict_oom_score_adj = true",
		"netns_mounts_under_state_dir = true",
		`snapshotter = "overlayfs"`,
		`Root = "/tmp/skiff-crienv-123/state/runc"`,
		`bin_dir = "/usr/lib/cni"`,
		`conf_dir = "/tmp/skiff-crienv-123/cni"`,
		`"io.containerd.snapshotter.v1.btrfs"`,
		`config_path = "/tmp/skiff-crienv-123/certs.d"`,
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %s:\n%s", want, cfg)
		}
	}
}

func TestHostsFiles(t *testing.T) {
	files := hostsFiles(NoRegistry)
	for _, name := range []string{"skiff.local/hosts.toml", "_default/hosts.toml"} {
		want := "server = \"http://127.0.0.1:1\"\n\n[host.\"http://127.0.0.1:1\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
		if files[name] != want {
			t.Errorf("%s =\n%s\nwant\n%s", name, files[name], want)
		}
	}
}

func TestCNIConflist(t *testing.T) {
	sl := &slot{n: 7}
	b, err := cniConflist(cniParams{network: sl.network(), bridge: sl.bridge(), subnet: sl.subnet(), ipamDir: "/tmp/x/cni-ipam"})
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Name    string `json:"name"`
		Plugins []struct {
			Type      string `json:"type"`
			Bridge    string `json:"bridge"`
			IsGateway bool   `json:"isGateway"`
			IPMasq    bool   `json:"ipMasq"`
			IPAM      struct {
				Type    string                `json:"type"`
				Ranges  [][]map[string]string `json:"ranges"`
				Routes  []any                 `json:"routes"`
				DataDir string                `json:"dataDir"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(b, &conf); err != nil {
		t.Fatal(err)
	}
	if conf.Name != "skiff-crienv-7" || len(conf.Plugins) != 2 || conf.Plugins[0].Type != "bridge" || conf.Plugins[1].Type != "portmap" {
		t.Fatalf("conflist = %s", b)
	}
	br := conf.Plugins[0]
	if br.Bridge != "skiffbr7" || !br.IsGateway || br.IPMasq {
		t.Errorf("bridge plugin = %+v", br)
	}
	if br.IPAM.Type != "host-local" || br.IPAM.Ranges[0][0]["subnet"] != "10.88.7.0/24" || br.IPAM.DataDir != "/tmp/x/cni-ipam" || len(br.IPAM.Routes) != 0 {
		t.Errorf("ipam = %+v", br.IPAM)
	}
	if sl.gateway() != netip.MustParseAddr("10.88.7.1") {
		t.Errorf("gateway = %v", sl.gateway())
	}
}

func TestUnescapeMountPath(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/a":          "/tmp/a",
		`/tmp/a\040b`:     "/tmp/a b",
		`/tmp/x\134y`:     `/tmp/x\y`,
		`/tmp/trailing\0`: `/tmp/trailing\0`,
	} {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescapeMountPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	cases := []struct {
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{ms(5), 0.5, 5 * time.Millisecond},
		{ms(40, 10, 30, 20), 0.5, 20 * time.Millisecond},
		{ms(50, 10, 40, 20, 30), 0.5, 30 * time.Millisecond},
		{ms(50, 10, 40, 20, 30), 0.99, 50 * time.Millisecond},
	}
	for _, c := range cases {
		if got := Percentile(c.in, c.p); got != c.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", c.in, c.p, got, c.want)
		}
	}
}

func TestNotReadyConditions(t *testing.T) {
	ready := &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}
	if got := notReadyConditions(ready); got != "" {
		t.Errorf("ready status: %q", got)
	}
	noNet := &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: false, Reason: "NetworkPluginNotReady", Message: "cni config uninitialized"},
	}}
	if got := notReadyConditions(noNet); !strings.Contains(got, "NetworkReady=false (NetworkPluginNotReady") {
		t.Errorf("network not ready: %q", got)
	}
}
