package crienv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// ErrUnavailable wraps the reasons a real runtime cannot run on this
// machine (not root, packages missing and not installable). Start skips the
// test on it, or fails it under CI=true; any other error is a failure.
var ErrUnavailable = errors.New("crienv: real container runtime unavailable")

// CNIBinDir is where Debian's containernetworking-plugins puts the plugins.
const CNIBinDir = "/usr/lib/cni"

// requirement is one thing a private containerd needs, and the Debian
// package that provides it.
type requirement struct {
	what    string // a command name, or an absolute path
	pkg     string
	present func() bool
}

func requirements() []requirement {
	cmd := func(name, pkg string) requirement {
		return requirement{what: name, pkg: pkg, present: func() bool { _, err := exec.LookPath(name); return err == nil }}
	}
	file := func(path, pkg string) requirement {
		return requirement{what: path, pkg: pkg, present: func() bool { st, err := os.Stat(path); return err == nil && !st.IsDir() }}
	}
	return []requirement{
		cmd("containerd", "containerd"),
		cmd("containerd-shim-runc-v2", "containerd"),
		cmd("ctr", "containerd"),
		cmd("runc", "runc"),
		cmd("ip", "iproute2"),
		cmd("iptables", "iptables"),
		file(filepath.Join(CNIBinDir, "bridge"), "containernetworking-plugins"),
		file(filepath.Join(CNIBinDir, "host-local"), "containernetworking-plugins"),
		file(filepath.Join(CNIBinDir, "portmap"), "containernetworking-plugins"),
		file(filepath.Join(CNIBinDir, "loopback"), "containernetworking-plugins"),
	}
}

// missing lists the unmet requirements and the packages that provide them.
func missing() (what, pkgs []string) {
	seen := map[string]bool{}
	for _, r := range requirements() {
		if r.present() {
			continue
		}
		what = append(what, r.what)
		if !seen[r.pkg] {
			seen[r.pkg] = true
			pkgs = append(pkgs, r.pkg)
		}
	}
	sort.Strings(pkgs)
	return what, pkgs
}

// CheckPrerequisites returns nil when this machine can run a private
// containerd with CRI and bridge CNI. With install, missing packages are
// installed from Debian with apt-get (root only, serialized across
// processes). Unmet prerequisites are reported wrapped in ErrUnavailable,
// with the exact reason.
func CheckPrerequisites(ctx context.Context, install bool) error {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Errorf("%w: needs root to run containerd, create network namespaces and bridges (running as uid %d)", ErrUnavailable, uid)
	}
	what, pkgs := missing()
	if len(what) == 0 {
		return nil
	}
	if !install {
		return fmt.Errorf("%w: missing %s (install the Debian packages %s)", ErrUnavailable, strings.Join(what, ", "), strings.Join(pkgs, " "))
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("%w: missing %s and no apt-get to install the packages %s", ErrUnavailable, strings.Join(what, ", "), strings.Join(pkgs, " "))
	}
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return err
	}
	unlock, err := lockFile(filepath.Join(lockDir, "install.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	// Another process may have installed them while this one waited.
	if what, pkgs = missing(); len(what) == 0 {
		return nil
	}
	if err := aptInstall(ctx, pkgs); err != nil {
		return fmt.Errorf("%w: missing %s; %v", ErrUnavailable, strings.Join(what, ", "), err)
	}
	if what, _ = missing(); len(what) > 0 {
		return fmt.Errorf("%w: still missing %s after apt-get install %s", ErrUnavailable, strings.Join(what, ", "), strings.Join(pkgs, " "))
	}
	return nil
}

// aptInstall runs apt-get update and apt-get install -y pkgs, only the
// missing ones: installing Debian's containerd over Docker's containerd.io
// would conflict.
func aptInstall(ctx context.Context, pkgs []string) error {
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("apt-get %s: %v\n%s", strings.Join(args, " "), err, tail(out.String(), 20))
		}
		return nil
	}
	if err := run("-o", "DPkg::Lock::Timeout=120", "update"); err != nil {
		return err
	}
	return run(append([]string{"-o", "DPkg::Lock::Timeout=120", "install", "-y", "--no-install-recommends"}, pkgs...)...)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
