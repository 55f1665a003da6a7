package agent

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/sim"
)

func securePod(psc *corev1.PodSecurityContext, sc *corev1.SecurityContext) *corev1.Pod {
	return &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "ns", Uid: "u1"},
		Spec: &corev1.PodSpec{SecurityContext: psc, Containers: []*corev1.Container{{
			Name: "app", Image: "demo:v1", SecurityContext: sc,
		}}},
	}
}

func TestContainerSecurityContext(t *testing.T) {
	masked, readonly := defaultMaskedPaths, defaultReadonlyPaths
	ns := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD}
	unconfined := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	for _, c := range []struct {
		name string
		psc  *corev1.PodSecurityContext
		sc   *corev1.SecurityContext
		user imageUser
		want *runtimeapi.LinuxContainerSecurityContext
	}{
		{"none: unconfined, default masked paths", nil, nil, imageUser{},
			&runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: ns, Seccomp: unconfined, MaskedPaths: masked, ReadonlyPaths: readonly}},
		{"the pod's ids, groups and seccomp apply to the container",
			&corev1.PodSecurityContext{RunAsUser: proto.Int64(1000), RunAsGroup: proto.Int64(3000), FsGroup: proto.Int64(2000),
				SupplementalGroups: []int64{4000, 5000}, SeccompProfile: &corev1.SeccompProfile{Type: "RuntimeDefault"}},
			nil, imageUser{},
			&runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: ns, MaskedPaths: masked, ReadonlyPaths: readonly,
				RunAsUser: &runtimeapi.Int64Value{Value: 1000}, RunAsGroup: &runtimeapi.Int64Value{Value: 3000},
				SupplementalGroups: []int64{2000, 4000, 5000}, Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}}},
		{"the container's own win",
			&corev1.PodSecurityContext{RunAsUser: proto.Int64(1000), RunAsGroup: proto.Int64(3000), SeccompProfile: &corev1.SeccompProfile{Type: "RuntimeDefault"}},
			&corev1.SecurityContext{RunAsUser: proto.Int64(7), RunAsGroup: proto.Int64(8),
				SeccompProfile: &corev1.SeccompProfile{Type: "Localhost", LocalhostProfile: proto.String("profiles/audit.json")}},
			imageUser{},
			&runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: ns, MaskedPaths: masked, ReadonlyPaths: readonly,
				RunAsUser: &runtimeapi.Int64Value{Value: 7}, RunAsGroup: &runtimeapi.Int64Value{Value: 8},
				Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/seccomp/profiles/audit.json"}}},
		{"capabilities as given, privilege, read-only root, no_new_privs", nil,
			&corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []string{"ALL"}, Add: []string{"NET_BIND_SERVICE"}},
				ReadOnlyRootFilesystem: proto.Bool(true), AllowPrivilegeEscalation: proto.Bool(false), SeccompProfile: &corev1.SeccompProfile{Type: "Unconfined"}},
			imageUser{},
			&runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: ns, MaskedPaths: masked, ReadonlyPaths: readonly, Seccomp: unconfined,
				Capabilities:   &runtimeapi.Capability{AddCapabilities: []string{"NET_BIND_SERVICE"}, DropCapabilities: []string{"ALL"}},
				ReadonlyRootfs: true, NoNewPrivs: true}},
		{"allowPrivilegeEscalation true or unset: no no_new_privs; privileged", nil,
			&corev1.SecurityContext{Privileged: proto.Bool(true), AllowPrivilegeEscalation: proto.Bool(true)}, imageUser{},
			&runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: ns, MaskedPaths: masked, ReadonlyPaths: readonly, Seccomp: unconfined, Privileged: true}},
		{"procMount Unmasked: nothing masked", nil, &corev1.SecurityContext{ProcMount: proto.String("Unmasked")}, imageUser{},
			&runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: ns, MaskedPaths: []string{}, ReadonlyPaths: []string{}, Seccomp: unconfined}},
		{"the image's uid when asked (a runAsGroup alone needs a user)", &corev1.PodSecurityContext{RunAsGroup: proto.Int64(3000)}, nil,
			imageUser{uid: proto.Int64(65532), known: true},
			&runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: ns, MaskedPaths: masked, ReadonlyPaths: readonly, Seccomp: unconfined,
				RunAsUser: &runtimeapi.Int64Value{Value: 65532}, RunAsGroup: &runtimeapi.Int64Value{Value: 3000}}},
		{"the image's user name", nil, &corev1.SecurityContext{RunAsGroup: proto.Int64(3000)}, imageUser{name: "nobody", known: true},
			&runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: ns, MaskedPaths: masked, ReadonlyPaths: readonly, Seccomp: unconfined,
				RunAsUsername: "nobody", RunAsGroup: &runtimeapi.Int64Value{Value: 3000}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := securePod(c.psc, c.sc)
			cfg, err := containerConfig(p, p.Spec.Containers[0], containerParams{ImageRef: "sha256:1", ImageUser: c.user, SeccompProfileRoot: "/seccomp"})
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.GetLinux().GetSecurityContext(); !proto.Equal(got, c.want) {
				t.Errorf("security context\n got  %v\n want %v", got, c.want)
			}
		})
	}
}

func TestSandboxSecurityContext(t *testing.T) {
	p := securePod(&corev1.PodSecurityContext{RunAsUser: proto.Int64(1000), RunAsGroup: proto.Int64(3000), FsGroup: proto.Int64(2000),
		SupplementalGroups: []int64{4000}, SeccompProfile: &corev1.SeccompProfile{Type: "Unconfined"},
		Sysctls: []*corev1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "2000 3000"}, {Name: "kernel/shm_rmid_forced", Value: "1"}}}, nil)
	p.Spec.InitContainers = []*corev1.Container{{Name: "init", SecurityContext: &corev1.SecurityContext{Privileged: proto.Bool(true)}}}
	lc := sandboxConfig(p, 0, "/logs", "").GetLinux()
	want := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
		// The sandbox runs the runtime's default profile whatever the pod's.
		Seccomp:   &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
		RunAsUser: &runtimeapi.Int64Value{Value: 1000}, RunAsGroup: &runtimeapi.Int64Value{Value: 3000},
		SupplementalGroups: []int64{2000, 4000},
		Privileged:         true, // a container is
	}
	if got := lc.GetSecurityContext(); !proto.Equal(got, want) {
		t.Errorf("sandbox security context\n got  %v\n want %v", got, want)
	}
	if got := lc.GetSysctls(); !maps.Equal(got, map[string]string{"net.ipv4.ip_local_port_range": "2000 3000", "kernel.shm_rmid_forced": "1"}) {
		t.Errorf("sysctls %v", got)
	}
}

func TestVerifyRunAsNonRoot(t *testing.T) {
	root, user := imageUser{uid: proto.Int64(0), known: true}, imageUser{uid: proto.Int64(1000), known: true}
	for _, c := range []struct {
		name string
		psc  *corev1.PodSecurityContext
		sc   *corev1.SecurityContext
		user imageUser
		want string
	}{
		{"not asked", nil, nil, root, ""},
		{"runAsNonRoot false", nil, &corev1.SecurityContext{RunAsNonRoot: proto.Bool(false)}, root, ""},
		{"the image runs as root", &corev1.PodSecurityContext{RunAsNonRoot: proto.Bool(true)}, nil, root,
			`container has runAsNonRoot and image will run as root (pod: "web_ns(u1)", container: app)`},
		{"the image's user is a name", nil, &corev1.SecurityContext{RunAsNonRoot: proto.Bool(true)}, imageUser{name: "www", known: true},
			`container has runAsNonRoot and image has non-numeric user (www), cannot verify user is non-root (pod: "web_ns(u1)", container: app)`},
		{"the image runs as a user", &corev1.PodSecurityContext{RunAsNonRoot: proto.Bool(true)}, nil, user, ""},
		{"runAsUser 0", &corev1.PodSecurityContext{RunAsNonRoot: proto.Bool(true)}, &corev1.SecurityContext{RunAsUser: proto.Int64(0)}, user,
			`container's runAsUser breaks non-root policy (pod: "web_ns(u1)", container: app)`},
		{"runAsUser set: the image is not asked", &corev1.PodSecurityContext{RunAsNonRoot: proto.Bool(true), RunAsUser: proto.Int64(5)}, nil, imageUser{}, ""},
		{"the container overrides the pod", &corev1.PodSecurityContext{RunAsNonRoot: proto.Bool(true)}, &corev1.SecurityContext{RunAsNonRoot: proto.Bool(false)}, root, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := securePod(c.psc, c.sc)
			_, err := containerConfig(p, p.Spec.Containers[0], containerParams{ImageUser: c.user})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("error %q, want %q", got, c.want)
			}
		})
	}
	// The image is asked only when it matters.
	for _, c := range []struct {
		psc  *corev1.PodSecurityContext
		sc   *corev1.SecurityContext
		want bool
	}{
		{nil, nil, false},
		{&corev1.PodSecurityContext{RunAsNonRoot: proto.Bool(true)}, nil, true},
		{&corev1.PodSecurityContext{RunAsNonRoot: proto.Bool(true)}, &corev1.SecurityContext{RunAsUser: proto.Int64(3)}, false},
		{nil, &corev1.SecurityContext{RunAsGroup: proto.Int64(3)}, true},
	} {
		p := securePod(c.psc, c.sc)
		if got := needsImageUser(p, p.Spec.Containers[0]); got != c.want {
			t.Errorf("needsImageUser(%v, %v) = %v", c.psc, c.sc, got)
		}
	}
	if u := userOfImage(&runtimeapi.Image{}); u.uid == nil || *u.uid != 0 {
		t.Errorf("an image without a user: %+v, want root", u)
	}
}

func TestSysctlAdmission(t *testing.T) {
	for _, c := range []struct {
		name    string
		sysctls []string
		hostNet bool
		unsafe  []string
		want    string
	}{
		{"safe", []string{"net.ipv4.tcp_syncookies", "kernel.shm_rmid_forced", "net/ipv4/ip_local_port_range"}, false, nil, ""},
		{"unsafe", []string{"net.ipv4.tcp_syncookies", "net.core.somaxconn"}, false, nil, `"net.core.somaxconn" not allowlisted`},
		{"unsafe allowed by name", []string{"net.core.somaxconn"}, false, []string{"net.core.somaxconn"}, ""},
		{"unsafe allowed by prefix", []string{"net.core.somaxconn"}, false, []string{"net.core.*"}, ""},
		{"a net sysctl on the host network", []string{"net.ipv4.tcp_syncookies"}, true, nil, `"net.ipv4.tcp_syncookies" not allowed with host net enabled`},
	} {
		t.Run(c.name, func(t *testing.T) {
			psc := &corev1.PodSecurityContext{}
			for _, s := range c.sysctls {
				psc.Sysctls = append(psc.Sysctls, &corev1.Sysctl{Name: s, Value: "1"})
			}
			p := securePod(psc, nil)
			p.Spec.HostNetwork = c.hostNet
			if got := forbiddenSysctl(p, c.unsafe); got != c.want {
				t.Errorf("forbiddenSysctl = %q, want %q", got, c.want)
			}
		})
	}
	for pattern, want := range map[string]string{
		"net.core.*":      "",
		"kernel.msgmax":   "",
		"kernel.hostname": `the sysctl "kernel.hostname" are not known to be namespaced`,
		"vm.*":            `the sysctls "vm.*" are not known to be namespaced`,
		"net.*.x":         `sysctl "net.*.x" must have at most 253 characters`,
	} {
		err := checkSysctlPatterns([]string{pattern})
		if (err == nil) != (want == "") || (err != nil && !strings.HasPrefix(err.Error(), want)) {
			t.Errorf("checkSysctlPatterns(%q) = %v, want %q", pattern, err, want)
		}
	}
}

func TestVolumeOwnershipForFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (chown to another group)")
	}
	const gid = 2000
	root := t.TempDir()
	p := securePod(&corev1.PodSecurityContext{FsGroup: proto.Int64(gid)}, nil)
	p.Spec.Volumes = []*corev1.Volume{
		{Name: "scratch", EmptyDir: &corev1.EmptyDirVolumeSource{}},
		{Name: "conf", DownwardApi: &corev1.DownwardAPIVolumeSource{Items: []*corev1.DownwardAPIVolumeFile{
			{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
		{Name: "host", HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(root, "host"), Type: "DirectoryOrCreate"}},
	}
	ve := volumeEnv{root: filepath.Join(root, "agent")}
	paths, err := prepareVolumes(t.Context(), ve, p)
	if err != nil {
		t.Fatal(err)
	}
	owner := func(path string) (uint32, os.FileMode) {
		t.Helper()
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Gid, fi.Mode()
	}
	if g, m := owner(paths["scratch"]); g != gid || m&os.ModeSetgid == 0 || m.Perm() != 0o777 {
		t.Errorf("emptyDir: group %d, mode %v; want %d, setgid, rwxrwxrwx", g, m, gid)
	}
	if g, m := owner(filepath.Join(paths["conf"], "name")); g != gid || m.Perm()&0o440 != 0o440 {
		t.Errorf("downwardAPI file: group %d, mode %v; want %d, group-readable", g, m, gid)
	}
	if g, _ := owner(paths["host"]); g == gid {
		t.Error("a hostPath volume changed group")
	}

	// Once per pod for a writable volume: what the pod changes stays.
	f := filepath.Join(paths["scratch"], "mine")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(f, -1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareVolumes(t.Context(), ve, p); err != nil {
		t.Fatal(err)
	}
	if g, _ := owner(f); g != 0 {
		t.Errorf("a file of the pod's own regained group %d on the next sync", g)
	}

	// OnRootMismatch: a root already right is not walked.
	dir := filepath.Join(root, "walked")
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := setOwnership(dir, gid, false); err != nil {
		t.Fatal(err)
	}
	if g, m := owner(sub); g != gid || m.Perm() != 0o775 || m&os.ModeSetgid == 0 {
		t.Errorf("walked: %d %v", g, m)
	}
	if needsOwnership(dir, gid, false) {
		t.Error("a root with the group, g+rwx and setgid still needs a change")
	}
	if err := os.Chown(sub, -1, 0); err != nil {
		t.Fatal(err)
	}
	if needsOwnership(sub, gid, false) != true || needsOwnership(dir, gid+1, false) != true {
		t.Error("a root of another group does not need a change")
	}
}

// On the simulated runtime, through the real apiserver: what the agent
// refuses before the runtime sees it.
func TestSecurityContextRefusals(t *testing.T) {
	e := start(t, sim.Options{Images: []string{"demo:v1"}}, func(c *Config) { c.AllowedUnsafeSysctls = []string{"net.core.*"} })

	forbidden := pod("sysctl", &corev1.Container{Name: "app", Image: "demo:v1", ImagePullPolicy: "IfNotPresent"})
	forbidden.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []*corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}}
	allowed := pod("allowed", &corev1.Container{Name: "app", Image: "demo:v1", ImagePullPolicy: "IfNotPresent"})
	allowed.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []*corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}, {Name: "net.ipv4.tcp_syncookies", Value: "1"}}}
	root := pod("root", &corev1.Container{Name: "app", Image: "demo:v1", ImagePullPolicy: "IfNotPresent"})
	root.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: proto.Bool(true)}
	for _, p := range []*corev1.Pod{forbidden, allowed, root} {
		e.create(p)
	}

	got := e.untilPod("sysctl", "Failed: SysctlForbidden", func(p *corev1.Pod) (bool, string) {
		return p.GetStatus().GetPhase() == "Failed" && p.GetStatus().GetReason() == "SysctlForbidden", ""
	})
	if msg := got.GetStatus().GetMessage(); msg != `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted` {
		t.Errorf("message %q", msg)
	}
	for _, sb := range e.sim.Sandboxes() {
		if sb.Name == "sysctl" {
			t.Errorf("the rejected pod got a sandbox: %+v", sb)
		}
	}
	e.untilRunning("allowed")

	got = e.untilPod("root", "CreateContainerConfigError", func(p *corev1.Pod) (bool, string) {
		return containerStatusOf(p, "app").GetState().GetWaiting().GetReason() == reasonCreateContainerConfigError, ""
	})
	uid := got.GetMetadata().GetUid()
	want := `container has runAsNonRoot and image will run as root (pod: "root_default(` + uid + `)", container: app)`
	if msg := containerStatusOf(got, "app").GetState().GetWaiting().GetMessage(); msg != want {
		t.Errorf("waiting message %q, want %q", msg, want)
	}
	// The rejected pod keeps its reason through later syncs.
	got = e.pod("sysctl")
	if got.GetStatus().GetReason() != "SysctlForbidden" || !slices.ContainsFunc(got.GetStatus().GetConditions(), func(c *corev1.PodCondition) bool {
		return c.GetType() == "Ready" && c.GetStatus() == "False"
	}) {
		t.Errorf("rejected pod's status %v", got.GetStatus())
	}
}
