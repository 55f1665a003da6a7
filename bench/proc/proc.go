// Package proc runs Skiff's programs as processes of their own, for the
// benchmarks and the chaos suite: it builds a main package with the go
// command, starts the binary, reads its zap JSON log lines as they come
// (so that a caller can wait for "apiserver serving" or "became leader"),
// and stops, kills, pauses and resumes it. It owns no program's flags.
package proc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Build builds the main package pkg (e.g.
// "skiff.dev/services/apiserver/cmd/skiff-apiserver") into dir with the
// go command and returns the binary's path. Go's build cache makes a
// second build of unchanged code cheap.
func Build(ctx context.Context, dir, pkg string) (string, error) {
	bin := filepath.Join(dir, path.Base(pkg))
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s (the go command is needed): %w\n%s", pkg, err, bytes.TrimSpace(out))
	}
	return bin, nil
}

// Process is a program running as a process of its own. Its stderr (zap
// JSON lines) is read as it comes, and the first line of each message
// ("apiserver serving", "became leader") is kept with the time it was
// read, for WaitLog.
type Process struct {
	cmd  *exec.Cmd
	logs chan struct{} // closed when its stderr ended
	seen Moments
	mu   sync.Mutex
	head strings.Builder // the first lines, for errors
	tee  io.Writer       // every line, when set
}

// maxHead bounds the log lines a process keeps for its errors.
const maxHead = 16 << 10

// Start runs bin with args. When logTo is not nil, every line the process
// writes to stderr is copied to it.
func Start(logTo io.Writer, bin string, args ...string) (*Process, error) {
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &Process{cmd: cmd, logs: make(chan struct{}), tee: logTo}
	go p.read(stderr)
	return p, nil
}

func (p *Process) read(stderr io.Reader) {
	defer close(p.logs)
	lines := bufio.NewScanner(stderr)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() { // to the end: the process must never block on its stderr
		p.mu.Lock()
		if p.head.Len() < maxHead {
			p.head.WriteString(lines.Text() + "\n")
		}
		if p.tee != nil {
			fmt.Fprintln(p.tee, lines.Text())
		}
		p.mu.Unlock()
		var entry struct{ Msg string }
		if json.Unmarshal(lines.Bytes(), &entry) == nil && entry.Msg != "" {
			p.seen.Mark(entry.Msg, bytes.Clone(lines.Bytes()))
		}
	}
	_, _ = io.Copy(io.Discard, stderr)
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Path is the binary's path.
func (p *Process) Path() string { return p.cmd.Path }

// WaitLog waits until the process has logged msg, and returns when it was
// read and the line. It fails when the process exits first, when ctx ends
// or after timeout.
func (p *Process) WaitLog(ctx context.Context, msg string, timeout time.Duration) (time.Time, []byte, error) {
	at, line, err := p.seen.Wait(ctx, msg, timeout, p.logs)
	if err != nil {
		if errors.Is(err, ErrGone) {
			err = errors.New("the process exited")
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return at, nil, fmt.Errorf("%s did not log %q: %w; its first lines:\n%s", p.cmd.Path, msg, err, p.head.String())
	}
	return at, line, nil
}

// Stop ends the process (SIGTERM, then SIGKILL after 20 s) and waits.
func (p *Process) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a paused process cannot stop
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.logs:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.logs
	}
	_ = p.cmd.Wait()
}

// Kill ends the process with SIGKILL, as a crash would: it cleans nothing
// up. It waits for the process to be gone.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.logs
	_ = p.cmd.Wait()
}

// Pause stops the process with SIGSTOP, as a machine that hangs: its
// connections stay open, nothing is answered.
func (p *Process) Pause() error { return p.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (p *Process) Resume() error { return p.cmd.Process.Signal(syscall.SIGCONT) }

// Status reads a "<field>: <n> kB" line of /proc/<pid>/status (VmRSS,
// VmHWM...), in bytes.
func (p *Process) Status(field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return 0, fmt.Errorf("a process's memory (Linux /proc needed): %w", err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status %s: %w", p.Pid(), strings.TrimSpace(line), err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", p.Pid(), field)
}

// Moments records when named things first happened (a log message, a
// count reached), for waiters.
type Moments struct {
	mu      sync.Mutex
	at      map[string]moment
	changed chan struct{} // closed and replaced at every new name
}

type moment struct {
	at     time.Time
	detail []byte
}

// Mark records name as happening now, unless it happened before.
func (m *Moments) Mark(name string, detail []byte) {
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

// ErrGone is Wait's error when its source ended before the moment came.
var ErrGone = errors.New("ended first")

// Wait returns when name first happened, waiting for it until ctx ends,
// timeout passes or gone is closed (nothing more will be marked).
func (m *Moments) Wait(ctx context.Context, name string, timeout time.Duration, gone <-chan struct{}) (time.Time, []byte, error) {
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
			return time.Time{}, nil, ErrGone
		case <-ctx.Done():
			return time.Time{}, nil, ctx.Err()
		case <-deadline.C:
			return time.Time{}, nil, fmt.Errorf("not within %v", timeout)
		}
	}
}
