package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeKubeconfig writes a kubeconfig for the shared server as kind would
// write one (preferences, extensions), with ctxName its current context
// in namespace ns.
func writeKubeconfig(t *testing.T, path, addr, ctxName, ns string) {
	t.Helper()
	src := `apiVersion: v1
kind: Config
preferences: {}
clusters:
- name: ` + ctxName + `
  cluster:
    server: ` + addr + `
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {audience: skiff}
contexts:
- name: ` + ctxName + `
  context:
    cluster: ` + ctxName + `
    user: ` + ctxName + `
    namespace: ` + ns + `
current-context: ` + ctxName + `
users:
- name: ` + ctxName + `
  user: {}
`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestKubeconfigFlag(t *testing.T) {
	c := newCLI(t)
	c.stdin = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-flag}\n"
	c.ok("apply", "-f", "-") // in the test's own namespace
	path := filepath.Join(t.TempDir(), "kind-config")
	writeKubeconfig(t, path, c.addr, "kind-skiff", c.ns)
	// ~/.skiff/config points at the same server, in another namespace: the
	// flag's file must win.
	writeKubeconfig(t, filepath.Join(c.home, ".skiff", "config"), c.addr, "home", c.ns+"-elsewhere")
	if got := c.ok("get", "configmaps", "-o", "name", "--kubeconfig", path); got != "configmap/from-flag\n" {
		t.Errorf("get with --kubeconfig: %q", got)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	if got := c.fails("get", "configmaps", "--kubeconfig", missing); !strings.Contains(got, missing) {
		t.Errorf("a missing --kubeconfig file: %q", got)
	}
}

// $KUBECONFIG's files are merged as kubectl merges them; config view
// shows the merge; a user with an exec plugin is warned about once.
func TestKubeconfigEnvMerged(t *testing.T) {
	c := newCLI(t)
	c.stdin = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-env}\n"
	c.ok("apply", "-f", "-")
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
	writeKubeconfig(t, first, c.addr, "kind-skiff", c.ns)
	// The second file also defines kind-skiff (shadowed: the first wins)
	// and a context whose user runs an exec plugin.
	if err := os.WriteFile(second, []byte(`apiVersion: v1
kind: Config
current-context: cloud
clusters:
- name: kind-skiff
  cluster: {server: 192.0.2.1:6443}
- name: cloud
  cluster: {server: `+c.addr+`, proxy-url: "http://proxy:3128"}
contexts:
- name: kind-skiff
  context: {cluster: cloud, namespace: shadowed}
- name: cloud
  context: {cluster: cloud, user: gke, namespace: `+c.ns+`}
users:
- name: gke
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: gke-gcloud-auth-plugin}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c.vars = map[string]string{"KUBECONFIG": filepath.Join(dir, "missing") + ":" + first + ":" + second}
	if got := c.ok("config", "current-context"); got != "kind-skiff\n" {
		t.Errorf("current-context from the first file that sets it: %q", got)
	}
	if got := c.ok("get", "configmaps", "-o", "name"); got != "configmap/from-env\n" {
		t.Errorf("get through $KUBECONFIG: %q", got)
	}
	r := c.run("get", "configmaps", "-o", "name", "--context", "cloud")
	if r.code != 0 || r.out != "configmap/from-env\n" {
		t.Errorf("get --context cloud: %d %q %q", r.code, r.out, r.err)
	}
	if want := "Warning: user \"gke\": skiffctl cannot use its exec (the credential plugin \"gke-gcloud-auth-plugin\"); connecting without it\n"; r.err != want {
		t.Errorf("stderr %q\nwant   %q", r.err, want)
	}
	golden(t, "config-view-merged", scrub(c, strings.ReplaceAll(c.ok("config", "view"), dir, "<dir>")))

	// A change goes to the file its entry came from.
	c.ok("config", "set-context", "cloud", "--namespace", "changed")
	if b := readFile(t, second); !strings.Contains(b, "namespace: changed") || !strings.Contains(b, "command: gke-gcloud-auth-plugin") {
		t.Errorf("set-context cloud did not change the second file as it should:\n%s", b)
	}
	c.ok("config", "use-context", "cloud")
	if b := readFile(t, first); !strings.Contains(b, "current-context: cloud") || !strings.Contains(b, "preferences: {}") {
		t.Errorf("use-context did not change the first file as it should:\n%s", b)
	}
}
