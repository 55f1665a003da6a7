package crienv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// runPod starts a one-container pod of the demo image at version and
// returns its sandbox id, container id and IP.
func runPod(ctx context.Context, t *testing.T, env *Env, name, version string) (string, string, netip.Addr) {
	t.Helper()
	sbCfg := BareSandboxConfig(env, name, "default", randomUID())
	sb, err := env.Runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	c, err := env.Runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sb.GetPodSandboxId(),
		Config:        BareContainerConfig(sbCfg, "demo", env.DemoImage(version)),
		SandboxConfig: sbCfg,
	})
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if _, err := env.Runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.GetContainerId()}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	st, err := env.Runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.GetPodSandboxId()})
	if err != nil {
		t.Fatalf("PodSandboxStatus: %v", err)
	}
	ip, err := netip.ParseAddr(st.GetStatus().GetNetwork().GetIp())
	if err != nil || !env.Subnet.Contains(ip) {
		t.Fatalf("pod IP %q (%v) is not in %v", st.GetStatus().GetNetwork().GetIp(), err, env.Subnet)
	}
	return sb.GetPodSandboxId(), c.GetContainerId(), ip
}

// httpGet GETs url from the host. Until the server in the container has
// bound its port the connection is refused: there is no event for that
// from outside the pod (a readiness probe polls too), so a refused
// connection is retried every 10 ms until ctx ends.
func httpGet(ctx context.Context, url string) (string, error) {
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	for {
		resp, err := client.Get(url)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return string(b), fmt.Errorf("GET %s: %s", url, resp.Status)
			}
			return string(b), rerr
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("GET %s: %v (last: %v)", url, ctx.Err(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestEnvRunsPods is the story of an Env: two pods (demo v1 and v2) get
// IPs in the Env's subnet, answer from the host and reach each other; once
// removed and the Env closed, nothing of it remains.
func TestEnvRunsPods(t *testing.T) {
	began := time.Now()
	env := Start(t)
	t.Logf("Env up in %v: %s, %s, slot subnet %v on %s, snapshotter %s", time.Since(began).Round(time.Millisecond), env.RuntimeVersion, env.Endpoint, env.Subnet, env.Bridge, env.Snapshotter)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()

	sb1, c1, ip1 := runPod(ctx, t, env, "web-one", "v1")
	sb2, _, ip2 := runPod(ctx, t, env, "web-two", "v2")
	ids := runcContainers(env.layout)
	if len(ids) != 4 || len(processesOf(ids)) != 4 {
		t.Fatalf("runc containers %v with processes %v, want 2 sandboxes and 2 containers", ids, processesOf(ids))
	}

	for _, c := range []struct {
		ip   netip.Addr
		want string
	}{{ip1, "demo v1 on web-one\n"}, {ip2, "demo v2 on web-two\n"}} {
		body, err := httpGet(ctx, fmt.Sprintf("http://%s/", netip.AddrPortFrom(c.ip, 8080)))
		if err != nil {
			t.Fatal(err)
		}
		if body != c.want {
			t.Errorf("GET http://%v:8080/ = %q, want %q", c.ip, body, c.want)
		}
	}

	// Pod to pod, from inside web-one (ExecSync, as exec probes do).
	ex, err := env.Runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{
		ContainerId: c1,
		Cmd:         []string{"/demo", "get", fmt.Sprintf("http://%s/", netip.AddrPortFrom(ip2, 8080))},
		Timeout:     10,
	})
	if err != nil {
		t.Fatalf("ExecSync: %v", err)
	}
	if ex.GetExitCode() != 0 || string(ex.GetStdout()) != "demo v2 on web-two\n" {
		t.Errorf("web-one GET web-two: exit %d, stdout %q, stderr %q", ex.GetExitCode(), ex.GetStdout(), ex.GetStderr())
	}

	// The request shows in the container's log.
	cs, err := env.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c1})
	if err != nil {
		t.Fatal(err)
	}
	logData, err := os.ReadFile(cs.GetStatus().GetLogPath())
	if err != nil || !strings.Contains(string(logData), "GET / 200") {
		t.Errorf("container log %s: %v\n%s", cs.GetStatus().GetLogPath(), err, logData)
	}

	for _, id := range []string{sb1, sb2} {
		if err := removeSandbox(ctx, env.Runtime, id); err != nil {
			t.Fatal(err)
		}
	}
	list, err := env.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(list.GetItems()) != 0 {
		t.Fatalf("after removal: %d sandboxes (%v)", len(list.GetItems()), err)
	}

	// An image that was not imported cannot be pulled, and the pull stays
	// on the machine (NoRegistry).
	_, err = env.Images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "skiff.local/missing:v1"}})
	if err == nil || !strings.Contains(err.Error(), NoRegistry) {
		t.Errorf("PullImage skiff.local/missing:v1: %v, want an error naming %s", err, NoRegistry)
	} else {
		t.Logf("PullImage of a missing image: %v", err)
	}

	// Close, and check nothing remains.
	pid, dir, l := env.ContainerdPID(), env.Dir, env.layout
	closing := time.Now()
	if err := env.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	t.Logf("Env closed in %v", time.Since(closing).Round(time.Millisecond))
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("containerd pid %d still exists (kill 0: %v)", pid, err)
	}
	if pids := processesReferencing(l.config(), l.socket()); len(pids) > 0 {
		t.Errorf("processes still name the Env: %v", pids)
	}
	if pids := processesOf(ids); len(pids) > 0 {
		t.Errorf("container processes remain: %v", pids)
	}
	if _, err := net.InterfaceByName(env.Bridge); err == nil {
		t.Errorf("bridge %s still exists", env.Bridge)
	}
	if m := mountsUnder(dir); len(m) > 0 {
		t.Errorf("mounts remain under %s: %v", dir, m)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists (%v)", dir, err)
	}
	if files, _ := filepath.Glob(filepath.Join("/var/lib/cni/results", env.Network+"-*")); len(files) > 0 {
		t.Errorf("CNI results remain: %v", files)
	}
}

// TestBareP50 runs the benchmark's bare CRI loop on a few pods.
func TestBareP50(t *testing.T) {
	env := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	const n = 5
	p50, lats, err := BareP50(ctx, env, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bare CRI pod start, %d pods at once: p50 %v, all %v", n, p50.Round(time.Millisecond), lats)
	if p50 <= 0 {
		t.Errorf("p50 = %v", p50)
	}
	list, err := env.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(list.GetItems()) != 0 {
		t.Errorf("after BareP50: %d sandboxes left (%v)", len(list.GetItems()), err)
	}
}

// TestLeftoversOfADeadEnvAreCleaned: an Env whose process died without
// Close (containerd killed, a pod still running: shims, containers, mounts,
// the network namespace) is cleaned by the slot's next owner, as Launch
// does (sweepStale and acquireSlot call cleanStale). The test keeps the
// slot locked throughout so that no other process's Launch cleans it first.
func TestLeftoversOfADeadEnvAreCleaned(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("crienv: no real containerd in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	dead, err := Launch(ctx, "")
	if err != nil {
		if errors.Is(err, ErrUnavailable) && os.Getenv("CI") != "true" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	runPod(ctx, t, dead, "orphan", "v1")

	// Die as a killed test process would: containerd goes (Pdeathsig),
	// the shims, containers and mounts stay.
	dead.Conn.Close()
	dead.proc.cmd.Process.Kill()
	<-dead.proc.exited
	dir, l := dead.Dir, dead.layout
	ids := runcContainers(l)
	if len(processesReferencing(l.socket())) == 0 || len(mountsUnder(dir)) == 0 || len(processesOf(ids)) == 0 {
		t.Fatal("the simulated crash left no shim, container or mount: the test does not test anything")
	}

	sl := &slot{n: dead.slot.n, lock: dead.slot.lock, stale: readRecord(dead.slot.lock)}
	if sl.stale != dir {
		t.Fatalf("slot %d records %q, want %q", sl.n, sl.stale, dir)
	}
	warnings := cleanStale(sl)
	if err := sl.release(); err != nil {
		t.Error(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], dir) || !strings.Contains(warnings[0], "runc container") {
		t.Errorf("warnings %q, want one about cleaning %s", warnings, dir)
	}
	if pids := processesReferencing(l.config(), l.socket()); len(pids) > 0 {
		t.Errorf("processes of the dead Env remain: %v", pids)
	}
	if pids := processesOf(ids); len(pids) > 0 {
		t.Errorf("container processes of the dead Env remain: %v", pids)
	}
	if m := mountsUnder(dir); len(m) > 0 {
		t.Errorf("mounts of the dead Env remain: %v", m)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists (%v)", dir, err)
	}
	if _, err := net.InterfaceByName(dead.Bridge); err == nil {
		t.Errorf("bridge %s of the dead Env remains", dead.Bridge)
	}
}

// runcContainers lists the ids of the containers runc knows under l.
func runcContainers(l layout) []string {
	ents, _ := os.ReadDir(filepath.Join(l.runcRoot(), "k8s.io"))
	var ids []string
	for _, e := range ents {
		ids = append(ids, e.Name())
	}
	return ids
}

// processesOf lists the processes in the cgroup of one of the containers
// (containerd names a container's cgroup after its id).
func processesOf(ids []string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cgroup"))
		if err != nil {
			continue
		}
		for _, id := range ids {
			if strings.Contains(string(b), "/"+id+"\n") {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
