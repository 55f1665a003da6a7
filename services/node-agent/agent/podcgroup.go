package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"skiff.dev/internal/podresources"
	"skiff.dev/internal/qos"
	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
)

// The pod-level cgroup, as the kubelet's pod container manager makes it:
// with Config.CgroupRoot set, each pod's sandbox and containers live in
// <CgroupRoot>/pod<uid>, which the agent creates before the sandbox with
// the pod's limits (podCgroupConfig, the kubelet's ResourceConfigForPod),
// so that the pod as a whole cannot use more than its containers may
// together, and removes once the pod is gone. Without CgroupRoot the
// runtime places the pod and only the containers' limits apply.

// podCgroupConfig is a pod cgroup's settings: cpu shares always; a CFS
// quota (over quotaPeriod) and a memory limit when known (0: none).
type podCgroupConfig struct {
	cpuShares int64
	cpuQuota  int64
	memory    int64
}

// limitedByAll reports whether every container, init containers
// included, sets a limit of name above zero.
func limitedByAll(spec *corev1.PodSpec, name string) bool {
	for _, cs := range [][]*corev1.Container{spec.GetInitContainers(), spec.GetContainers()} {
		for _, c := range cs {
			q, err := quantity.Parse(c.GetResources().GetLimits()[name])
			if err != nil || q.Sign() <= 0 {
				return false
			}
		}
	}
	return true
}

// podCgroupResources is the kubelet's ResourceConfigForPod: BestEffort
// pods get the minimum shares and no limit; the others shares from their
// cpu requests, and a cpu quota and a memory limit from their summed
// limits when every container sets that limit (Guaranteed pods always
// do).
func podCgroupResources(p *corev1.Pod) podCgroupConfig {
	if qos.Of(p) == qos.BestEffort {
		return podCgroupConfig{cpuShares: minShares}
	}
	// Kubernetes' PodRequests and PodLimits: sidecars, init containers
	// and the overhead counted (package podresources).
	req, _ := podresources.Requests(p.GetSpec())
	lim, _ := podresources.Limits(p.GetSpec())
	c := podCgroupConfig{cpuShares: milliCPUToShares(req["cpu"].MilliValue())}
	if limitedByAll(p.GetSpec(), "cpu") {
		c.cpuQuota = milliCPUToQuota(lim["cpu"].MilliValue(), quotaPeriod)
	}
	if limitedByAll(p.GetSpec(), "memory") {
		c.memory = lim["memory"].Value()
	}
	return c
}

// cgroupFS is where the cgroup hierarchies are mounted.
const cgroupFS = "/sys/fs/cgroup"

// podCgroupPath is a pod's cgroup below the hierarchies' roots, "" when
// the agent does not manage pod cgroups.
func (a *Agent) podCgroupPath(uid string) string {
	if a.cfg.CgroupRoot == "" || uid == "" {
		return ""
	}
	return filepath.Join("/", a.cfg.CgroupRoot, "pod"+uid)
}

// ensurePodCgroup creates the pod's cgroup with its limits (before its
// sandbox, which the runtime places in it).
func (a *Agent) ensurePodCgroup(p *corev1.Pod) error {
	rel := a.podCgroupPath(p.GetMetadata().GetUid())
	if rel == "" {
		return nil
	}
	if err := writePodCgroup(cgroupFS, rel, podCgroupResources(p)); err != nil {
		return fmt.Errorf("pod cgroup %s: %w", rel, err)
	}
	return nil
}

// removePodCgroup removes a gone pod's cgroup (empty once the runtime
// removed its sandbox and containers).
func (a *Agent) removePodCgroup(uid string) error {
	rel := a.podCgroupPath(uid)
	if rel == "" {
		return nil
	}
	return removeCgroup(cgroupFS, rel)
}

// unified reports whether root is a cgroup v2 hierarchy.
func unified(root string) bool {
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	return err == nil
}

// writePodCgroup makes the cgroup rel under root (a cgroup v1 mount of one
// directory per controller, or a v2 unified one) and writes c into it: v1
// cpu.shares, cpu.cfs_period_us, cpu.cfs_quota_us, memory.limit_in_bytes;
// v2 cpu.weight (shares converted as runc does), cpu.max and memory.max,
// with the cpu and memory controllers enabled down to it.
func writePodCgroup(root, rel string, c podCgroupConfig) error {
	if unified(root) {
		dir := filepath.Join(root, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		// Enable cpu and memory for the children of every ancestor.
		parts := strings.Split(strings.Trim(rel, "/"), "/")
		for i := range parts {
			parent := filepath.Join(append([]string{root}, parts[:i]...)...)
			if err := writeFile(filepath.Join(parent, "cgroup.subtree_control"), "+cpu +memory"); err != nil {
				return err
			}
		}
		quota, memory := "max", "max"
		if c.cpuQuota > 0 {
			quota = strconv.FormatInt(c.cpuQuota, 10)
		}
		if c.memory > 0 {
			memory = strconv.FormatInt(c.memory, 10)
		}
		return errors.Join(
			writeFile(filepath.Join(dir, "cpu.weight"), strconv.FormatInt(sharesToWeight(c.cpuShares), 10)),
			writeFile(filepath.Join(dir, "cpu.max"), quota+" "+strconv.Itoa(quotaPeriod)),
			writeFile(filepath.Join(dir, "memory.max"), memory))
	}
	cpu, mem := filepath.Join(root, "cpu", rel), filepath.Join(root, "memory", rel)
	for _, d := range []string{cpu, mem} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	quota, memory := int64(-1), int64(-1)
	if c.cpuQuota > 0 {
		quota = c.cpuQuota
	}
	if c.memory > 0 {
		memory = c.memory
	}
	return errors.Join(
		writeFile(filepath.Join(cpu, "cpu.shares"), strconv.FormatInt(c.cpuShares, 10)),
		writeFile(filepath.Join(cpu, "cpu.cfs_period_us"), strconv.Itoa(quotaPeriod)),
		writeFile(filepath.Join(cpu, "cpu.cfs_quota_us"), strconv.FormatInt(quota, 10)),
		writeFile(filepath.Join(mem, "memory.limit_in_bytes"), strconv.FormatInt(memory, 10)))
}

// removeCgroup removes rel from every hierarchy under root that has it.
func removeCgroup(root, rel string) error {
	if unified(root) {
		if err := os.Remove(filepath.Join(root, rel)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	ctrls, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range ctrls {
		if err := os.Remove(filepath.Join(root, c.Name(), rel)); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, os.ErrInvalid) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sharesToWeight converts cgroup v1 cpu shares [2, 262144] to a v2
// cpu.weight [1, 10000], as runc does.
func sharesToWeight(shares int64) int64 {
	if shares == 0 {
		return 0
	}
	return 1 + ((shares-2)*9999)/262142
}

func writeFile(path, value string) error {
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return err
	}
	return nil
}
