package kubeclients

import (
	"strings"
	"testing"
	"time"

	"skiff.dev/internal/await"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authz"
)

// TestKubectlAuth: real kubectl's auth can-i (access reviews), auth whoami
// (a SelfSubjectReview) and --as (impersonation) against the apiserver
// with RBAC on.
func TestKubectlAuth(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Authz = authz.Options{Modes: []string{authz.ModeRBAC}}
	}))
	admin := Kubeconfig(t, srv)
	bob := KubeconfigAs(t, srv, "bob", "devs")
	run := func(kc string, args ...string) string {
		t.Helper()
		out, stderr, err := Kubectl(t, kc, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr)
		}
		return out
	}

	run(admin, "create", "role", "deployer", "-n", "default", "--verb=create,get", "--resource=deployments.apps")
	run(admin, "create", "rolebinding", "bob-deploys", "-n", "default", "--role=deployer", "--user=bob")

	// can-i: yes once the authorizer has seen the binding (its informers
	// follow the write), and no for what the Role does not grant.
	var s await.Signal
	s.Until(t, 20*time.Second, "bob can create deployments", t.Context().Done(), func() (bool, string) {
		out, stderr, _ := Kubectl(t, bob, "auth", "can-i", "create", "deployments", "-n", "default")
		return strings.TrimSpace(out) == "yes", out + stderr
	})
	out, stderr, err := Kubectl(t, bob, "auth", "can-i", "delete", "deployments", "-n", "default")
	if err == nil || strings.TrimSpace(out) != "no" {
		t.Errorf("can-i delete deployments: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	out, stderr, err = Kubectl(t, bob, "auth", "can-i", "create", "deployments", "-n", "kube-system")
	if err == nil || strings.TrimSpace(out) != "no" {
		t.Errorf("can-i create deployments in kube-system: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	if out := run(bob, "auth", "can-i", "--list", "-n", "default"); !strings.Contains(out, "deployments.apps") || !strings.Contains(out, "selfsubjectaccessreviews.authorization.k8s.io") {
		t.Errorf("can-i --list:\n%s", out)
	}

	out = run(bob, "auth", "whoami")
	if !strings.Contains(out, "bob") || !strings.Contains(out, "devs") || !strings.Contains(out, "system:authenticated") {
		t.Errorf("auth whoami:\n%s", out)
	}

	// --as: the administrator acts as bob, whom RBAC refuses pods; bob may
	// not act as anyone.
	out, stderr, err = Kubectl(t, admin, "--as=bob", "get", "pods")
	if err == nil || !strings.Contains(stderr, `User "bob" cannot list resource "pods"`) {
		t.Errorf("--as=bob get pods: want refused for bob, got %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	if out := run(admin, "--as=bob", "auth", "whoami"); !strings.Contains(out, "bob") {
		t.Errorf("--as=bob auth whoami:\n%s", out)
	}
	out, stderr, err = Kubectl(t, bob, "--as=alice", "get", "pods")
	if err == nil || !strings.Contains(stderr, `User "bob" cannot impersonate resource "users"`) {
		t.Errorf("bob --as=alice: want refused, got %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
}
