package agent

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strings"

	corev1 "skiff.dev/proto/core/v1"
)

// hostFiles are where the node's identity is read from, as the kubelet
// (through cAdvisor) reads it; tests point them elsewhere.
type hostFiles struct {
	// MachineID: the first readable of these (systemd's, then D-Bus's).
	MachineID []string
	// ProductUUID is the firmware's system UUID (readable by root only;
	// absent on machines without DMI).
	ProductUUID string
	BootID      string
	// KernelRelease is the kernel's release, as uname -r prints it.
	KernelRelease string
	OSRelease     string
}

// defaultHostFiles are the machine's own.
var defaultHostFiles = hostFiles{
	MachineID:     []string{"/etc/machine-id", "/var/lib/dbus/machine-id"},
	ProductUUID:   "/sys/class/dmi/id/product_uuid",
	BootID:        "/proc/sys/kernel/random/boot_id",
	KernelRelease: "/proc/sys/kernel/osrelease",
	OSRelease:     "/etc/os-release",
}

// systemInfo is what status.nodeInfo says of the machine, read once at
// start. A file that cannot be read leaves its field empty, as the
// kubelet does, except osImage, which is then "Linux" (cAdvisor's).
type systemInfo struct {
	machineID, systemUUID, bootID, kernelVersion, osImage string
}

func readSystemInfo(f hostFiles) systemInfo {
	var si systemInfo
	for _, p := range f.MachineID {
		if si.machineID = readTrim(p); si.machineID != "" {
			break
		}
	}
	si.systemUUID = readTrim(f.ProductUUID)
	si.bootID = readTrim(f.BootID)
	si.kernelVersion = readTrim(f.KernelRelease)
	si.osImage = "Linux"
	if b, err := os.ReadFile(f.OSRelease); err == nil {
		if img := osImage(b); img != "" {
			si.osImage = img
		}
	}
	return si
}

// nodeSystemInfo is the Node's status.nodeInfo: the machine's identity,
// the runtime as "<name>://<version>" (containerd://1.6.20), the agent's
// version as kubeletVersion, and the platform. kubeProxyVersion stays
// empty: the kubelet has not set it since Kubernetes 1.33
// (DisableNodeKubeProxyVersion, locked on), and Skiff's proxy is the
// agent itself.
func nodeSystemInfo(si systemInfo, runtimeName, runtimeVersion string) *corev1.NodeSystemInfo {
	return &corev1.NodeSystemInfo{
		MachineId: si.machineID, SystemUuid: si.systemUUID, BootId: si.bootID,
		KernelVersion: si.kernelVersion, OsImage: si.osImage,
		ContainerRuntimeVersion: runtimeName + "://" + runtimeVersion,
		KubeletVersion:          Version,
		OperatingSystem:         runtime.GOOS, Architecture: runtime.GOARCH,
	}
}

func readTrim(path string) string {
	if path == "" {
		return ""
	}
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// osImage is PRETTY_NAME of an os-release file, unquoted.
func osImage(osRelease []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(osRelease))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}
