package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
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

	// exec, port-forward and logs -f, as kubectl speaks them (WebSocket,
	// SPDY tunnelled in a WebSocket, a chunked follow).
	pod := strings.TrimSpace(run(kubectl, "get", "pods", "-n", ns, "-l", selector, "-o", "jsonpath={.items[0].metadata.name}"))
	if out := run(kubectl, "exec", "-n", ns, pod, "--", "/demo", "echo", "from-exec"); out != "from-exec\n" {
		t.Errorf("kubectl exec: %q", out)
	}
	start := func(args ...string) <-chan string {
		t.Helper()
		cmd := exec.Command(kubectl, args...)
		cmd.Env = []string{"KUBECONFIG=" + kubeconfig, "HOME=" + home}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		lines := make(chan string, 1024)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		return lines
	}
	await := func(what string, lines <-chan string, match func(string) bool) string {
		t.Helper()
		deadline := time.After(time.Minute)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("kubectl %s ended before a line matched", what)
				}
				if match(l) {
					return l
				}
			case <-deadline:
				t.Fatalf("kubectl %s: no matching line within a minute", what)
			}
		}
	}
	// "Forwarding from 127.0.0.1:PORT -> 8080"
	fwd := await("port-forward", start("port-forward", "-n", ns, "pod/"+pod, ":8080"), func(l string) bool {
		return strings.HasPrefix(l, "Forwarding from 127.0.0.1:")
	})
	local := strings.Fields(strings.TrimPrefix(fwd, "Forwarding from "))[0]
	logs := start("logs", "-f", "-n", ns, pod)
	await("logs -f", logs, func(l string) bool { return strings.Contains(l, "listening on") })
	resp, err := http.Get("http://" + local + "/?via=port-forward")
	if err != nil {
		t.Fatalf("GET through kubectl port-forward: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), pod) {
		t.Errorf("GET through kubectl port-forward: %s %q", resp.Status, body)
	}
	// The request's log line reaches the follower.
	await("logs -f", logs, func(l string) bool { return strings.Contains(l, "GET /?via=port-forward 200") })

	chart := filepath.Join(home, "web")
	run(helm, "create", chart)
	out := run(helm, "install", "web", chart, "-n", ns, "--wait", "--timeout", "3m",
		"--set", "image.repository=skiff.local/demo,image.tag=v1,service.port=8080")
	if !strings.Contains(out, "STATUS: deployed") {
		t.Fatalf("helm install:\n%s", out)
	}
	run(helm, "uninstall", "web", "-n", ns, "--wait")
}
