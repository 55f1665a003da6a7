package network

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// entrypointConflist is what deploy/compose's node entrypoint wrote for
// SKIFF_POD_CIDR=10.244.1.0/24 before the agent did it.
const entrypointConflist = `{
  "cniVersion": "1.0.0",
  "name": "skiff",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "isDefaultGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.1.0/24"}]]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`

func TestConflist(t *testing.T) {
	got := Conflist(netip.MustParsePrefix("10.244.1.0/24"))
	if string(got) != entrypointConflist {
		t.Errorf("Conflist(10.244.1.0/24) =\n%s\nwant\n%s", got, entrypointConflist)
	}
	withMTU := strings.Replace(entrypointConflist, `"hairpinMode": true,`, `"hairpinMode": true,
      "mtu": 1450,`, 1)
	if got := ConflistMTU(1450, netip.MustParsePrefix("10.244.1.0/24")); string(got) != withMTU || !json.Valid(got) {
		t.Errorf("ConflistMTU(1450, 10.244.1.0/24) =\n%s\nwant\n%s", got, withMTU)
	}
	// Dual stack: one range per family, valid JSON.
	var v struct {
		Plugins []struct {
			IPAM struct {
				Ranges [][]struct{ Subnet string } `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	two := Conflist(netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fd00:10:244:1::/64"))
	if err := json.Unmarshal(two, &v); err != nil {
		t.Fatalf("dual-stack conflist is not JSON: %v\n%s", err, two)
	}
	want := [][]struct{ Subnet string }{{{"10.244.1.0/24"}}, {{"fd00:10:244:1::/64"}}}
	if !reflect.DeepEqual(v.Plugins[0].IPAM.Ranges, want) {
		t.Errorf("dual-stack ranges %v, want %v", v.Plugins[0].IPAM.Ranges, want)
	}
}

func TestWriteConflist(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net.d") // created by the first write
	path := filepath.Join(dir, ConflistName)
	a, b := netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("10.244.2.0/24")
	for i, step := range []struct {
		cidr      netip.Prefix
		wantWrote bool
	}{{a, true}, {a, false}, {b, true}, {b, false}} {
		wrote, err := WriteConflist(dir, 0, step.cidr)
		if err != nil || wrote != step.wantWrote {
			t.Fatalf("step %d: WriteConflist(%s) = %v, %v; want %v", i, step.cidr, wrote, err, step.wantWrote)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != string(Conflist(step.cidr)) {
			t.Fatalf("step %d: %s holds %q (%v)", i, path, got, err)
		}
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode of %s: %v (%v), want 0644", path, st.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%s holds %d files, want only %s (no temporary file left)", dir, len(entries), ConflistName)
	}
	// A file changed by hand is written again.
	if err := os.WriteFile(path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if wrote, err := WriteConflist(dir, 0, b); err != nil || !wrote {
		t.Errorf("after a change by hand: wrote %v, %v; want a rewrite", wrote, err)
	}
}
