package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/node-agent/cri"
	"skiff.dev/services/node-agent/crienv"
)

// Security contexts on a real containerd, checked from inside the
// containers (/proc/1/status is the container's first process: its ids,
// groups, capabilities, no_new_privs and seccomp mode: what id(1) would
// show, in an image without one): the pod's user, group, fsGroup and supplementalGroups, a
// RuntimeDefault seccomp profile, no privilege escalation, a read-only
// root, the masked /proc paths, a safe sysctl in the pod's network
// namespace, capabilities dropped and one added, the emptyDir's group,
// and runAsNonRoot refusing the demo image, which runs as root.
func TestContainerdSecurityContext(t *testing.T) {
	ce := crienv.Start(t)
	e := newEnv(t, ce.Conn, nil, func(c *Config) {
		c.PodLogDir = ce.PodLogDir
		c.RelistPeriod = 200 * time.Millisecond
	})
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()
	rt := cri.New(ce.Conn, cri.Options{})

	secure := demoPod("secure", func() *corev1.Container {
		c := demo(ce, "app")
		c.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: proto.Bool(false), ReadOnlyRootFilesystem: proto.Bool(true),
			Capabilities: &corev1.Capabilities{Drop: []string{"ALL"}}}
		c.VolumeMounts = []*corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		return c
	}(), func() *corev1.Container {
		// Root with only NET_BIND_SERVICE: it may listen on port 81.
		c := demo(ce, "caps", "PORT=81")
		c.Ports = nil
		c.SecurityContext = &corev1.SecurityContext{RunAsUser: proto.Int64(0),
			Capabilities: &corev1.Capabilities{Drop: []string{"ALL"}, Add: []string{"NET_BIND_SERVICE"}}}
		return c
	}())
	secure.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsUser: proto.Int64(1000), RunAsGroup: proto.Int64(3000), FsGroup: proto.Int64(2000), SupplementalGroups: []int64{4000},
		SeccompProfile: &corev1.SeccompProfile{Type: "RuntimeDefault"},
		Sysctls:        []*corev1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "20000 30000"}},
	}
	secure.Spec.Volumes = []*corev1.Volume{{Name: "data", EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	nonRoot := demoPod("nonroot", demo(ce, "app"))
	nonRoot.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: proto.Bool(true)}
	e.create(secure)
	e.create(nonRoot)

	running := e.untilRunning("secure")
	exec := func(container string, cmd ...string) (string, string, int32) {
		t.Helper()
		id := strings.TrimPrefix(containerStatusOf(running, container).GetContainerId(), "containerd://")
		resp, err := rt.ExecSync(ctx, id, cmd, 10*time.Second)
		if err != nil {
			t.Fatalf("exec %v in %s: %v", cmd, container, err)
		}
		return string(resp.GetStdout()), string(resp.GetStderr()), resp.GetExitCode()
	}
	status := func(container string) map[string]string {
		t.Helper()
		out, stderr, code := exec(container, "/demo", "cat", "/proc/1/status")
		if code != 0 {
			t.Fatalf("cat /proc/1/status in %s: %d %s", container, code, stderr)
		}
		fields := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				fields[k] = strings.Join(strings.Fields(v), " ")
			}
		}
		return fields
	}

	t.Run("ids, groups, no_new_privs, seccomp and capabilities of the app", func(t *testing.T) {
		st := status("app")
		for k, want := range map[string]string{
			"Uid": "1000 1000 1000 1000", "Gid": "3000 3000 3000 3000",
			"NoNewPrivs": "1", "Seccomp": "2", "CapEff": "0000000000000000", "CapBnd": "0000000000000000",
		} {
			if st[k] != want {
				t.Errorf("%s: %q, want %q", k, st[k], want)
			}
		}
		groups := " " + st["Groups"] + " "
		if !strings.Contains(groups, " 2000 ") || !strings.Contains(groups, " 4000 ") {
			t.Errorf("Groups: %q, want fsGroup 2000 and supplemental group 4000", st["Groups"])
		}
	})

	t.Run("only NET_BIND_SERVICE for caps, which listens on port 81", func(t *testing.T) {
		st := status("caps")
		if st["Uid"] != "0 0 0 0" || st["CapEff"] != "0000000000000400" || st["CapBnd"] != "0000000000000400" || st["NoNewPrivs"] != "0" {
			t.Errorf("caps: Uid %q CapEff %q CapBnd %q NoNewPrivs %q; want root with cap_net_bind_service alone", st["Uid"], st["CapEff"], st["CapBnd"], st["NoNewPrivs"])
		}
		code, body, err := get(ctx, fmt.Sprintf("http://%s:81/", running.GetStatus().GetPodIp()))
		if err != nil || code != 200 || !strings.HasPrefix(body, "demo v1") {
			t.Errorf("GET :81: %d %q %v", code, body, err)
		}
	})

	t.Run("the root filesystem is read-only", func(t *testing.T) {
		_, stderr, code := exec("app", "/demo", "write", "/x", "hello")
		if code == 0 || !strings.Contains(stderr, "read-only file system") {
			t.Errorf("write to /: exit %d, %q; want a read-only file system error", code, stderr)
		}
	})

	t.Run("masked and read-only /proc paths", func(t *testing.T) {
		if out, _, code := exec("app", "/demo", "cat", "/proc/timer_list"); code != 0 || out != "" {
			t.Errorf("/proc/timer_list: exit %d, %d bytes; want it masked (empty)", code, len(out))
		}
		if _, _, code := exec("caps", "/demo", "write", "/proc/sys/net/ipv4/tcp_syncookies", "0"); code == 0 {
			t.Error("root wrote to /proc/sys")
		}
	})

	t.Run("a safe sysctl is set in the pod's network namespace", func(t *testing.T) {
		out, _, _ := exec("app", "/demo", "cat", "/proc/sys/net/ipv4/ip_local_port_range")
		if got := strings.Join(strings.Fields(out), " "); got != "20000 30000" {
			t.Errorf("ip_local_port_range in the pod: %q", got)
		}
		host, _ := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
		if strings.Join(strings.Fields(string(host)), " ") == "20000 30000" {
			t.Error("the host's ip_local_port_range changed")
		}
	})

	t.Run("the emptyDir belongs to fsGroup and what the pod writes too", func(t *testing.T) {
		if _, stderr, code := exec("app", "/demo", "write", "/data/f", "x"); code != 0 {
			t.Fatalf("write to the emptyDir as uid 1000: %d %s", code, stderr)
		}
		dir := volumeDir(e.cfg.RootDir, running.GetMetadata().GetUid(), pluginEmptyDir, "data")
		for _, path := range []string{dir, filepath.Join(dir, "f")} {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if st.Gid != 2000 || (fi.IsDir() && fi.Mode()&os.ModeSetgid == 0) {
				t.Errorf("%s: uid %d gid %d mode %v; want group 2000 (setgid directory)", path, st.Uid, st.Gid, fi.Mode())
			}
		}
	})

	t.Run("runAsNonRoot refuses an image that runs as root", func(t *testing.T) {
		got := e.untilPod("nonroot", "CreateContainerConfigError", func(p *corev1.Pod) (bool, string) {
			return containerStatusOf(p, "app").GetState().GetWaiting().GetReason() == reasonCreateContainerConfigError, ""
		})
		msg := containerStatusOf(got, "app").GetState().GetWaiting().GetMessage()
		want := regexp.MustCompile(`^container has runAsNonRoot and image will run as root \(pod: "nonroot_default\([0-9a-f-]+\)", container: app\)$`)
		if !want.MatchString(msg) {
			t.Errorf("message %q", msg)
		}
	})
}
