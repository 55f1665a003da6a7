package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"skiff.dev/internal/version"
)

func TestConfigCommands(t *testing.T) {
	c := newCLI(t)
	path := filepath.Join(t.TempDir(), "config")
	cfg := func(args ...string) string { return c.ok(append(args, "--skiffconfig", path)...) }
	var b strings.Builder
	for _, args := range [][]string{
		{"config", "set-cluster", "prod", "--server", "10.0.0.1:6443", "--certificate-authority", "/etc/skiff/ca.crt"},
		{"config", "set-cluster", "local", "--server", c.addr},
		{"config", "set-credentials", "admin", "--token", "s3cret"},
		{"config", "set-context", "prod", "--cluster", "prod", "--user", "admin", "--namespace", "web"},
		{"config", "set-context", "local", "--cluster", "local", "--namespace", c.ns},
		{"config", "use-context", "prod"},
		{"config", "set-context", "--current", "--namespace", "api"},
		{"config", "get-contexts"},
		{"config", "current-context"},
		{"config", "view"},
		{"config", "view", "--raw", "--minify"},
	} {
		b.WriteString(scrub(c, "$ skiffctl "+strings.Join(args, " ")+"\n"+cfg(args...)))
	}
	golden(t, "config", b.String())
	if got := c.fails("config", "use-context", "nope", "--skiffconfig", path); got != "error: no context exists with the name: \"nope\"\n" {
		t.Errorf("use-context of a missing context: %q", got)
	}
	// The context's namespace and server are used; flags override them.
	cfg("config", "use-context", "local")
	c.stdin = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: via-config}\n"
	cfg("apply", "-f", "-")
	if got := cfg("get", "cm", "-o", "name"); got != "configmap/via-config\n" {
		t.Errorf("get in the context's namespace: %q", got)
	}
	if got := cfg("get", "cm", "-n", "elsewhere", "-o", "name"); got != "" {
		t.Errorf("get -n elsewhere: %q", got)
	}
	// $SKIFFCONFIG names the file too.
	c.vars = map[string]string{"SKIFFCONFIG": path}
	if got := c.ok("config", "current-context"); got != "local\n" {
		t.Errorf("current-context through $SKIFFCONFIG: %q", got)
	}
}

func TestAPIResourcesAndVersion(t *testing.T) {
	c := newCLI(t)
	var b strings.Builder
	for _, args := range [][]string{
		{"api-resources"},
		{"api-resources", "--namespaced=false"},
		{"api-resources", "--api-group=apps", "-o", "wide"},
		{"api-versions"},
	} {
		b.WriteString("$ skiffctl " + strings.Join(args, " ") + "\n" + c.ok(args...))
	}
	golden(t, "api-resources", b.String())
	// The in-process server and skiffctl are the same build.
	build := version.Get().GitVersion
	v := c.ok("version")
	if want := "Client Version: " + build + "\nServer Version: " + build + "\n"; v != want {
		t.Errorf("version:\n%s\nwant:\n%s", v, want)
	}
	if v := c.ok("version", "--client", "--server", closedAddr(t)); strings.Contains(v, "Server") {
		t.Errorf("version --client asked the server: %s", v)
	}
	if v := c.ok("version", "-o", "json"); !strings.Contains(v, `"serverVersion": {`) || !strings.Contains(v, `"gitVersion": "`+build+`"`) {
		t.Errorf("version -o json:\n%s", v)
	}
}

func TestCompletion(t *testing.T) {
	c := newCLI(t)
	for _, shell := range []string{"bash", "zsh"} {
		if out := c.ok("completion", shell); !strings.Contains(out, "skiffctl") || len(out) < 1000 {
			t.Errorf("completion %s: %d bytes", shell, len(out))
		}
	}
	if out := c.ok("__complete", "get", ""); !strings.Contains(out, "deployments\n") || !strings.Contains(out, "pods\n") {
		t.Errorf("completing a resource type:\n%s", out)
	}
}

func TestLabelAnnotateCordon(t *testing.T) {
	c := newCLI(t)
	c.ok("apply", "-f", manifestPath("docs/01-configmap.yaml"), "-f", manifestPath("docs/07-configmap.json"))
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"label", "cm", "special-config", "tier=front", "team=a"}, "configmap/special-config labeled\n"},
		{[]string{"label", "cm", "special-config", "tier=front"}, "configmap/special-config not labeled\n"},
		{[]string{"label", "--overwrite", "cm/special-config", "tier=back", "team-"}, "configmap/special-config labeled\n"},
		{[]string{"label", "cm", "--list", "special-config"}, "tier=back\n"},
		{[]string{"label", "cm", "-l", "game=demo", "tier=front"}, "configmap/game-config labeled\n"},
		{[]string{"annotate", "cm", "--all", "owner=ops"}, "configmap/game-config annotated\nconfigmap/special-config annotated\n"},
		{[]string{"get", "cm", "-l", "tier in (front,back)", "-o", "name"}, "configmap/game-config\nconfigmap/special-config\n"},
	}
	for _, s := range steps {
		if got := c.ok(s.args...); got != s.want {
			t.Errorf("skiffctl %s: %q, want %q", strings.Join(s.args, " "), got, s.want)
		}
	}
	node := c.ns + "-node"
	c.stdin = "apiVersion: v1\nkind: Node\nmetadata: {name: " + node + "}\n"
	c.ok("apply", "-f", "-")
	for _, s := range []struct{ cmd, want string }{
		{"cordon", "node/" + node + " cordoned\n"},
		{"cordon", "node/" + node + " already cordoned\n"},
		{"uncordon", "node/" + node + " uncordoned\n"},
		{"uncordon", "node/" + node + " already uncordoned\n"},
	} {
		if got := c.ok(s.cmd, node); got != s.want {
			t.Errorf("%s: %q, want %q", s.cmd, got, s.want)
		}
	}
	c.ok("cordon", node)
	if got := c.ok("get", "node", node, "--no-headers"); !strings.Contains(got, "SchedulingDisabled") {
		t.Errorf("a cordoned node: %q", got)
	}
}
