package kubeclients

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Timeout bounds one run of Kubectl or Helm. A client's request to the
// in-process apiserver answers in milliseconds; the margin is for a loaded
// CI machine and the race detector, not for waiting (a test that waits
// passes the client's own --timeout).
const Timeout = 2 * time.Minute

// Kubectl runs kubectl with args against the cluster of kubeconfig and
// returns what it wrote. err is non-nil when it exits with a non-zero code
// (an *exec.ExitError, wrapped) or runs past Timeout.
func Kubectl(t testing.TB, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return run(t, Tools(t).Kubectl, kubeconfig, args)
}

// Helm is Kubectl for helm.
func Helm(t testing.TB, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return run(t, Tools(t).Helm, kubeconfig, args)
}

func run(t testing.TB, bin, kubeconfig string, args []string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	defer cancel()
	cmd := Command(ctx, bin, kubeconfig, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	name := filepath.Base(bin) + " " + strings.Join(args, " ")
	switch {
	case ctx.Err() != nil:
		err = fmt.Errorf("%s: killed after %v: %w", name, Timeout, ctx.Err())
	case err != nil:
		err = fmt.Errorf("%s: %w", name, err)
	}
	return stdout.String(), stderr.String(), err
}

// Command is client bin with args against the cluster of kubeconfig,
// ended when ctx is: for a run that needs stdin (apply -f -), more
// environment (KUBE_EDITOR) or its output while it runs (get -w,
// logs -f). Bin is a path of Tools.
//
// Its environment is the kubeconfig (KUBECONFIG) and a HOME of its own
// (the kubeconfig's directory: kubectl's discovery cache and Helm's
// repositories and cache live there), PATH and TMPDIR; nothing else of
// the test's environment, so a developer's KUBECONFIG, kuberc or Helm
// settings never reach the tests.
func Command(ctx context.Context, bin, kubeconfig string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{
		"KUBECONFIG=" + kubeconfig,
		"HOME=" + filepath.Dir(kubeconfig),
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + os.TempDir(),
	}
	// A client killed at the deadline may have started a child (an
	// editor, a credential plugin) holding its output open.
	cmd.WaitDelay = time.Second
	return cmd
}
