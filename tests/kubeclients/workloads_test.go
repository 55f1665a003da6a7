package kubeclients

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/controller-manager/deployment"
	"skiff.dev/services/controller-manager/garbagecollector"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/replicaset"
	"skiff.dev/services/controller-manager/simnode"
)

// TestKubectlWorkloads drives kubectl through a Deployment's life with
// the controllers running (in-process, pods on a simulated node):
// rollout status, wait, describe, get -w, set image, rollout history and
// undo, edit with a scripted editor, delete --cascade=foreground.
func TestKubectlWorkloads(t *testing.T) {
	env := managertest.Start(t, apiservertest.Secure())
	env.SimNode(simnode.Options{})
	dc := deployment.New(env.Manager, deployment.Options{})
	rc := replicaset.New(env.Manager, replicaset.Options{})
	gc := garbagecollector.New(env.Manager, garbagecollector.Options{})
	env.StartInformers()
	env.GoErr(dc.Run)
	env.GoErr(rc.Run)
	env.GoErr(gc.Run)
	kc := Kubeconfig(t, env.Server)
	run := func(args ...string) string {
		t.Helper()
		out, stderr, err := Kubectl(t, kc, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr)
		}
		return out
	}

	// get -w from the start: the pods as they come.
	ctx, cancel := context.WithTimeout(env.Ctx, time.Minute)
	defer cancel()
	watch := Command(ctx, Tools(t).Kubectl, kc, "get", "pods", "-w")
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = watch.Wait() }()

	run("apply", "-f", "testdata/app/deployment.yaml")
	run("rollout", "status", "deployment/web", "--timeout=60s")
	run("wait", "--for=condition=Available", "deployment/web", "--timeout=60s")
	if out := run("describe", "deployment", "web"); !strings.Contains(out, "2 desired") || !strings.Contains(out, "skiff.dev/demo:latest") {
		t.Errorf("describe deployment:\n%s", out)
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "web-") && strings.Contains(lines.Text(), "Running") {
			break
		}
	}
	if lines.Err() != nil {
		t.Fatalf("get -w: %v", lines.Err())
	}

	run("set", "image", "deployment/web", "web=skiff.dev/demo:v2")
	run("rollout", "status", "deployment/web", "--timeout=60s")
	if out := run("rollout", "history", "deployment/web"); !strings.Contains(out, "1 ") || !strings.Contains(out, "2 ") {
		t.Errorf("rollout history:\n%s", out)
	}
	run("rollout", "undo", "deployment/web")
	run("rollout", "status", "deployment/web", "--timeout=60s")
	if out := run("get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); out != "skiff.dev/demo:latest" {
		t.Errorf("image after the undo: %q", out)
	}

	edit := Command(ctx, Tools(t).Kubectl, kc, "edit", "deployment", "web")
	edit.Env = append(edit.Env, "KUBE_EDITOR=sed -i s/replicas:\\ 2/replicas:\\ 3/")
	if out, err := edit.CombinedOutput(); err != nil {
		t.Fatalf("kubectl edit: %v\n%s", err, out)
	}
	run("rollout", "status", "deployment/web", "--timeout=60s")
	if out := run("get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}"); out != "3" {
		t.Errorf("ready replicas after the edit: %q", out)
	}

	run("delete", "deployment", "web", "--cascade=foreground", "--timeout=60s")
	if out := run("get", "deployments,replicasets,pods", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("left after a foreground delete:\n%s", out)
	}
}
