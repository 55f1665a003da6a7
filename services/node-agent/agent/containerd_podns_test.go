package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	nodev1 "skiff.dev/proto/node/v1"
	"skiff.dev/services/node-agent/crienv"
)

// The story on a real containerd: a hostPID and hostIPC pod is in the
// node's PID and IPC namespaces (its /proc/1 is the node's init); with
// shareProcessNamespace one container reads another's process (and PID 1
// is the sandbox's pause); without it PID 1 is the container's own; the
// managed /etc/hosts carries the hostname and aliases; a hostNetwork pod
// serves on the node's port with the node's hostname and gets the node's
// hosts file plus its aliases; a RuntimeClass of handler runc (containerd's
// default runtime) runs, one of a handler containerd lacks fails the
// sandbox with the runtime's reason.
func TestContainerdPodNamespaces(t *testing.T) {
	ce := crienv.Start(t)
	e := newEnv(t, ce.Conn, nil, func(c *Config) {
		c.PodLogDir = ce.PodLogDir
		c.RelistPeriod = 200 * time.Millisecond
	})
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()
	classes := client.RuntimeClasses(e.api.Conn)
	for name, handler := range map[string]string{"runc": "runc", "bogus": "no-such-handler"} {
		if _, err := classes.Create(ctx, &nodev1.RuntimeClass{Metadata: &metav1.ObjectMeta{Name: name}, Handler: handler}); err != nil {
			t.Fatal(err)
		}
	}
	aliases := []*corev1.HostAlias{{Ip: "10.1.2.3", Hostnames: []string{"foo.remote", "bar.remote"}}}

	hostpid := demoPod("hostpid", demo(ce, "app"))
	hostpid.Spec.HostPid, hostpid.Spec.HostIpc = true, true
	hostpid.Spec.RuntimeClassName = proto.String("runc")
	hostpid.Spec.HostAliases = aliases
	shared := demoPod("shared", demo(ce, "a"), demo(ce, "b", "PORT=8081", "MARKER=container-b"))
	shared.Spec.Containers[1].Ports = nil
	shared.Spec.ShareProcessNamespace = proto.Bool(true)
	private := demoPod("private", demo(ce, "app"))
	hostPort := freePort(t)
	hostnet := demoPod("hostnet", demo(ce, "app", fmt.Sprintf("PORT=%d", hostPort)))
	hostnet.Spec.Containers[0].Ports = nil
	hostnet.Spec.HostNetwork = true
	hostnet.Spec.HostAliases = aliases
	bogus := demoPod("bogus", demo(ce, "app"))
	bogus.Spec.RuntimeClassName = proto.String("bogus")
	for _, p := range []*corev1.Pod{hostpid, shared, private, hostnet, bogus} {
		e.create(p)
	}
	// A pod's file, read by its container a ("app" where it has one).
	file := func(p *corev1.Pod, path string) string {
		t.Helper()
		code, body, err := get(ctx, fmt.Sprintf("http://%s:8080/file?path=%s", p.GetStatus().GetPodIp(), path))
		if err != nil || code != 200 {
			t.Fatalf("pod %s, %s: %d %q %v", p.GetMetadata().GetName(), path, code, body, err)
		}
		return body
	}
	hostInit, err := os.ReadFile("/proc/1/cmdline")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("hostPID and hostIPC: the node's namespaces, under RuntimeClass runc", func(t *testing.T) {
		p := e.untilRunning("hostpid")
		if got := file(p, "/proc/1/cmdline"); got != string(hostInit) {
			t.Errorf("/proc/1/cmdline in a hostPID container %q, the node's init is %q", got, hostInit)
		}
		pid := hostPIDOf(ctx, t, ce, p, "app")
		for _, ns := range []string{"pid", "ipc"} {
			theirs, err1 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
			ours, err2 := os.Readlink("/proc/self/ns/" + ns)
			if err1 != nil || err2 != nil || theirs != ours {
				t.Errorf("%s namespace %q %v, the node's %q %v", ns, theirs, err1, ours, err2)
			}
		}
		if net1, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); net1 == "" || net1 == mustReadlink(t, "/proc/self/ns/net") {
			t.Errorf("hostPID put the pod on the node's network too: %q", net1)
		}
		sandboxes, err := e.agent.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{labelPodName: "hostpid"}})
		if err != nil || len(sandboxes) != 1 || sandboxes[0].GetRuntimeHandler() != "runc" {
			t.Errorf("sandbox %v %v: want runtime handler runc", sandboxes, err)
		}
	})

	t.Run("the managed /etc/hosts with the hostname and aliases", func(t *testing.T) {
		p := e.untilRunning("hostpid")
		hosts := file(p, "/etc/hosts")
		want := fmt.Sprintf("%s\thostpid\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo.remote\tbar.remote\n", p.GetStatus().GetPodIp())
		if !strings.HasPrefix(hosts, "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n") || !strings.HasSuffix(hosts, want) {
			t.Errorf("/etc/hosts:\n%s", hosts)
		}
	})

	t.Run("shareProcessNamespace: one container sees the other's process", func(t *testing.T) {
		p := e.untilRunning("shared")
		if init := file(p, "/proc/1/cmdline"); strings.Contains(init, "demo") {
			t.Errorf("PID 1 of a shared namespace is %q, want the sandbox's pause", init)
		}
		nspid := namespacePID(t, hostPIDOf(ctx, t, ce, p, "b"))
		env := file(p, fmt.Sprintf("/proc/%d/environ", nspid))
		if !slices.Contains(strings.Split(env, "\x00"), "MARKER=container-b") {
			t.Errorf("container a reading /proc/%d/environ (container b): %q", nspid, env)
		}
	})

	t.Run("without it, PID 1 is the container's own", func(t *testing.T) {
		p := e.untilRunning("private")
		if init := file(p, "/proc/1/cmdline"); !strings.Contains(init, "demo") {
			t.Errorf("PID 1 of a container's own namespace is %q, want the demo", init)
		}
	})

	t.Run("hostNetwork: the node's port, hostname and hosts file", func(t *testing.T) {
		p := e.untilRunning("hostnet")
		if ip := p.GetStatus().GetPodIp(); ip != e.cfg.NodeIP {
			t.Errorf("pod IP %q, want the node's %q", ip, e.cfg.NodeIP)
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", hostPort)
		host, _ := os.Hostname()
		if code, body, err := get(ctx, base+"/"); err != nil || code != 200 || !strings.HasSuffix(strings.TrimSpace(body), " on "+host) {
			t.Errorf("GET / on the node's port %d: %d %q %v (want the node's hostname %q)", hostPort, code, body, err, host)
		}
		node, err := os.ReadFile("/etc/hosts")
		if err != nil {
			t.Fatal(err)
		}
		want := "# Kubernetes-managed hosts file (host network).\n" + string(node) + "\n# Entries added by HostAliases.\n10.1.2.3\tfoo.remote\tbar.remote\n"
		if _, got, err := get(ctx, base+"/file?path=/etc/hosts"); err != nil || got != want {
			t.Errorf("/etc/hosts of a hostNetwork pod:\n%s\nwant\n%s (%v)", got, want, err)
		}
	})

	t.Run("a RuntimeClass whose handler containerd lacks fails the sandbox", func(t *testing.T) {
		e.untilPod("bogus", "FailedCreatePodSandBox naming the handler", func(p *corev1.Pod) (bool, string) {
			evs := e.eventsOf("bogus")
			for _, ev := range evs {
				if strings.HasPrefix(ev, "FailedCreatePodSandBox: Failed to create pod sandbox: ") && strings.Contains(ev, "no-such-handler") {
					return p.GetStatus().GetPhase() == "Pending", ""
				}
			}
			return false, fmt.Sprint(evs)
		})
	})
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func mustReadlink(t *testing.T, path string) string {
	t.Helper()
	s, err := os.Readlink(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hostPIDOf is the node's PID of container name of pod p, from the CRI's
// verbose container status.
func hostPIDOf(ctx context.Context, t *testing.T, ce *crienv.Env, p *corev1.Pod, name string) int {
	t.Helper()
	id := strings.TrimPrefix(containerStatusOf(p, name).GetContainerId(), "containerd://")
	st, err := ce.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(st.GetInfo()["info"]), &info); err != nil || info.Pid == 0 {
		t.Fatalf("container %s's pid in %q: %v", name, st.GetInfo()["info"], err)
	}
	return info.Pid
}

// namespacePID is the PID a process of the node has in its own PID
// namespace (the last of NSpid in its status).
func namespacePID(t *testing.T, pid int) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "NSpid:"); ok {
			f := strings.Fields(v)
			n, err := strconv.Atoi(f[len(f)-1])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no NSpid in /proc/%d/status", pid)
	return 0
}
