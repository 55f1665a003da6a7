package crienv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Close stops and removes every pod sandbox through the CRI, stops
// containerd, kills what it left (there should be nothing), unmounts and
// removes Dir, deletes the bridge and the FORWARD rule, and frees the slot.
// It is idempotent; the error lists whatever did not go cleanly.
func (e *Env) Close() error {
	e.closeOnce.Do(func() { e.closeErr = e.close() })
	return e.closeErr
}

func (e *Env) close() error {
	var errs []error
	if e.proc != nil && e.Runtime != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		if err := RemoveAllSandboxes(ctx, e.Runtime); err != nil {
			errs = append(errs, err)
		}
		cancel()
	}
	if e.Conn != nil {
		_ = e.Conn.Close()
	}
	if e.proc != nil {
		e.proc.stop(10 * time.Second)
	}
	if e.layout.dir != "" {
		leftovers, err := forceCleanup(e.layout)
		if len(leftovers) > 0 && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("crienv: leftovers after the CRI cleanup (now killed or removed): %s", strings.Join(leftovers, "; ")))
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if e.forwardRule {
		removeForwardRules(e.Bridge)
	}
	if e.slot != nil {
		if err := removeNetwork(e.slot); err != nil {
			errs = append(errs, err)
		}
		removeCNIResults(e.slot.network())
		if err := e.slot.release(); err != nil {
			errs = append(errs, fmt.Errorf("crienv: slot %d: %w", e.slot.n, err))
		}
	}
	return errors.Join(errs...)
}

// RemoveAllSandboxes stops and removes every pod sandbox of a CRI runtime,
// in parallel: the runtime releases their network namespaces and IP
// addresses and kills their containers.
func RemoveAllSandboxes(ctx context.Context, rt runtimeapi.RuntimeServiceClient) error {
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("crienv: listing pod sandboxes: %w", err)
	}
	errs := make([]error, len(list.GetItems()))
	var wg sync.WaitGroup
	for i, sb := range list.GetItems() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = removeSandbox(ctx, rt, sb.GetId())
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func removeSandbox(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id string) error {
	if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("crienv: StopPodSandbox %.12s: %w", id, err)
	}
	if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("crienv: RemovePodSandbox %.12s: %w", id, err)
	}
	return nil
}

// forceCleanup removes what a containerd under l may have left, once it
// has stopped (or died): its processes and shims, runc containers, mounts,
// then the directory. It returns what it found alive or mounted.
func forceCleanup(l layout) (leftovers []string, err error) {
	// containerd itself, if it outlived its parent, and the shims: they
	// name the config or the socket on their command line.
	for _, pid := range processesReferencing(l.config(), l.socket()) {
		if isContainerd(pid) {
			leftovers = append(leftovers, fmt.Sprintf("containerd pid %d", pid))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// The containers, through runc (its state is under the directory).
	nss, _ := os.ReadDir(l.runcRoot())
	for _, ns := range nss {
		root := filepath.Join(l.runcRoot(), ns.Name())
		ids, _ := os.ReadDir(root)
		for _, id := range ids {
			leftovers = append(leftovers, "runc container "+id.Name())
			out, rerr := exec.Command("runc", "--root", root, "delete", "--force", id.Name()).CombinedOutput()
			if rerr != nil {
				err = errors.Join(err, fmt.Errorf("crienv: runc delete --force %s: %v: %s", id.Name(), rerr, bytes.TrimSpace(out)))
			}
		}
	}
	// Shims still exiting after their last task went are not leftovers;
	// anything else naming the Env is.
	for _, pid := range processesReferencing(l.config(), l.socket()) {
		if !isShim(pid) {
			leftovers = append(leftovers, fmt.Sprintf("process %d (%s)", pid, cmdline(pid)))
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	mounts := mountsUnder(l.dir)
	for _, m := range mounts {
		if m != l.dir { // the Env's own tmpfs is expected
			leftovers = append(leftovers, "mount "+m)
		}
		if uerr := unmount(m); uerr != nil && !errors.Is(uerr, syscall.EINVAL) && !errors.Is(uerr, syscall.ENOENT) {
			err = errors.Join(err, fmt.Errorf("crienv: umount %s: %w", m, uerr))
		}
	}
	if rerr := os.RemoveAll(l.dir); rerr != nil {
		err = errors.Join(err, fmt.Errorf("crienv: %w", rerr))
	}
	return leftovers, err
}

// cleanStale cleans what the slot's previous owner left (it died without
// Close) and returns what it did, as warnings.
func cleanStale(sl *slot) []string {
	var warnings []string
	if st, err := os.Stat(sl.stale); err == nil && st.IsDir() && strings.Contains(filepath.Base(sl.stale), "skiff-crienv-") {
		leftovers, err := forceCleanup(layout{dir: sl.stale})
		w := fmt.Sprintf("slot %d: cleaned the leftovers of a previous Env in %s", sl.n, sl.stale)
		if len(leftovers) > 0 {
			w += ": " + strings.Join(leftovers, "; ")
		}
		if err != nil {
			w += fmt.Sprintf(" (errors: %v)", err)
		}
		warnings = append(warnings, w)
	}
	removeForwardRules(sl.bridge())
	if err := removeNetwork(sl); err != nil {
		warnings = append(warnings, err.Error())
	}
	removeCNIResults(sl.network())
	return warnings
}

// removeNetwork deletes the slot's bridge if it exists.
func removeNetwork(sl *slot) error {
	if _, err := net.InterfaceByName(sl.bridge()); err != nil {
		return nil
	}
	if out, err := exec.Command("ip", "link", "del", sl.bridge()).CombinedOutput(); err != nil {
		return fmt.Errorf("crienv: ip link del %s: %v: %s", sl.bridge(), err, bytes.TrimSpace(out))
	}
	return nil
}

// removeCNIResults deletes libcni's cached results of the network (CNI DEL
// removes them; a killed runtime does not).
func removeCNIResults(network string) {
	files, _ := filepath.Glob(filepath.Join("/var/lib/cni/results", network+"-*"))
	for _, f := range files {
		_ = os.Remove(f)
	}
}

// forwardComment marks the iptables rules crienv inserts.
const forwardComment = "skiff-crienv"

// addForwardRule lets pods of the bridge talk to each other where bridged
// traffic goes through iptables (br_netfilter) and FORWARD may drop it
// (Docker sets its policy to DROP). It returns a warning, or "".
func (e *Env) addForwardRule() string {
	b, err := os.ReadFile("/proc/sys/net/bridge/bridge-nf-call-iptables")
	if err != nil || strings.TrimSpace(string(b)) != "1" {
		return ""
	}
	out, err := exec.Command("iptables", forwardRuleArgs("-I", e.Bridge)...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("pod-to-pod traffic may be dropped: iptables -I FORWARD: %v: %s", err, bytes.TrimSpace(out))
	}
	e.forwardRule = true
	return ""
}

func forwardRuleArgs(op, bridge string) []string {
	return []string{"-w", "5", op, "FORWARD", "-i", bridge, "-o", bridge, "-m", "comment", "--comment", forwardComment, "-j", "ACCEPT"}
}

// removeForwardRules deletes the bridge's FORWARD rules (all copies).
func removeForwardRules(bridge string) {
	if _, err := exec.LookPath("iptables"); err != nil {
		return
	}
	for i := 0; i < 10; i++ {
		if exec.Command("iptables", forwardRuleArgs("-D", bridge)...).Run() != nil {
			return
		}
	}
}

// processesReferencing lists the processes (other than this one) with one
// of args on their command line.
func processesReferencing(args ...string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if a != "" && contains(args, a) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

func isShim(pid int) bool {
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return strings.HasPrefix(filepath.Base(exe), "containerd-shim")
}

func isContainerd(pid int) bool {
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return filepath.Base(exe) == "containerd"
}

// mountsUnder lists the mount points at or below dir, deepest first, from
// /proc/self/mountinfo.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func mount(source, target, fstype, data string) error {
	return syscall.Mount(source, target, fstype, 0, data)
}

// unmount detaches target (lazily, so a busy mount does not block Close).
func unmount(target string) error {
	return syscall.Unmount(target, syscall.MNT_DETACH)
}
