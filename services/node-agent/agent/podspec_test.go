package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	nodev1 "skiff.dev/proto/node/v1"
)

// Unit tests of issue 18's pod fields in the agent: namespaces, the
// managed hosts file, readiness gates, the runtime handler and the node's
// system info.

func TestNamespaceOptions(t *testing.T) {
	const pod, ctr, node = runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_CONTAINER, runtimeapi.NamespaceMode_NODE
	tests := []struct {
		name          string
		spec          *corev1.PodSpec
		net, pid, ipc runtimeapi.NamespaceMode
	}{
		{"default: the pod's network and IPC, a PID namespace per container", &corev1.PodSpec{}, pod, ctr, pod},
		{"hostNetwork", &corev1.PodSpec{HostNetwork: true}, node, ctr, pod},
		{"hostPID", &corev1.PodSpec{HostPid: true}, pod, node, pod},
		{"hostIPC", &corev1.PodSpec{HostIpc: true}, pod, ctr, node},
		{"shareProcessNamespace", &corev1.PodSpec{ShareProcessNamespace: proto.Bool(true)}, pod, pod, pod},
		{"shareProcessNamespace false", &corev1.PodSpec{ShareProcessNamespace: proto.Bool(false)}, pod, ctr, pod},
		{"hostPID wins over shareProcessNamespace", &corev1.PodSpec{HostPid: true, ShareProcessNamespace: proto.Bool(true)}, pod, node, pod},
		{"all the host's", &corev1.PodSpec{HostNetwork: true, HostPid: true, HostIpc: true}, node, node, node},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := namespaceOptions(&corev1.Pod{Spec: tt.spec})
			if got.GetNetwork() != tt.net || got.GetPid() != tt.pid || got.GetIpc() != tt.ipc {
				t.Errorf("got network %v pid %v ipc %v, want %v %v %v", got.GetNetwork(), got.GetPid(), got.GetIpc(), tt.net, tt.pid, tt.ipc)
			}
		})
	}
}

func TestManagedHostsFile(t *testing.T) {
	aliases := []*corev1.HostAlias{
		{Ip: "127.0.0.1", Hostnames: []string{"foo.local", "bar.local"}},
		{Ip: "10.1.2.3", Hostnames: []string{"foo.remote"}},
	}
	const boilerplate = "# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\n" +
		"fe00::0\tip6-mcastprefix\n" +
		"fe00::1\tip6-allnodes\n" +
		"fe00::2\tip6-allrouters\n"
	node := func() ([]byte, error) { return []byte("127.0.0.1\tlocalhost\n192.0.2.7\tthe-node\n"), nil }
	long := strings.Repeat("a", 62) + "-b"
	tests := []struct {
		name string
		spec *corev1.PodSpec
		pod  string
		want string
	}{
		{"the pod's name", &corev1.PodSpec{}, "web", boilerplate + "10.0.0.5\tweb\n"},
		{"spec.hostname", &corev1.PodSpec{Hostname: "db-0"}, "web", boilerplate + "10.0.0.5\tdb-0\n"},
		{"hostname and subdomain: the FQDN first", &corev1.PodSpec{Hostname: "db-0", Subdomain: "db"}, "web",
			boilerplate + "10.0.0.5\tdb-0.db.shop.svc.cluster.local\tdb-0\n"},
		{"a name longer than a label is cut, without a trailing '-'", &corev1.PodSpec{}, long, boilerplate + "10.0.0.5\t" + strings.Repeat("a", 62) + "\n"},
		{"host aliases", &corev1.PodSpec{HostAliases: aliases}, "web", boilerplate + "10.0.0.5\tweb\n" +
			"\n# Entries added by HostAliases.\n127.0.0.1\tfoo.local\tbar.local\n10.1.2.3\tfoo.remote\n"},
		{"host network: the node's file and the aliases", &corev1.PodSpec{HostNetwork: true, HostAliases: aliases[1:]}, "web",
			"# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n192.0.2.7\tthe-node\n" +
				"\n# Entries added by HostAliases.\n10.1.2.3\tfoo.remote\n"},
		{"host network without aliases", &corev1.PodSpec{HostNetwork: true}, "web",
			"# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n192.0.2.7\tthe-node\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: tt.pod, Namespace: "shop"}, Spec: tt.spec}
			got, err := hostsFile(p, []string{"10.0.0.5"}, "", node)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	t.Run("the node's file unreadable", func(t *testing.T) {
		p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "web"}, Spec: &corev1.PodSpec{HostNetwork: true}}
		_, err := hostsFile(p, []string{"10.0.0.5"}, "", func() ([]byte, error) { return nil, os.ErrPermission })
		if !errors.Is(err, os.ErrPermission) {
			t.Errorf("got %v", err)
		}
	})
}

func TestHostsMount(t *testing.T) {
	root := t.TempDir()
	p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "default", Uid: "u-1"},
		Spec: &corev1.PodSpec{HostAliases: []*corev1.HostAlias{{Ip: "10.9.9.9", Hostnames: []string{"db.example"}}}}}
	c := &corev1.Container{Name: "app"}
	m, err := ensureHostsMount(root, p, c, "10.0.0.5", "cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "pods", "u-1", "etc-hosts")
	if m.GetContainerPath() != "/etc/hosts" || m.GetHostPath() != path || m.GetReadonly() {
		t.Errorf("mount %v", m)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(string(b), "10.0.0.5\tweb\n\n# Entries added by HostAliases.\n10.9.9.9\tdb.example\n") {
		t.Errorf("file %q %v", b, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v %v", fi, err)
	}

	own := &corev1.Container{Name: "own", VolumeMounts: []*corev1.VolumeMount{{Name: "h", MountPath: "/etc/hosts"}}}
	if m, err := ensureHostsMount(root, p, own, "10.0.0.5", ""); m != nil || err != nil {
		t.Errorf("a container mounting /etc/hosts itself got %v %v", m, err)
	}
	if m, err := ensureHostsMount(root, p, c, "", ""); m != nil || err != nil {
		t.Errorf("without a pod IP: %v %v", m, err)
	}
}

func TestReadinessGates(t *testing.T) {
	ready := &corev1.PodCondition{Type: "Ready", Status: "True"}
	notReady := &corev1.PodCondition{Type: "Ready", Status: "False", Reason: "ContainersNotReady", Message: "containers with unready status: [app]"}
	gates := []*corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
	cond := func(typ, status string) *corev1.PodCondition { return &corev1.PodCondition{Type: typ, Status: status} }
	tests := []struct {
		name       string
		ready      *corev1.PodCondition
		gates      []*corev1.PodReadinessGate
		conditions []*corev1.PodCondition
		want       *corev1.PodCondition
	}{
		{"no gates", ready, nil, nil, ready},
		{"containers not ready: their reason stays", notReady, gates, nil, notReady},
		{"gates missing", ready, gates, nil, &corev1.PodCondition{Type: "Ready", Status: "False", Reason: "ReadinessGatesNotReady",
			Message: `corresponding condition of pod readiness gate "example.com/lb" does not exist., corresponding condition of pod readiness gate "example.com/dns" does not exist.`}},
		{"one False, one missing", ready, gates, []*corev1.PodCondition{cond("example.com/lb", "False")}, &corev1.PodCondition{Type: "Ready", Status: "False",
			Reason: "ReadinessGatesNotReady", Message: `the status of pod readiness gate "example.com/lb" is not "True", but False, corresponding condition of pod readiness gate "example.com/dns" does not exist.`}},
		{"every gate True", ready, gates, []*corev1.PodCondition{cond("example.com/dns", "True"), cond("example.com/lb", "True")}, ready},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := withReadinessGates(tt.ready, tt.gates, tt.conditions); !proto.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRuntimeHandler(t *testing.T) {
	classes := map[string]*nodev1.RuntimeClass{"sandboxed": {Metadata: &metav1.ObjectMeta{Name: "sandboxed"}, Handler: "runsc"}}
	get := func(_ context.Context, name string) (*nodev1.RuntimeClass, error) {
		if name == "broken" {
			return nil, apierrors.NewServiceUnavailable("apiserver away")
		}
		if rc, ok := classes[name]; ok {
			return rc, nil
		}
		return nil, apierrors.NewNotFound("runtimeclasses.node.k8s.io", name)
	}
	withClass := func(name string) *corev1.Pod {
		return &corev1.Pod{Spec: &corev1.PodSpec{RuntimeClassName: proto.String(name)}}
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		want    string
		wantErr string
	}{
		{"no runtimeClassName: the runtime's default", &corev1.Pod{Spec: &corev1.PodSpec{}}, "", ""},
		{"empty runtimeClassName: the default too", withClass(""), "", ""},
		{"the class's handler", withClass("sandboxed"), "runsc", ""},
		{"a class that does not exist", withClass("gvisor"), "", `runtimeclass.node.k8s.io "gvisor" not found`},
		{"the API failing", withClass("broken"), "", "failed to lookup RuntimeClass broken: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runtimeHandler(context.Background(), get, tt.pod)
			if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("got %q %v, want %q %q", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestSystemInfo(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	files := hostFiles{
		MachineID:     []string{filepath.Join(dir, "absent"), write("machine-id", "0123456789abcdef0123456789abcdef\n")},
		ProductUUID:   write("product_uuid", "4c4c4544-0042-3510-8052-b4c04f4e4a32\n"),
		BootID:        write("boot_id", "9a5b1f7e-1c1d-4d0e-9f3f-5b2f0e7c6a11\n"),
		KernelRelease: write("osrelease", "6.1.0-18-amd64\n"),
		OSRelease:     write("os-release", "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"),
	}
	got := nodeSystemInfo(readSystemInfo(files), "containerd", "1.6.20")
	want := &corev1.NodeSystemInfo{
		MachineId: "0123456789abcdef0123456789abcdef", SystemUuid: "4c4c4544-0042-3510-8052-b4c04f4e4a32",
		BootId: "9a5b1f7e-1c1d-4d0e-9f3f-5b2f0e7c6a11", KernelVersion: "6.1.0-18-amd64",
		OsImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://1.6.20",
		KubeletVersion: Version, OperatingSystem: "linux", Architecture: runtime.GOARCH,
	}
	if !proto.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}

	// Unreadable files leave their fields empty (the product UUID is
	// root's only); the OS image is then "Linux".
	none := readSystemInfo(hostFiles{MachineID: []string{filepath.Join(dir, "absent")}, ProductUUID: filepath.Join(dir, "absent"),
		OSRelease: filepath.Join(dir, "absent")})
	if none != (systemInfo{osImage: "Linux"}) {
		t.Errorf("without files: %+v", none)
	}
}
