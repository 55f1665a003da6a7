package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGetJSONPathAndColumns runs kubectl's documented -o jsonpath,
// -o custom-columns and --sort-by examples against the shared server.
func TestGetJSONPathAndColumns(t *testing.T) {
	c := newCLI(t)
	c.ok("apply", "-f", manifestPath("docs/02-frontend.yaml"), "-f", manifestPath("docs/03-probes.yaml"),
		"-f", manifestPath("docs/01-configmap.yaml"), "-f", manifestPath("docs/07-configmap.json"),
		"-f", manifestPath("nginx-deployment.yaml"), "-f", manifestPath("docs/06-rolling-deployment.yaml"))
	c.ok("scale", "deployment", "nginx-deployment", "--replicas=10")
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "template")
	if err := os.WriteFile(tmpl, []byte(`{range .items[*]}{.metadata.name}{"\t"}{.spec.replicas}{"\n"}{end}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cols := filepath.Join(dir, "columns")
	if err := os.WriteFile(cols, []byte("NAME          REPLICAS\n.metadata.name   {.spec.replicas}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, args := range [][]string{
		{"get", "pods", "-o", "jsonpath={.items[*].metadata.name}"},
		{"get", "pod", "frontend", "-o", "jsonpath={.spec.containers[0].image}"},
		{"get", "pod", "frontend", "-o", "jsonpath={..image}"},
		{"get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.name}{"\t"}{.spec.containers[*].name}{"\n"}{end}`},
		{"get", "pods", "-o", `jsonpath={.items[?(@.metadata.name=="goproxy")].spec.containers[0].ports[0].containerPort}`},
		{"get", "pods", "-o", `jsonpath=names: {.items[0].metadata.name}, {.items[-1:].metadata.name}{"\n"}`},
		{"get", "pod", "goproxy", "-o", "jsonpath={.metadata.labels}"},
		{"get", "pod", "goproxy", "-o", "jsonpath={.metadata.nope}"},
		{"get", "deploy", "-o", "jsonpath-file=" + tmpl},
		{"get", "pods", "-o", "custom-columns=NAME:.metadata.name,IMAGES:.spec.containers[*].image,NODE:.spec.nodeName"},
		{"get", "deploy", "-o", "custom-columns=NAME:metadata.name,REPLICAS:{.spec.replicas}", "--no-headers"},
		{"get", "deploy", "-o", "custom-columns-file=" + cols},
		{"get", "pods", "--sort-by=.spec.containers[0].image"},
		{"get", "deploy", "--sort-by=.spec.replicas", "-o", "name"},
		{"get", "deploy", "--sort-by", "{.spec.replicas}", "-o", "jsonpath={.items[*].metadata.name}"},
		{"get", "configmaps", "--sort-by=.metadata.labels.game", "-o", "custom-columns=NAME:.metadata.name,GAME:.metadata.labels.game"},
		{"get", "pods", "--sort-by=.metadata.creationTimestamp", "-o", "name"},
	} {
		b.WriteString(strings.ReplaceAll(scrub(c, "$ skiffctl "+strings.Join(args, " ")+"\n"+c.ok(args...)+"\n"), dir, "<dir>"))
	}
	golden(t, "get-jsonpath", b.String())

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "pod", "goproxy", "-o", "jsonpath={.metadata.nope}", "--allow-missing-template-keys=false"},
			`error: error executing jsonpath "{.metadata.nope}": Error executing template: nope is not found.`},
		{[]string{"get", "pods", "-o", "jsonpath={.items[9].metadata.name}"},
			`error: error executing jsonpath "{.items[9].metadata.name}": Error executing template: array index out of bounds: index 9, length 3.`},
		{[]string{"get", "pods", "-o", "jsonpath={.items[*]"}, `error: error parsing jsonpath {.items[*], unclosed action`},
		{[]string{"get", "pods", "-o", "jsonpath="}, `error: template format specified but no template given`},
		{[]string{"get", "pods", "-o", "custom-columns=NAME"}, `error: unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>`},
		{[]string{"get", "pods", "--sort-by=.spec.nope"}, `error: couldn't find any field with path "{.spec.nope}" in the list of objects`},
		{[]string{"get", "pods", "-o", "jsonpath-file=" + filepath.Join(dir, "missing")}, "error: error reading --template " + filepath.Join(dir, "missing")},
	} {
		if got := c.fails(tc.args...); !strings.HasPrefix(got, tc.want) {
			t.Errorf("skiffctl %s:\n got %q\nwant %q...", strings.Join(tc.args, " "), got, tc.want)
		}
	}
}
