package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "skiff.dev/proto/core/v1"
)

func resPod(overhead map[string]string, cs ...*corev1.Container) *corev1.Pod {
	return &corev1.Pod{Spec: &corev1.PodSpec{Containers: cs, Overhead: overhead}}
}

func resCtr(req, lim map[string]string) *corev1.Container {
	return &corev1.Container{Name: "c", Resources: &corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func TestPodCgroupResources(t *testing.T) {
	g := map[string]string{"cpu": "500m", "memory": "64Mi"}
	always := "Always"
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want podCgroupConfig
	}{
		{"besteffort: minimum shares, no limits", resPod(nil, resCtr(nil, nil)), podCgroupConfig{cpuShares: 2}},
		{"guaranteed: the sums", resPod(nil, resCtr(g, g), resCtr(g, g)),
			podCgroupConfig{cpuShares: 1024, cpuQuota: 100000, memory: 128 << 20}},
		{"burstable with every limit", resPod(nil, resCtr(map[string]string{"cpu": "100m"}, g), resCtr(map[string]string{"memory": "1Mi"}, g)),
			podCgroupConfig{cpuShares: 102, cpuQuota: 100000, memory: 128 << 20}},
		{"burstable, one container without a memory limit", resPod(nil, resCtr(g, g), resCtr(map[string]string{"cpu": "250m"}, map[string]string{"cpu": "1"})),
			podCgroupConfig{cpuShares: 768, cpuQuota: 150000}},
		{"overhead counts", resPod(map[string]string{"cpu": "250m", "memory": "32Mi"}, resCtr(g, g)),
			podCgroupConfig{cpuShares: 768, cpuQuota: 75000, memory: 96 << 20}},
		{"sidecars add, init containers take the max", &corev1.Pod{Spec: &corev1.PodSpec{
			InitContainers: []*corev1.Container{
				{Name: "side", RestartPolicy: &always, Resources: &corev1.ResourceRequirements{Requests: g, Limits: g}},
				{Name: "init", Resources: &corev1.ResourceRequirements{Requests: map[string]string{"cpu": "2", "memory": "64Mi"}, Limits: map[string]string{"cpu": "2", "memory": "64Mi"}}},
			},
			Containers: []*corev1.Container{resCtr(g, g)}}},
			// cpu: max(500m+500m, 500m+2) = 2500m; memory: max(128Mi, 128Mi).
			podCgroupConfig{cpuShares: 2560, cpuQuota: 250000, memory: 128 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podCgroupResources(tc.pod); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func readTrimmed(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// writePodCgroup on fake hierarchies (files in a temporary directory).
func TestWritePodCgroup(t *testing.T) {
	t.Run("cgroup v1", func(t *testing.T) {
		root := t.TempDir()
		for _, c := range []string{"cpu", "memory", "pids"} {
			os.Mkdir(filepath.Join(root, c), 0o755)
		}
		if err := writePodCgroup(root, "/skiff/podu1", podCgroupConfig{cpuShares: 256, cpuQuota: 50000, memory: 128 << 20}); err != nil {
			t.Fatal(err)
		}
		for file, want := range map[string]string{
			"cpu/skiff/podu1/cpu.shares": "256", "cpu/skiff/podu1/cpu.cfs_quota_us": "50000", "cpu/skiff/podu1/cpu.cfs_period_us": "100000",
			"memory/skiff/podu1/memory.limit_in_bytes": "134217728",
		} {
			if got := readTrimmed(t, filepath.Join(root, file)); got != want {
				t.Errorf("%s = %s, want %s", file, got, want)
			}
		}
		if err := writePodCgroup(root, "/skiff/podu2", podCgroupConfig{cpuShares: 2}); err != nil {
			t.Fatal(err)
		}
		if q, m := readTrimmed(t, filepath.Join(root, "cpu/skiff/podu2/cpu.cfs_quota_us")), readTrimmed(t, filepath.Join(root, "memory/skiff/podu2/memory.limit_in_bytes")); q != "-1" || m != "-1" {
			t.Errorf("no limits: quota %s memory %s, want -1", q, m)
		}
		// The fake's files keep the directories from going; the real
		// cgroupfs has none to remove.
		for _, c := range []string{"cpu", "memory"} {
			entries, _ := os.ReadDir(filepath.Join(root, c, "skiff/podu1"))
			for _, e := range entries {
				os.Remove(filepath.Join(root, c, "skiff/podu1", e.Name()))
			}
		}
		if err := removeCgroup(root, "/skiff/podu1"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(root, "memory/skiff/podu1")); !os.IsNotExist(err) {
			t.Errorf("pod cgroup left: %v", err)
		}
	})
	t.Run("cgroup v2", func(t *testing.T) {
		root := t.TempDir()
		os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids"), 0o644)
		if err := writePodCgroup(root, "/skiff/podu1", podCgroupConfig{cpuShares: 1024, cpuQuota: 100000, memory: 64 << 20}); err != nil {
			t.Fatal(err)
		}
		for file, want := range map[string]string{
			"cgroup.subtree_control": "+cpu +memory", "skiff/cgroup.subtree_control": "+cpu +memory",
			"skiff/podu1/cpu.weight": "39", "skiff/podu1/cpu.max": "100000 100000", "skiff/podu1/memory.max": "67108864",
		} {
			if got := readTrimmed(t, filepath.Join(root, file)); got != want {
				t.Errorf("%s = %s, want %s", file, got, want)
			}
		}
	})
}
