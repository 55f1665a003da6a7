package kubeclients

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Paths are the built clients.
type Paths struct {
	Kubectl, Helm string
	// Kubernetes is the version kubectl is built at (v1.37.2 for
	// k8s.io/kubectl v0.37.2): what `kubectl version` says of the client.
	Kubernetes string
}

// built is the one build of a test process: every test shares it.
var built struct {
	once  sync.Once
	paths Paths
	err   error
}

// Tools returns the clients, building them first with `make tools`
// (a no-op when they are built from the current pins). When they cannot
// be built the test is skipped with the reason, or fails under CI=true,
// where a missing client must never pass as a skip.
func Tools(t testing.TB) Paths {
	t.Helper()
	built.once.Do(func() { built.paths, built.err = build(t) })
	if built.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("kubectl and helm: %v", built.err)
		}
		t.Skipf("kubectl and helm could not be built (CI=true makes this a failure): %v", built.err)
	}
	return built.paths
}

func build(t testing.TB) (Paths, error) {
	root, err := repoRoot()
	if err != nil {
		return Paths{}, err
	}
	kube, err := pinnedKubernetes(filepath.Join(root, "hack", "tools", "go.mod"))
	if err != nil {
		return Paths{}, err
	}
	// Bounded by go test's -timeout (a *testing.T's Deadline), so that the
	// build ends with the test rather than after it.
	ctx := context.Background()
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := dt.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, d)
			defer cancel()
		}
	}
	cmd := exec.CommandContext(ctx, "make", "-C", root, "tools")
	killGroup(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return Paths{}, fmt.Errorf("make tools: %w\n%s", err, lastLines(out, 20))
	}
	bin := filepath.Join(root, ".tools", "bin")
	return Paths{Kubectl: filepath.Join(bin, "kubectl"), Helm: filepath.Join(bin, "helm"), Kubernetes: kube}, nil
}

// killGroup makes cmd's cancellation end what it started too: make's go
// builds would otherwise outlive a test that gave up on them.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// repoRoot is the directory of go.work above the working directory (go
// test runs in the package's directory).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the working directory: run the tests inside the Skiff repository")
		}
		dir = parent
	}
}

// pinnedKubernetes is the Kubernetes version of the k8s.io/kubectl that
// hack/tools/go.mod requires: v0.X.Y is v1.X.Y.
func pinnedKubernetes(gomod string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "k8s.io/kubectl" && strings.HasPrefix(f[1], "v0.") {
			return "v1." + strings.TrimPrefix(f[1], "v0."), nil
		}
	}
	return "", fmt.Errorf("%s requires no k8s.io/kubectl v0.X.Y", gomod)
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
