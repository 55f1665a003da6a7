package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The resource usage of the node and its pods, read afresh from the
// runtime's stats (CRI ListPodSandboxStats and ListContainerStats) and the
// machine (its root cgroup, or /proc) each time it is asked: by a scrape
// of the metrics (statsCollector) or by NodeAgent.Usage (usage.go). The
// kubelet reads the same figures through its CRI stats provider.

// cpuSample is one reading of a CPU counter.
type cpuSample struct {
	at        time.Time // when the runtime (or the kernel) took it
	coreNanos uint64    // cumulative CPU time, in nanoseconds
	hasTotal  bool
	nanoCores uint64 // the runtime's own rate, when it gives one
	hasRate   bool
}

// memSample is one reading of a memory working set.
type memSample struct {
	at         time.Time
	workingSet uint64
	ok         bool
}

// containerStats is one running container's usage.
type containerStats struct {
	id     string
	cpu    cpuSample
	memory memSample
}

// podStats is one pod's usage: its pod cgroup's (when the runtime reports
// sandbox stats) and its running containers'.
type podStats struct {
	namespace, name, uid string
	cpu                  cpuSample
	memory               memSample
	containers           map[string]*containerStats // by container name
}

// machineSample is the whole machine's usage.
type machineSample struct {
	at         time.Time
	coreNanos  uint64
	workingSet uint64
}

// statsSnapshot is one reading of everything.
type statsSnapshot struct {
	taken   time.Time // on the agent's clock, once read
	node    machineSample
	nodeErr error
	pods    map[string]*podStats // by pod uid
	// podsErr: the runtime gave no pod-level stats (containerd 1.6 fails
	// ListPodSandboxStats for a sandbox without a cgroup parent); the
	// containers' are there.
	podsErr error
}

func cpuOf(u *runtimeapi.CpuUsage) cpuSample {
	if u == nil {
		return cpuSample{}
	}
	s := cpuSample{at: time.Unix(0, u.GetTimestamp())}
	if v := u.GetUsageCoreNanoSeconds(); v != nil {
		s.coreNanos, s.hasTotal = v.GetValue(), true
	}
	if v := u.GetUsageNanoCores(); v != nil {
		s.nanoCores, s.hasRate = v.GetValue(), true
	}
	return s
}

func memOf(u *runtimeapi.MemoryUsage) memSample {
	if u.GetWorkingSetBytes() == nil {
		return memSample{}
	}
	return memSample{at: time.Unix(0, u.GetTimestamp()), workingSet: u.GetWorkingSetBytes().GetValue(), ok: true}
}

func (s cpuSample) ok() bool { return s.hasTotal || s.hasRate }

// parseStats turns the runtime's stats into pods, pure. Only the agent's
// pods count (sandboxes and containers with its labels). Containers
// without CPU or memory (exited ones, for containerd) are left out; of
// two containers of one name in a pod (a restart the runtime still
// reports), the one sampled last stays.
func parseStats(sandboxes []*runtimeapi.PodSandboxStats, containers []*runtimeapi.ContainerStats) map[string]*podStats {
	pods := map[string]*podStats{}
	pod := func(labels map[string]string) *podStats {
		if _, ok := podKeyOf(labels); !ok {
			return nil
		}
		uid := labels[labelPodUID]
		p := pods[uid]
		if p == nil {
			p = &podStats{namespace: labels[labelPodNamespace], name: labels[labelPodName], uid: uid, containers: map[string]*containerStats{}}
			pods[uid] = p
		}
		return p
	}
	for _, sb := range sandboxes {
		p := pod(sb.GetAttributes().GetLabels())
		if p == nil {
			continue
		}
		cpu, mem := cpuOf(sb.GetLinux().GetCpu()), memOf(sb.GetLinux().GetMemory())
		if cpu.ok() && (!p.cpu.ok() || cpu.at.After(p.cpu.at)) {
			p.cpu, p.memory = cpu, mem
		}
	}
	for _, c := range containers {
		cpu, mem := cpuOf(c.GetCpu()), memOf(c.GetMemory())
		if !cpu.ok() && !mem.ok {
			continue
		}
		attrs := c.GetAttributes()
		p := pod(attrs.GetLabels())
		if p == nil {
			continue
		}
		name := attrs.GetMetadata().GetName()
		if name == "" {
			name = attrs.GetLabels()[labelContainerName]
		}
		if old, ok := p.containers[name]; ok && !cpu.at.After(old.cpu.at) {
			continue
		}
		p.containers[name] = &containerStats{id: attrs.GetId(), cpu: cpu, memory: mem}
	}
	return pods
}

// readStats reads the runtime's stats and the machine's. Only a failure
// of ListContainerStats fails it: without sandbox stats (Unimplemented,
// or an error kept in podsErr) it gives the containers' only; a failure
// of the machine's files is kept in nodeErr.
func (a *Agent) readStats(ctx context.Context) (*statsSnapshot, error) {
	snap := &statsSnapshot{}
	sbs, err := a.rt.ListPodSandboxStats(ctx, nil)
	if err != nil && status.Code(err) != codes.Unimplemented {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("ListPodSandboxStats: %w", err)
		}
		snap.podsErr = fmt.Errorf("ListPodSandboxStats: %w", err)
	}
	cs, err := a.rt.ListContainerStats(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("ListContainerStats: %w", err)
	}
	snap.pods = parseStats(sbs, cs)
	snap.node, snap.nodeErr = a.cfg.machineStats()
	// Once read: the runtime's samples are all older, so a wait of the
	// window from here puts the next ones at least the window later.
	snap.taken = a.cfg.Clock.Now()
	return snap, nil
}

// The machine's files: cgroup v2's root (or the agent's own cgroup
// namespace's root, in a container), else /proc.
const (
	cgroupRoot = "/sys/fs/cgroup"
	procStat   = "/proc/stat"
	procMem    = "/proc/meminfo"
)

// readMachineStats reads the machine's CPU time and working set as
// cAdvisor does for the root container: CPU from cgroup v2's cpu.stat
// (usage_usec) or /proc/stat; memory from memory.current minus
// inactive_file, or /proc/meminfo (MemTotal - MemFree - Inactive(file))
// where the root cgroup has no memory.current.
func readMachineStats() (machineSample, error) {
	s := machineSample{at: time.Now()}
	if b, err := os.ReadFile(cgroupRoot + "/cpu.stat"); err == nil {
		v, ok := fieldOf(b, "usage_usec")
		if !ok {
			return s, fmt.Errorf("%s/cpu.stat: no usage_usec", cgroupRoot)
		}
		s.coreNanos = v * 1000
	} else {
		b, err := os.ReadFile(procStat)
		if err != nil {
			return s, err
		}
		if s.coreNanos, err = procStatCPU(b); err != nil {
			return s, fmt.Errorf("%s: %w", procStat, err)
		}
	}
	if cur, err := os.ReadFile(cgroupRoot + "/memory.current"); err == nil {
		usage, err := strconv.ParseUint(strings.TrimSpace(string(cur)), 10, 64)
		if err != nil {
			return s, fmt.Errorf("%s/memory.current: %w", cgroupRoot, err)
		}
		b, err := os.ReadFile(cgroupRoot + "/memory.stat")
		if err != nil {
			return s, err
		}
		inactive, _ := fieldOf(b, "inactive_file")
		s.workingSet = usage - min(inactive, usage)
		return s, nil
	}
	b, err := os.ReadFile(procMem)
	if err != nil {
		return s, err
	}
	if s.workingSet, err = meminfoWorkingSet(b); err != nil {
		return s, fmt.Errorf("%s: %w", procMem, err)
	}
	return s, nil
}

// fieldOf reads "key value" lines (cpu.stat, memory.stat).
func fieldOf(b []byte, key string) (uint64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == key {
			v, err := strconv.ParseUint(f[1], 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// userHZ is the unit of /proc/stat's times: 100 a second on every Linux
// architecture (USER_HZ, whatever the kernel's HZ).
const userHZ = 100

// procStatCPU is the busy time of /proc/stat's "cpu" line (user, nice,
// system, irq, softirq, steal; not idle and iowait), in nanoseconds.
func procStatCPU(b []byte) (uint64, error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, errors.New(`no "cpu" line of at least 8 times`)
	}
	var busy uint64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf(`"cpu" line: %w`, err)
		}
		busy += v
	}
	return busy * uint64(time.Second/userHZ), nil
}

// meminfoWorkingSet is MemTotal - MemFree - Inactive(file), in bytes.
func meminfoWorkingSet(b []byte) (uint64, error) {
	kib := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 {
			if v, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				kib[strings.TrimSuffix(f[0], ":")] = v
			}
		}
	}
	total, ok1 := kib["MemTotal"]
	free, ok2 := kib["MemFree"]
	if !ok1 || !ok2 {
		return 0, errors.New("no MemTotal or MemFree")
	}
	used := total - min(free, total)
	return (used - min(kib["Inactive(file)"], used)) << 10, nil
}
