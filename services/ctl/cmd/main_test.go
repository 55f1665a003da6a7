package cmd

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the current output")

// epoch is the shared apiserver's clock: every object is created at it,
// and the CLI's clock is five minutes later, so ages are stable.
var epoch = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// shared is one apiserver for the tests that only read and write objects
// (each in its own namespace); tests that run controllers start their own.
var shared *apiservertest.Server

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "skiffctl-test-")
	if err != nil {
		panic(err)
	}
	shared, err = apiservertest.StartConfig(apiserver.Config{
		DataDir: dir, Listen: "127.0.0.1:0", EtcdUnsafeNoFsync: true, BookmarkInterval: time.Second,
		Now: func() time.Time { return epoch },
	})
	if err != nil {
		panic(err)
	}
	code := m.Run()
	shared.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cli runs skiffctl in-process against a server, in a namespace of its
// own, through a config file in a temporary home.
type cli struct {
	t     *testing.T
	addr  string
	home  string
	ns    string
	now   time.Time
	stdin string
	vars  map[string]string // environment variables
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// runs numbers the CLIs of this process, so that repeated runs
// (-count=N) on the shared server never meet each other's objects.
var runs atomic.Int32

// newCLI returns a CLI for t on the shared server, in a namespace of its
// own: <test>-<NNN>.
func newCLI(t *testing.T) *cli {
	ns := strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(ns) > 50 {
		ns = ns[len(ns)-50:]
	}
	ns = fmt.Sprintf("%s-%03d", ns, runs.Add(1)%1000)
	return newCLIFor(t, shared.Addr(), ns, epoch.Add(5*time.Minute))
}

func newCLIFor(t *testing.T, addr, ns string, now time.Time) *cli {
	c := &cli{t: t, addr: addr, home: t.TempDir(), ns: ns, now: now}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: test
clusters:
- name: test
  cluster:
    server: %s
users:
- name: tester
  user: {}
contexts:
- name: test
  context:
    cluster: test
    user: tester
    namespace: %s
`, addr, ns)
	if err := os.MkdirAll(filepath.Join(c.home, ".skiff"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.home, ".skiff", "config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

type result struct {
	out, err string
	code     int
}

func (c *cli) env(out, errw *bytes.Buffer) Env {
	return Env{In: strings.NewReader(c.stdin), Out: out, Err: errw, Home: c.home,
		Getenv: func(k string) string { return c.vars[k] }, Now: func() time.Time { return c.now }}
}

// run runs one command line to its end (at most a minute).
func (c *cli) run(args ...string) result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errw bytes.Buffer
	code := Execute(ctx, args, c.env(&out, &errw))
	c.stdin = ""
	return result{out: out.String(), err: errw.String(), code: code}
}

// ok runs a command that must succeed and returns its stdout.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	if r.code != 0 {
		c.t.Fatalf("skiffctl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.out, r.err)
	}
	return r.out
}

// fails runs a command that must fail and returns its stderr.
func (c *cli) fails(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	if r.code == 0 {
		c.t.Fatalf("skiffctl %s succeeded, want an error\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.out, r.err)
	}
	return r.err
}

// golden compares got with testdata/<name>.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// scrub replaces what changes from run to run (uids, resourceVersions,
// addresses) with placeholders.
func scrub(c *cli, s string) string {
	s = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`).ReplaceAllString(s, "<uid>")
	s = regexp.MustCompile(`(resourceVersion"?:\s*)"?[0-9]+"?`).ReplaceAllString(s, `${1}"<rv>"`)
	s = strings.ReplaceAll(s, c.addr, "<server>")
	s = strings.ReplaceAll(s, c.ns, "<ns>")
	return s
}

func manifestPath(name string) string { return filepath.Join("testdata", "manifests", name) }

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
