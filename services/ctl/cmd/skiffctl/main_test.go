package main

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository's root, from this package's directory.
const root = "../../../.."

// xFlags are the "-X symbol=value" of an ldflags string, by symbol.
func xFlags(ldflags string) map[string]string {
	out := map[string]string{}
	f := strings.Fields(ldflags)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "-X" {
			sym, val, _ := strings.Cut(f[i+1], "=")
			out[sym] = val
		}
	}
	return out
}

// assignment is the value of the first line of file (under root) that
// matches re's first group.
func assignment(t *testing.T, file string, re *regexp.Regexp) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	m := re.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no line matches %s", file, re)
	}
	return string(m[1])
}

// TestVersionOfMakeBuild: skiffctl built with the ldflags of `make build`
// (and of scripts/compose.sh, which must set the same symbols) reports
// the version and commit they give it.
func TestVersionOfMakeBuild(t *testing.T) {
	makeFlags := assignment(t, "Makefile", regexp.MustCompile(`(?m)^LDFLAGS := (.*)$`))
	composeFlags := assignment(t, "scripts/compose.sh", regexp.MustCompile(`(?m)^LDFLAGS="(.*)"$`))
	mk, sh := xFlags(makeFlags), xFlags(composeFlags)
	if len(mk) == 0 || !slices.Equal(slices.Sorted(maps.Keys(mk)), slices.Sorted(maps.Keys(sh))) {
		t.Fatalf("the Makefile sets %v, scripts/compose.sh %v: want the same symbols", mk, sh)
	}
	ldflags := strings.NewReplacer("$(VERSION)", "v9.8.7-test", "$(COMMIT)", "0123abc").Replace(makeFlags)
	bin := filepath.Join(t.TempDir(), "skiffctl")
	if out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags %q: %v\n%s", ldflags, err, out)
	}
	out, err := exec.Command(bin, "version", "--client", "-o", "json").Output()
	if err != nil {
		t.Fatalf("skiffctl version: %v\n%s", err, out)
	}
	var v struct {
		ClientVersion struct{ GitVersion, GitCommit string }
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if v.ClientVersion.GitVersion != "v9.8.7-test" || v.ClientVersion.GitCommit != "0123abc" {
		t.Fatalf("built with -ldflags %q, skiffctl version says:\n%s", ldflags, out)
	}
}
