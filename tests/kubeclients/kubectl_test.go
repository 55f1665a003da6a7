package kubeclients

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"skiff.dev/services/apiserver/apiservertest"
)

// TestKubectlSession drives kubectl through what a user does first with a
// cluster, against the apiserver alone (no controllers: nothing that waits
// for pods to run): apply a directory, get in every output, label,
// annotate, scale, patch of each type, server-side apply with a conflict,
// explain, delete.
func TestKubectlSession(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.Secure())
	kc := Kubeconfig(t, srv)
	run := func(args ...string) string {
		t.Helper()
		out, stderr, err := Kubectl(t, kc, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr)
		}
		return out
	}
	fails := func(want string, args ...string) {
		t.Helper()
		out, stderr, err := Kubectl(t, kc, args...)
		if err == nil || !strings.Contains(stderr, want) {
			t.Fatalf("kubectl %s: want a failure saying %q, got err %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), want, err, out, stderr)
		}
	}

	out := run("apply", "-f", "testdata/app")
	for _, want := range []string{"configmap/web-config created", "deployment.apps/web created"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply: %q, want %q", out, want)
		}
	}
	if out := run("apply", "-f", "testdata/app"); !strings.Contains(out, "deployment.apps/web unchanged") {
		t.Errorf("second apply: %q", out)
	}

	// The server's Table, printed by kubectl.
	out = run("get", "deployments")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[0], "READY") || !strings.HasPrefix(lines[1], "web ") {
		t.Errorf("get deployments:\n%s", out)
	}
	if out := run("get", "deployments", "-o", "wide"); !strings.Contains(out, "CONTAINERS") || !strings.Contains(out, "skiff.dev/demo:latest") {
		t.Errorf("get -o wide:\n%s", out)
	}
	var d struct {
		Metadata struct {
			Annotations map[string]string
		}
		Spec struct{ Replicas int }
	}
	if err := json.Unmarshal([]byte(run("get", "deployment", "web", "-o", "json")), &d); err != nil || d.Spec.Replicas != 2 {
		t.Errorf("get -o json: %+v %v", d, err)
	}
	if _, ok := d.Metadata.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; !ok {
		t.Errorf("client-side apply left no last-applied-configuration: %v", d.Metadata.Annotations)
	}
	if out := run("get", "deployment", "web", "-o", "yaml"); !strings.Contains(out, "replicas: 2") {
		t.Errorf("get -o yaml:\n%s", out)
	}
	if out := run("get", "configmap", "web-config", "-o", "jsonpath={.data.greeting}"); out != "hello" {
		t.Errorf("get -o jsonpath: %q", out)
	}

	run("label", "deployment", "web", "tier=front")
	run("annotate", "deployment", "web", "owner=team-a")
	if out := run("get", "deployments", "-l", "tier=front", "-o", "name"); strings.TrimSpace(out) != "deployment.apps/web" {
		t.Errorf("get -l tier=front: %q", out)
	}
	run("scale", "deployment", "web", "--replicas=3")
	run("patch", "deployment", "web", "--type=merge", "-p", `{"metadata":{"labels":{"patched":"merge"}}}`)
	run("patch", "deployment", "web", "--type=json", "-p", `[{"op":"add","path":"/metadata/labels/json","value":"yes"}]`)
	run("patch", "deployment", "web", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"skiff.dev/demo:v2"}]}}}}`)
	if err := json.Unmarshal([]byte(run("get", "deployment", "web", "-o", "json")), &d); err != nil || d.Spec.Replicas != 3 {
		t.Errorf("after scale: %+v %v", d, err)
	}
	if out := run("get", "deployment", "web", "-o", "jsonpath={.metadata.labels.patched} {.metadata.labels.json} {.spec.template.spec.containers[0].image}"); out != "merge yes skiff.dev/demo:v2" {
		t.Errorf("after the patches: %q", out)
	}

	// Server-side apply: another manager's field is a conflict, --force-conflicts takes it.
	run("apply", "--server-side", "--field-manager=ops", "-f", "testdata/app/configmap.yaml")
	changed := t.TempDir() + "/cm.yaml"
	writeFile(t, changed, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  greeting: bonjour\n")
	fails("conflict", "apply", "--server-side", "--field-manager=dev", "-f", changed)
	run("apply", "--server-side", "--field-manager=dev", "--force-conflicts", "-f", changed)
	if out := run("get", "configmap", "web-config", "-o", "jsonpath={.data.greeting}"); out != "bonjour" {
		t.Errorf("after the forced apply: %q", out)
	}

	// diff: a server-side dry run of the apply, compared.
	writeFile(t, changed, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  greeting: hola\n")
	out, stderr, err := Kubectl(t, kc, "diff", "-f", changed)
	if err == nil || !strings.Contains(out, "-  greeting: bonjour") || !strings.Contains(out, "+  greeting: hola") {
		t.Errorf("kubectl diff: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	if got := run("get", "configmap", "web-config", "-o", "jsonpath={.data.greeting}"); got != "bonjour" {
		t.Errorf("kubectl diff changed the object: %q", got)
	}

	// A CertificateSigningRequest: the server's table, and kubectl
	// certificate approve through the approval subresource.
	run("create", "-f", "../conformance/testdata/certificates.k8s.io.v1.CertificateSigningRequest.yaml")
	if out := run("get", "csr"); !strings.Contains(out, "SIGNERNAME") || !strings.Contains(out, "REQUESTOR") || !strings.Contains(out, "Pending") {
		t.Errorf("get csr:\n%s", out)
	}
	if out := run("certificate", "approve", "example-jane"); !strings.Contains(out, "certificatesigningrequest.certificates.k8s.io/example-jane approved") {
		t.Errorf("certificate approve: %q", out)
	}
	if out := run("get", "csr", "example-jane", "-o", "jsonpath={.status.conditions[0].type} {.status.conditions[0].reason}"); out != "Approved KubectlApprove" {
		t.Errorf("after certificate approve: %q", out)
	}

	if out := run("explain", "deployment.spec.replicas"); !strings.Contains(out, "replicas") {
		t.Errorf("explain:\n%s", out)
	}
	fails("NotFound", "get", "deployment", "nosuch")
	run("delete", "-f", "testdata/app")
	if out := run("get", "deployments,configmaps", "-o", "name"); strings.TrimSpace(out) != "configmap/kube-root-ca.crt" && strings.TrimSpace(out) != "" {
		t.Errorf("left after delete:\n%s", out)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
