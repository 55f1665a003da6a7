package scenarios

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// buildProgram builds the main package pkg (e.g.
// "skiff.dev/services/apiserver/cmd/skiff-apiserver") into dir with the
// go command and returns the binary's path. Go's build cache makes a
// second build of unchanged code cheap.
func buildProgram(ctx context.Context, dir, pkg string) (string, error) {
	bin := filepath.Join(dir, path.Base(pkg))
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s (the go command is needed): %w\n%s", pkg, err, bytes.TrimSpace(out))
	}
	return bin, nil
}

// process is a Skiff program a scenario runs as a process of its own. Its
// stderr (zap JSON lines) is read as it comes, and the first line of each
// message ("apiserver serving", "became leader") is kept with the time it
// was read, for waitLog.
type process struct {
	cmd     *exec.Cmd
	addr    string // gRPC, of an apiserver
	metrics string // HTTP /metrics, of an apiserver
	logs    chan struct{}
	seen    moments
	mu      sync.Mutex
	head    strings.Builder // the first lines, for errors
}

// maxHead bounds the log lines a process keeps for its errors.
const maxHead = 16 << 10

// startProcess runs bin with args.
func startProcess(bin string, args ...string) (*process, error) {
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &process{cmd: cmd, logs: make(chan struct{})}
	go func() {
		defer close(p.logs)
		lines := bufio.NewScanner(stderr)
		lines.Buffer(nil, 1<<20)
		for lines.Scan() { // to the end: the process must never block on its stderr
			p.mu.Lock()
			if p.head.Len() < maxHead {
				p.head.WriteString(lines.Text() + "\n")
			}
			p.mu.Unlock()
			var entry struct{ Msg string }
			if json.Unmarshal(lines.Bytes(), &entry) == nil && entry.Msg != "" {
				p.seen.mark(entry.Msg, bytes.Clone(lines.Bytes()))
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	return p, nil
}

// waitLog waits until the process has logged msg, and returns when it was
// read and the line. It fails when the process exits first, when ctx ends
// or after timeout.
func (p *process) waitLog(ctx context.Context, msg string, timeout time.Duration) (time.Time, []byte, error) {
	at, line, err := p.seen.wait(ctx, msg, timeout, p.logs)
	if err != nil {
		if errors.Is(err, errGone) {
			err = errors.New("the process exited")
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return at, nil, fmt.Errorf("%s did not log %q: %w; its first lines:\n%s", p.cmd.Path, msg, err, p.head.String())
	}
	return at, line, nil
}

// stop ends the process (SIGTERM, then SIGKILL after 20 s) and waits.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.logs:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.logs
	}
	_ = p.cmd.Wait()
}

// kill ends the process with SIGKILL, as a crash would: it cleans
// nothing up. It waits for the process to be gone.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.logs
	_ = p.cmd.Wait()
}

// moments records when named things first happened (a log message, a
// count reached), for waiters.
type moments struct {
	mu      sync.Mutex
	at      map[string]moment
	changed chan struct{} // closed and replaced at every new name
}

type moment struct {
	at     time.Time
	detail []byte
}

// mark records name as happening now, unless it happened before.
func (m *moments) mark(name string, detail []byte) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.at[name]; ok {
		return
	}
	if m.at == nil {
		m.at = map[string]moment{}
	}
	m.at[name] = moment{at: now, detail: detail}
	if m.changed != nil {
		close(m.changed)
		m.changed = nil
	}
}

// errGone is wait's error when its source ended before the moment came.
var errGone = errors.New("ended first")

// wait returns when name first happened, waiting for it until ctx ends,
// timeout passes or gone is closed (nothing more will be marked).
func (m *moments) wait(ctx context.Context, name string, timeout time.Duration, gone <-chan struct{}) (time.Time, []byte, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		m.mu.Lock()
		got, ok := m.at[name]
		if m.changed == nil {
			m.changed = make(chan struct{})
		}
		changed := m.changed
		m.mu.Unlock()
		if ok {
			return got.at, got.detail, nil
		}
		select {
		case <-changed:
		case <-gone:
			// One last look: it may have been marked just before.
			m.mu.Lock()
			got, ok := m.at[name]
			m.mu.Unlock()
			if ok {
				return got.at, got.detail, nil
			}
			return time.Time{}, nil, errGone
		case <-ctx.Done():
			return time.Time{}, nil, ctx.Err()
		case <-deadline.C:
			return time.Time{}, nil, fmt.Errorf("not within %v", timeout)
		}
	}
}
