package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/app"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/simnode"
)

// startCluster starts an apiserver (real clock), the real controller
// manager (deployment, replicaset and garbage collector controllers, as
// the skiff-controller-manager program runs them) and a simulated node
// that makes the pods it accepts Running and Ready.
func startCluster(t *testing.T, accept func(*corev1.Pod) bool) *managertest.Env {
	t.Helper()
	env := managertest.Start(t)
	env.SimNode(simnode.Options{Accept: accept})
	env.StartInformers()
	o, err := app.ParseFlags([]string{"--server", env.Server.Addr(), "--insecure", "--metrics-listen", "", "--leader-elect=false",
		"--controllers", "replicaset,deployment,garbagecollector"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, o, zap.NewNop(), nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller-manager: %v", err)
		}
	})
	return env
}

func imageOf(t *testing.T, env *managertest.Env, name string) string {
	t.Helper()
	d, err := client.Deployments(env.Conn).Get(context.Background(), "default", name)
	if err != nil {
		t.Fatal(err)
	}
	return d.GetSpec().GetTemplate().GetSpec().GetContainers()[0].GetImage()
}

func TestRollout(t *testing.T) {
	env := startCluster(t, func(p *corev1.Pod) bool { return p.GetSpec().GetContainers()[0].GetImage() != "broken" })
	c := newCLIFor(t, env.Server.Addr(), "default", time.Now())
	c.ok("apply", "-f", manifestPath("nginx-deployment.yaml"))
	out := c.ok("rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
	if !strings.HasSuffix(out, "deployment \"nginx-deployment\" successfully rolled out\n") {
		t.Errorf("rollout status:\n%s", out)
	}

	// A new image: a second revision.
	c.stdin = strings.Replace(readFile(t, manifestPath("nginx-deployment.yaml")), "nginx:1.14.2", "nginx:1.16.1", 1)
	c.ok("apply", "-f", "-")
	c.ok("rollout", "status", "deployment", "nginx-deployment", "--timeout=60s")
	if got := c.ok("rollout", "history", "deployment/nginx-deployment"); got != "deployment.apps/nginx-deployment\nREVISION   CHANGE-CAUSE\n1          <none>\n2          <none>\n\n" {
		t.Errorf("history:\n%q", got)
	}
	if got := c.ok("rollout", "history", "deployment/nginx-deployment", "--revision=1"); !strings.Contains(got, "nginx:1.14.2") || !strings.Contains(got, "with revision #1") {
		t.Errorf("history --revision=1:\n%s", got)
	}

	// Undo: the previous template comes back, as revision 3.
	if got := c.ok("rollout", "undo", "deployment/nginx-deployment"); got != "deployment.apps/nginx-deployment rolled back\n" {
		t.Errorf("undo: %q", got)
	}
	c.ok("rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
	if img := imageOf(t, env, "nginx-deployment"); img != "nginx:1.14.2" {
		t.Errorf("image after undo: %s, want nginx:1.14.2", img)
	}
	if got := c.ok("rollout", "history", "deploy/nginx-deployment"); !strings.Contains(got, "\n2          <none>\n3          <none>\n") {
		t.Errorf("history after undo:\n%s", got)
	}
	if got := c.ok("rollout", "undo", "deployment/nginx-deployment", "--to-revision=3"); !strings.Contains(got, "skipped rollback (current template already matches revision 3)") {
		t.Errorf("undo to the current revision: %q", got)
	}
	if got := c.fails("rollout", "undo", "deployment/nginx-deployment", "--to-revision=42"); got != "error: unable to find specified revision 42 in history\n" {
		t.Errorf("undo to a missing revision: %q", got)
	}
	c.ok("rollout", "undo", "deployment/nginx-deployment", "--to-revision=2")
	c.ok("rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
	if img := imageOf(t, env, "nginx-deployment"); img != "nginx:1.16.1" {
		t.Errorf("image after undo --to-revision=2: %s", img)
	}

	// Restart: a new revision with the same image and a restartedAt annotation.
	c.now = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	if got := c.ok("rollout", "restart", "deployment/nginx-deployment"); got != "deployment.apps/nginx-deployment restarted\n" {
		t.Errorf("restart: %q", got)
	}
	c.ok("rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
	d, err := client.Deployments(env.Conn).Get(context.Background(), "default", "nginx-deployment")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.GetSpec().GetTemplate().GetMetadata().GetAnnotations()[restartedAtAnnotation]; got != "2024-05-01T12:00:00Z" {
		t.Errorf("restartedAt %q", got)
	}

	// Pause and resume.
	for _, step := range []struct{ args, want string }{
		{"pause", "deployment.apps/nginx-deployment paused\n"},
		{"pause", "deployment.apps/nginx-deployment already paused\n"},
		{"resume", "deployment.apps/nginx-deployment resumed\n"},
	} {
		if got := c.ok("rollout", step.args, "deployment/nginx-deployment"); got != step.want {
			t.Errorf("rollout %s: %q, want %q", step.args, got, step.want)
		}
	}

	// A rollout that cannot progress ends rollout status with an error.
	c.stdin = `apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck}
spec:
  replicas: 1
  progressDeadlineSeconds: 1
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec: {containers: [{name: c, image: broken}]}
`
	c.ok("apply", "-f", "-")
	r := c.run("rollout", "status", "deployment/stuck", "--timeout=60s")
	if r.code != 1 || r.err != "error: deployment \"stuck\" exceeded its progress deadline\n" {
		t.Errorf("rollout status of a stuck deployment: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}

	// Scale, then delete in the foreground, waiting for the pods to go first.
	c.ok("scale", "deployment/nginx-deployment", "--replicas=3")
	c.ok("rollout", "status", "deployment/nginx-deployment", "--timeout=60s")
	if got := c.ok("delete", "deployment", "nginx-deployment", "--cascade=foreground", "--timeout=60s"); got != "deployment.apps \"nginx-deployment\" deleted\n" {
		t.Errorf("delete: %q", got)
	}
	if _, err := client.Deployments(env.Conn).Get(context.Background(), "default", "nginx-deployment"); err == nil {
		t.Error("the deployment is still there after delete --wait")
	}
	pods, err := client.Pods(env.Conn).List(context.Background(), listOptions("default", "app=nginx", ""))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(pods.GetItems()); n != 0 {
		t.Errorf("%d pods left after a foreground delete", n)
	}
}
