package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The CRI has no call to end an exec, and containerd's streaming server
// lets an exec run on when its connection goes (as the kubelet does: a
// known Kubernetes gap). The agent closes it: when a client cancels an
// exec stream, the agent kills the processes of that container that run
// the exec's command line and started after the exec began, with their
// descendants, unless another live exec of the same command in the same
// container could own them (then it leaves them: killing a stranger's
// command is worse than leaving one). The agent must see the runtime's
// processes (the host's pid namespace, as the kubelet does).

// execKey is a container and a command line (NUL-separated, as
// /proc/PID/cmdline).
type execKey struct{ container, cmdline string }

// execRegistry counts the live exec streams by execKey.
type execRegistry struct {
	mu   sync.Mutex
	live map[execKey]int
}

func (r *execRegistry) add(k execKey) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live == nil {
		r.live = map[execKey]int{}
	}
	r.live[k]++
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.live[k]--; r.live[k] <= 0 {
			delete(r.live, k)
		}
	}
}

func (r *execRegistry) others(k execKey) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live[k] - 1
}

var execs execRegistry

func cmdlineOf(cmd []string) string { return strings.Join(cmd, "\x00") + "\x00" }

// reapExec kills what a cancelled exec left running (see above); it
// returns how many processes it signalled.
func (a *Agent) reapExec(containerID string, cmd []string, since time.Time) int {
	k := execKey{containerID, cmdlineOf(cmd)}
	if execs.others(k) > 0 {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	initPID, err := a.rt.ContainerPID(ctx, containerID)
	if err != nil || initPID <= 0 {
		return 0
	}
	procs := hostProcesses()
	ns, err := os.Readlink("/proc/" + strconv.Itoa(initPID) + "/ns/pid")
	if err != nil {
		return 0
	}
	boot := bootTime()
	var roots []int
	for _, p := range procs {
		if p.pid == initPID || p.cmdline != k.cmdline {
			continue
		}
		// btime is in whole seconds: a start may read up to 1 s early.
		if boot.Add(p.started).Before(since.Add(-1100 * time.Millisecond)) {
			continue
		}
		if l, err := os.Readlink("/proc/" + strconv.Itoa(p.pid) + "/ns/pid"); err != nil || l != ns {
			continue
		}
		roots = append(roots, p.pid)
	}
	kill := map[int]bool{}
	for _, r := range roots {
		kill[r] = true
	}
	// Descendants, to a fixed point.
	for changed := true; changed; {
		changed = false
		for _, p := range procs {
			if !kill[p.pid] && kill[p.ppid] {
				kill[p.pid], changed = true, true
			}
		}
	}
	for pid := range kill {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(kill)
}

type hostProcess struct {
	pid, ppid int
	started   time.Duration // since boot
	cmdline   string
}

// hostProcesses reads /proc: each process's parent, start and command line.
func hostProcesses() []hostProcess {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	out := make([]hostProcess, 0, len(dirs))
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ... starttime(22nd)": comm may hold spaces.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 20 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		ticks, _ := strconv.ParseInt(f[19], 10, 64)
		cmdline, _ := os.ReadFile(d + "/cmdline")
		out = append(out, hostProcess{pid: pid, ppid: ppid, started: time.Duration(ticks) * time.Second / 100, cmdline: string(cmdline)})
	}
	return out
}

// bootTime is the host's boot time (/proc/stat btime).
func bootTime() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			s, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Unix(s, 0)
		}
	}
	return time.Time{}
}
