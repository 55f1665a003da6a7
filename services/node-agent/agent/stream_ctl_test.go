package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"skiff.dev/services/ctl/cmd"
)

// skiffctl's exec, cp and port-forward against the pod "web" of
// TestStreamsOnContainerd: the whole path from the command line to the
// container.

// lockedBuffer is an output skiffctl writes while the test reads it.
type lockedBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	more chan struct{}
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.more <- struct{}{}:
	default:
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type ctlRun struct {
	out, err string
	code     int
}

// skiffctl runs one command line against e's apiserver (namespace
// default), with stdin.
func skiffctl(ctx context.Context, t *testing.T, e *env, stdin io.Reader, out, errw io.Writer, args ...string) int {
	t.Helper()
	home := t.TempDir()
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: test
clusters: [{name: test, cluster: {server: %q}}]
users: [{name: tester, user: {}}]
contexts: [{name: test, context: {cluster: test, user: tester, namespace: default}}]
`, e.api.Addr())
	if err := os.MkdirAll(filepath.Join(home, ".skiff"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".skiff", "config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	return cmd.Execute(ctx, args, cmd.Env{In: stdin, Out: out, Err: errw, Home: home,
		Getenv: func(string) string { return "" }, Now: time.Now})
}

func runCtl(ctx context.Context, t *testing.T, e *env, stdin string, args ...string) ctlRun {
	t.Helper()
	var out, errw bytes.Buffer
	code := skiffctl(ctx, t, e, strings.NewReader(stdin), &out, &errw, args...)
	return ctlRun{out.String(), errw.String(), code}
}

func fileSHA(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func skiffctlStory(t *testing.T, ctx context.Context, e *env) {
	t.Run("exec exits with the command's code", func(t *testing.T) {
		r := runCtl(ctx, t, e, "", "exec", "web", "--", "/demo", "exit", "3")
		if r.code != 3 || !strings.Contains(r.err, "command terminated with exit code 3") {
			t.Errorf("exec exit 3: code %d, stderr %q", r.code, r.err)
		}
		r = runCtl(ctx, t, e, "piped\nin\n", "exec", "-i", "web", "--", "/demo", "cat")
		if r.code != 0 || r.out != "piped\nin\n" {
			t.Errorf("exec -i cat: code %d, stdout %q, stderr %q", r.code, r.out, r.err)
		}
	})

	t.Run("cp of 100 MiB both ways", func(t *testing.T) {
		dir := t.TempDir()
		src := filepath.Join(dir, "big.bin")
		data := make([]byte, 100<<20)
		rng := rand.NewChaCha8([32]byte{4})
		rng.Read(data)
		if err := os.WriteFile(src, data, 0o644); err != nil {
			t.Fatal(err)
		}
		data = nil
		start := time.Now()
		if r := runCtl(ctx, t, e, "", "cp", src, "default/web:/tmp/big.bin"); r.code != 0 {
			t.Fatalf("cp to the pod: code %d, stderr %q", r.code, r.err)
		}
		up := time.Since(start)
		back := filepath.Join(dir, "back.bin")
		start = time.Now()
		if r := runCtl(ctx, t, e, "", "cp", "web:/tmp/big.bin", back, "-c", "app"); r.code != 0 {
			t.Fatalf("cp from the pod: code %d, stderr %q", r.code, r.err)
		}
		down := time.Since(start)
		if a, b := fileSHA(t, src), fileSHA(t, back); a != b {
			t.Errorf("sha256 after a round trip: %s, want %s", b, a)
		}
		t.Logf("cp 100 MiB: to the pod %v (%.0f MiB/s), from it %v (%.0f MiB/s)", up, 100/up.Seconds(), down, 100/down.Seconds())
	})

	t.Run("port-forward", func(t *testing.T) {
		pctx, pcancel := context.WithCancel(ctx)
		out := &lockedBuffer{more: make(chan struct{}, 1)}
		done := make(chan int, 1)
		go func() { done <- skiffctl(pctx, t, e, nil, out, io.Discard, "port-forward", "pod/web", ":8080") }()
		re := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) -> 8080`)
		var addr string
		deadline := time.After(patience)
		for addr == "" {
			if m := re.FindStringSubmatch(out.String()); m != nil {
				addr = m[1]
				break
			}
			select {
			case <-out.more:
			case code := <-done:
				pcancel()
				t.Fatalf("port-forward ended (%d): %q", code, out.String())
			case <-deadline:
				pcancel()
				t.Fatalf("port-forward did not listen: %q", out.String())
			}
		}
		code, body, err := get(ctx, "http://"+addr+"/")
		if err != nil || code != http.StatusOK || body != "demo v1 on web\n" {
			t.Errorf("GET through port-forward: %d %q %v", code, body, err)
		}
		pcancel()
		if c := <-done; c != 0 {
			t.Errorf("port-forward exit %d", c)
		}
	})
}
