package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/crienv"
)

// TestContainerdResources (a real containerd, cgroup v1 or v2): requests
// and limits reach the kernel as the kubelet sets them, on each container
// (shares from the cpu request, a CFS quota from the cpu limit, the memory
// limit) and on the pod's own cgroup under Config.CgroupRoot (the sums,
// when every container has the limit); a container over its memory limit
// is OOM-killed and says so as Kubernetes does (OOMKilled, exit code 137,
// then in lastState after its restart); a deleted pod's cgroup goes.
func TestContainerdResources(t *testing.T) {
	root := fmt.Sprintf("/skiff-test-resources-%d", os.Getpid())
	// After the runtime's cleanup (Cleanup runs last in, first out): the
	// pods' cgroups, then the root's.
	t.Cleanup(func() {
		pods, _ := filepath.Glob(filepath.Join(cgroupFS, "*", root, "pod*"))
		pods2, _ := filepath.Glob(filepath.Join(cgroupFS, root, "pod*"))
		for _, p := range append(pods, pods2...) {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				t.Errorf("removing a pod cgroup left behind: %v", err)
			}
		}
		if err := removeCgroup(cgroupFS, root); err != nil {
			t.Errorf("removing %s: %v", root, err)
		}
	})
	ce := crienv.Start(t)
	e := newEnv(t, ce.Conn, nil, func(c *Config) {
		c.PodLogDir = ce.PodLogDir
		c.CgroupRoot = root
		c.RelistPeriod = 200 * time.Millisecond
		c.CrashLoopBackOff, c.CrashLoopBackOffMax = time.Second, 2*time.Second
	})
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()
	v2 := unified(cgroupFS)

	sized := demoPod("sized", demo(ce, "app"))
	sized.Spec.Containers[0].Resources = &corev1.ResourceRequirements{
		Requests: map[string]string{"cpu": "250m", "memory": "64Mi"},
		Limits:   map[string]string{"cpu": "500m", "memory": "128Mi"}}
	besteffort := demoPod("besteffort", demo(ce, "app"))
	hog := demoPod("hog", &corev1.Container{Name: "hog", Image: ce.DemoImage("v1"), ImagePullPolicy: "IfNotPresent",
		Command: []string{"/demo", "alloc", "256Mi"},
		Resources: &corev1.ResourceRequirements{
			Requests: map[string]string{"cpu": "100m", "memory": "32Mi"},
			Limits:   map[string]string{"cpu": "100m", "memory": "32Mi"}}})
	for _, p := range []*corev1.Pod{sized, besteffort, hog} {
		e.create(p)
	}

	// cgroupFile reads a file of a container's or pod's cgroup from the
	// host: <hierarchy>/<root>/pod<uid>[/<container id>]/<file>.
	cgroupFile := func(uid, containerID, controller, file string) string {
		t.Helper()
		dir := filepath.Join(cgroupFS, root, "pod"+uid, containerID)
		if !v2 {
			dir = filepath.Join(cgroupFS, controller, root, "pod"+uid, containerID)
		}
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatalf("reading the cgroup: %v", err)
		}
		return strings.TrimSpace(string(b))
	}
	idOf := func(p *corev1.Pod, name string) string {
		_, id, _ := strings.Cut(containerStatusOf(p, name).GetContainerId(), "://")
		return id
	}
	type want struct{ controller, file, value string }
	check := func(what, uid, id string, wants []want) {
		t.Helper()
		for _, w := range wants {
			if got := cgroupFile(uid, id, w.controller, w.file); got != w.value {
				t.Errorf("%s: %s = %s, want %s", what, w.file, got, w.value)
			}
		}
	}

	t.Run("a container's requests and limits are its cgroup's", func(t *testing.T) {
		p := e.untilRunning("sized")
		uid, id := p.GetMetadata().GetUid(), idOf(p, "app")
		if v2 {
			check("container", uid, id, []want{{"", "cpu.weight", "10"}, {"", "cpu.max", "50000 100000"}, {"", "memory.max", "134217728"}})
			check("pod", uid, "", []want{{"", "cpu.weight", "10"}, {"", "cpu.max", "50000 100000"}, {"", "memory.max", "134217728"}})
		} else {
			check("container", uid, id, []want{{"cpu", "cpu.shares", "256"}, {"cpu", "cpu.cfs_quota_us", "50000"},
				{"cpu", "cpu.cfs_period_us", "100000"}, {"memory", "memory.limit_in_bytes", "134217728"}})
			check("pod", uid, "", []want{{"cpu", "cpu.shares", "256"}, {"cpu", "cpu.cfs_quota_us", "50000"},
				{"memory", "memory.limit_in_bytes", "134217728"}})
		}
		// Inside, the container sees its own limit.
		file := "/sys/fs/cgroup/memory/memory.limit_in_bytes"
		if v2 {
			file = "/sys/fs/cgroup/memory.max"
		}
		r, err := ce.Runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"/demo", "cat", file}, Timeout: 10})
		if err != nil || strings.TrimSpace(string(r.GetStdout())) != "134217728" {
			t.Errorf("inside: %s = %q (%s, %v), want 134217728", file, r.GetStdout(), r.GetStderr(), err)
		}
		if got := p.GetStatus().GetQosClass(); got != "Burstable" {
			t.Errorf("qosClass %q, want Burstable", got)
		}
	})

	t.Run("a BestEffort pod gets the minimum shares and no limit", func(t *testing.T) {
		p := e.untilRunning("besteffort")
		uid, id := p.GetMetadata().GetUid(), idOf(p, "app")
		if v2 {
			check("container", uid, id, []want{{"", "cpu.weight", "1"}, {"", "cpu.max", "max 100000"}, {"", "memory.max", "max"}})
			check("pod", uid, "", []want{{"", "cpu.weight", "1"}, {"", "memory.max", "max"}})
			return
		}
		check("container", uid, id, []want{{"cpu", "cpu.shares", "2"}, {"cpu", "cpu.cfs_quota_us", "-1"}})
		check("pod", uid, "", []want{{"cpu", "cpu.shares", "2"}, {"cpu", "cpu.cfs_quota_us", "-1"}})
		if m := cgroupFile(uid, id, "memory", "memory.limit_in_bytes"); len(m) < 15 {
			t.Errorf("container memory limit %s, want none (the kernel's maximum)", m)
		}
	})

	t.Run("a container over its memory limit is OOMKilled", func(t *testing.T) {
		got := e.untilPod("hog", "OOMKilled, restarted, OOMKilled in lastState", func(p *corev1.Pod) (bool, string) {
			cs := containerStatusOf(p, "hog")
			last := cs.GetLastState().GetTerminated()
			return cs.GetRestartCount() >= 1 && last.GetReason() == "OOMKilled" && last.GetExitCode() == 137, brief(p.GetStatus())
		})
		if got.GetStatus().GetQosClass() != "Guaranteed" {
			t.Errorf("qosClass %q, want Guaranteed", got.GetStatus().GetQosClass())
		}
	})

	t.Run("a deleted pod's cgroup goes", func(t *testing.T) {
		uid := e.pod("sized").GetMetadata().GetUid()
		if _, err := e.pods.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "sized"}); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(cgroupFS, "memory", root, "pod"+uid)
		if v2 {
			dir = filepath.Join(cgroupFS, root, "pod"+uid)
		}
		e.until("the pod gone with its cgroup", func() (bool, string) {
			_, err := os.Stat(dir)
			return e.pod("sized") == nil && os.IsNotExist(err), fmt.Sprintf("%s: %v", dir, err)
		})
	})
}
