package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKubeClients: kubectl and Helm, as a user has them (built by make
// tools), through the kubeconfig make up writes, with nothing else set up:
// the nodes, a Deployment rolled out, a chart installed and waited for.
func TestKubeClients(t *testing.T) {
	c := newCluster(t)
	kubectl, helm, kubeconfig := os.Getenv("SKIFF_E2E_KUBECTL"), os.Getenv("SKIFF_E2E_HELM"), os.Getenv("SKIFFCONFIG")
	if kubectl == "" || helm == "" || kubeconfig == "" {
		t.Fatal("SKIFF_E2E_KUBECTL, SKIFF_E2E_HELM and SKIFFCONFIG are set by scripts/compose.sh e2e")
	}
	home := t.TempDir()
	run := func(bin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"KUBECONFIG=" + kubeconfig, "HOME=" + home, "PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	const ns = "kubeclients"
	if out := run(kubectl, "get", "nodes"); !strings.Contains(out, " Ready ") {
		t.Fatalf("kubectl get nodes:\n%s", out)
	}
	run(kubectl, "create", "namespace", ns)
	t.Cleanup(func() { _, _ = c.tryCtl("delete", "namespace", ns, "--wait=false") })
	manifestFile := filepath.Join(home, "deployment.yaml")
	if err := os.WriteFile(manifestFile, []byte(manifest(2, demoV1)), 0o644); err != nil {
		t.Fatal(err)
	}
	run(kubectl, "apply", "-n", ns, "-f", manifestFile)
	run(kubectl, "rollout", "status", "-n", ns, "deployment/"+deployment, "--timeout=3m")
	c.eventually("kubectl to list 2 running pods", time.Minute, func() error {
		cmd := exec.Command(kubectl, "get", "pods", "-n", ns, "-l", selector, "--field-selector=status.phase=Running", "-o", "name")
		cmd.Env = []string{"KUBECONFIG=" + kubeconfig, "HOME=" + home}
		out, err := cmd.Output()
		if err != nil {
			return err
		}
		if n := len(strings.Fields(string(out))); n != 2 {
			return fmt.Errorf("%d running pods: %s", n, out)
		}
		return nil
	})

	chart := filepath.Join(home, "web")
	run(helm, "create", chart)
	out := run(helm, "install", "web", chart, "-n", ns, "--wait", "--timeout", "3m",
		"--set", "image.repository=skiff.local/demo,image.tag=v1,service.port=8080")
	if !strings.Contains(out, "STATUS: deployed") {
		t.Fatalf("helm install:\n%s", out)
	}
	run(helm, "uninstall", "web", "-n", ns, "--wait")
}
