package cmd

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestGetOutputs(t *testing.T) {
	c := newCLI(t)
	c.ok("apply", "-f", manifestPath("docs/01-configmap.yaml"), "-f", manifestPath("docs/07-configmap.json"), "-f", manifestPath("nginx-deployment.yaml"))
	var b strings.Builder
	for _, args := range [][]string{
		{"get", "configmaps"},
		{"get", "cm", "--show-labels"},
		{"get", "deploy", "-o", "wide"},
		{"get", "deployments.apps,configmaps"},
		{"get", "configmap/game-config", "deployment/nginx-deployment", "-o", "name"},
		{"get", "cm", "-l", "game=demo", "-o", "yaml"},
		{"get", "cm", "--field-selector", "metadata.name=special-config", "-o", "json"},
		{"get", "configmaps", "-A", "--field-selector", "metadata.namespace=" + c.ns},
	} {
		b.WriteString(scrub(c, "$ skiffctl "+strings.Join(args, " ")+"\n"+c.ok(args...)))
	}
	golden(t, "get-outputs", b.String())
}

// lineReader collects a command's stdout line by line.
type lineReader struct {
	lines chan string
}

func (l *lineReader) next(t *testing.T, what string, match func(string) bool) string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				t.Fatalf("output ended before %s", what)
			}
			if match(line) {
				return line
			}
		case <-deadline:
			t.Fatalf("no line with %s within 20s", what)
		}
	}
}

// start runs a long command (get -w) in the background; stop ends it.
func (c *cli) start(args ...string) (*lineReader, func() result) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	var errw strings.Builder
	done := make(chan int, 1)
	go func() {
		env := c.env(nil, nil)
		env.Out, env.Err = pw, &errw
		done <- Execute(ctx, args, env)
		pw.Close()
	}()
	l := &lineReader{lines: make(chan string, 100)}
	go func() {
		s := bufio.NewScanner(pr)
		for s.Scan() {
			l.lines <- s.Text()
		}
		close(l.lines)
	}()
	return l, func() result {
		cancel()
		code := <-done
		return result{err: errw.String(), code: code}
	}
}

func TestGetWatchStreamsChanges(t *testing.T) {
	c := newCLI(t)
	c.ok("apply", "-f", manifestPath("nginx-deployment.yaml"))
	lines, stop := c.start("get", "deployments", "-w", "--output-watch-events")
	lines.next(t, "the header", func(s string) bool { return strings.HasPrefix(s, "EVENT ") })
	lines.next(t, "the listed deployment", func(s string) bool {
		return strings.HasPrefix(s, "ADDED ") && strings.Contains(s, "nginx-deployment   0/2")
	})
	c.ok("scale", "deployment", "nginx-deployment", "--replicas=4")
	lines.next(t, "the change", func(s string) bool {
		return strings.HasPrefix(s, "MODIFIED ") && strings.Contains(s, "nginx-deployment   0/4")
	})
	c.ok("delete", "deployment", "nginx-deployment")
	lines.next(t, "the deletion", func(s string) bool { return strings.HasPrefix(s, "DELETED ") })
	if r := stop(); r.code != 0 {
		t.Errorf("get -w ended with %d: %s", r.code, r.err)
	}
}

func TestVerboseShowsCalls(t *testing.T) {
	c := newCLI(t)
	r := c.run("get", "configmaps", "--v=8")
	for _, want := range []string{"/skiff.discovery.v1.Discovery/Resources", "/skiff.core.v1.ConfigMaps/List OK in", `/skiff.core.v1.ConfigMaps/List request body: {"limit":500,"namespace":"` + c.ns + `"}`} {
		if !strings.Contains(r.err, want) {
			t.Errorf("--v=8 output lacks %q:\n%s", want, r.err)
		}
	}
	if r := c.run("get", "configmaps"); strings.Contains(r.err, "ConfigMaps/List") {
		t.Errorf("calls logged without --v: %s", r.err)
	}
}
