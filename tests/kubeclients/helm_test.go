package kubeclients

import (
	"path/filepath"
	"strings"
	"testing"

	"skiff.dev/services/apiserver/apiservertest"
)

// TestHelmLifecycle: the chart helm create makes, installed, upgraded,
// rolled back and uninstalled with real Helm 3 against the apiserver
// alone (no controllers, so no --wait).
func TestHelmLifecycle(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.Secure())
	kc := Kubeconfig(t, srv)
	run := func(args ...string) string {
		t.Helper()
		out, stderr, err := Helm(t, kc, args...)
		if err != nil {
			t.Fatalf("helm %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr)
		}
		return out
	}
	chart := filepath.Join(filepath.Dir(kc), "demo")
	run("create", chart)
	out := run("install", "demo", chart)
	if !strings.Contains(out, "STATUS: deployed") {
		t.Errorf("install:\n%s", out)
	}
	run("upgrade", "demo", chart, "--set", "replicaCount=2")
	kout, kerr, err := Kubectl(t, kc, "get", "deployment", "demo", "-o", "jsonpath={.spec.replicas}")
	if err != nil || kout != "2" {
		t.Errorf("replicas after the upgrade: %q %v %s", kout, err, kerr)
	}
	if out := run("history", "demo"); !strings.Contains(out, "Upgrade complete") {
		t.Errorf("history:\n%s", out)
	}
	run("rollback", "demo", "1")
	kout, _, _ = Kubectl(t, kc, "get", "deployment", "demo", "-o", "jsonpath={.spec.replicas}")
	if kout != "1" {
		t.Errorf("replicas after the rollback: %q", kout)
	}
	run("uninstall", "demo")
	if kout, _, _ := Kubectl(t, kc, "get", "deployments,services,serviceaccounts", "-l", "app.kubernetes.io/instance=demo", "-o", "name"); strings.TrimSpace(kout) != "" {
		t.Errorf("left after uninstall:\n%s", kout)
	}
}
