package network

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
)

// ConflistName is the file the agent writes in the CNI configuration
// directory. containerd uses the first configuration in name order.
const ConflistName = "10-skiff.conflist"

// DefaultConfDir is where containerd's CRI plugin reads CNI configurations.
const DefaultConfDir = "/etc/cni/net.d"

// Conflist is the CNI configuration of a node whose pods take their
// addresses from podCIDRs (one per IP family): pods on a bridge "cni0"
// whose address is their default gateway, host-local addresses, no
// masquerading (pods reach each other by their own addresses; what leaves
// the cluster is the host's business), hairpin mode for a pod reaching
// itself through a service, and portmap for hostPort.
func Conflist(podCIDRs ...netip.Prefix) []byte { return ConflistMTU(0, podCIDRs...) }

// ConflistMTU is Conflist with the bridge's and the pods' interfaces' MTU,
// unless 0 (the bridge plugin's default, the bridge's: 1500). With
// BackendVXLAN it is the VXLAN device's, as flannel's CNI plugin sets it,
// so that no pod sends packets bigger than the overlay carries.
func ConflistMTU(mtu int, podCIDRs ...netip.Prefix) []byte {
	var b bytes.Buffer
	b.WriteString(`{
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
`)
	if mtu > 0 {
		fmt.Fprintf(&b, "      \"mtu\": %d,\n", mtu)
	}
	b.WriteString(`      "ipam": {"type": "host-local", "ranges": [`)
	for i, p := range podCIDRs {
		if i > 0 {
			b.WriteString(", ")
		}
		subnet, _ := json.Marshal(p.Masked().String())
		fmt.Fprintf(&b, `[{"subnet": %s}]`, subnet)
	}
	b.WriteString(`]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`)
	return b.Bytes()
}

// WriteConflist writes ConflistMTU(mtu, podCIDRs...) as dir/ConflistName unless the
// file already holds exactly that, and reports whether it wrote. The file
// appears whole or not at all (a temporary file renamed over it): the
// runtime watching dir never reads half of one.
func WriteConflist(dir string, mtu int, podCIDRs ...netip.Prefix) (bool, error) {
	want := ConflistMTU(mtu, podCIDRs...)
	path := filepath.Join(dir, ConflistName)
	if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, want) {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("CNI configuration directory: %w", err)
	}
	// A name the runtime ignores (no .conf/.conflist/.json suffix).
	tmp, err := os.CreateTemp(dir, "."+ConflistName+".tmp-*")
	if err != nil {
		return false, fmt.Errorf("CNI configuration: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if err := writeFile(tmp, want); err != nil {
		return false, fmt.Errorf("CNI configuration %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return false, fmt.Errorf("CNI configuration: %w", err)
	}
	return true, nil
}

// writeFile writes b to f, makes it world-readable, syncs and closes it.
func writeFile(f *os.File, b []byte) error {
	_, err := f.Write(b)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
