package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	nodev1 "skiff.dev/proto/node/v1"
)

// logRecord is one line of a CRI log file:
// "<RFC3339Nano time> <stdout|stderr> <F|P>[:more tags] <content>", where
// P marks a partial line continued by the next record.
type logRecord struct {
	ts      time.Time
	stream  string
	partial bool
	content []byte
}

// parseCRILog parses one record (without its newline).
func parseCRILog(line []byte) (logRecord, error) {
	var r logRecord
	field := func() ([]byte, bool) {
		i := bytes.IndexByte(line, ' ')
		if i < 0 {
			return nil, false
		}
		f := line[:i]
		line = line[i+1:]
		return f, true
	}
	ts, ok := field()
	if !ok {
		return r, fmt.Errorf("log line %q: no timestamp", line)
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return r, fmt.Errorf("log line timestamp %q: %w", ts, err)
	}
	stream, ok := field()
	if !ok || (string(stream) != "stdout" && string(stream) != "stderr") {
		return r, fmt.Errorf("log line: stream %q is not stdout or stderr", stream)
	}
	tags, ok := field()
	if !ok {
		// "<ts> <stream> <tag>" with an empty content has no last space.
		tags, line = line, nil
	}
	first, _, _ := bytes.Cut(tags, []byte(":"))
	switch string(first) {
	case "F":
	case "P":
		r.partial = true
	default:
		return r, fmt.Errorf("log line: tag %q is not F or P", tags)
	}
	r.ts, r.stream, r.content = t, string(stream), line
	return r, nil
}

// logLine is one whole line of output, from one or more records.
type logLine struct {
	ts   time.Time // of its first record
	text []byte    // with its newline
}

// lineAssembler joins partial records into lines.
type lineAssembler struct {
	open  bool
	first time.Time
	buf   []byte
}

// add takes a record and returns the line it completes, if any.
func (l *lineAssembler) add(r logRecord) (logLine, bool) {
	if !l.open {
		l.open, l.first, l.buf = true, r.ts, l.buf[:0]
	}
	l.buf = append(l.buf, r.content...)
	if r.partial {
		return logLine{}, false
	}
	l.open = false
	text := append(append([]byte(nil), l.buf...), '\n')
	return logLine{ts: l.first, text: text}, true
}

// flush returns the line still open (its records all partial) as it
// is, without a newline: the end of a log that does not end a line (a
// prompt, a last write without one), which the kubelet shows too.
func (l *lineAssembler) flush() (logLine, bool) {
	if !l.open {
		return logLine{}, false
	}
	l.open = false
	return logLine{ts: l.first, text: append([]byte(nil), l.buf...)}, true
}

// logFilter selects and formats lines as PodLogOptions ask.
type logFilter struct {
	since      time.Time // zero: every line
	timestamps bool
}

func (f logFilter) keep(l logLine) bool { return f.since.IsZero() || !l.ts.Before(f.since) }

func (f logFilter) format(dst []byte, l logLine) []byte {
	if f.timestamps {
		dst = l.ts.UTC().AppendFormat(dst, time.RFC3339Nano)
		dst = append(dst, ' ')
	}
	return append(dst, l.text...)
}

// parseLines turns whole records (data ending at a newline) into lines;
// malformed records are skipped.
func parseLines(data []byte, asm *lineAssembler) []logLine {
	var out []logLine
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		rec, err := parseCRILog(data[:i])
		data = data[i+1:]
		if err != nil {
			continue
		}
		if l, ok := asm.add(rec); ok {
			out = append(out, l)
		}
	}
	return out
}

// tail keeps the last n lines (n < 0: all).
func tail(lines []logLine, n int64) []logLine {
	if n < 0 || int64(len(lines)) <= n {
		return lines
	}
	return lines[int64(len(lines))-n:]
}

// nodeAgentServer serves NodeAgent: Logs from the CRI log files (here),
// Usage from the runtime's stats (usage.go).
type nodeAgentServer struct {
	nodev1.UnimplementedNodeAgentServer
	a *Agent
}

// maxChunk bounds a LogChunk's size; a chunk holds whole lines.
const maxChunk = 32 << 10

// Logs streams a container's log: its current instance (or, with
// previous, the one before), the last tailLines lines, those newer than
// sinceSeconds, with timestamps if asked, and with follow until the
// container ends or the call is cancelled.
func (s *nodeAgentServer) Logs(o *corev1.PodLogOptions, stream grpc.ServerStreamingServer[corev1.LogChunk]) error {
	a := s.a
	ctx := stream.Context()
	pod, ok := a.pods.Store().GetByName(o.GetNamespace(), o.GetName())
	if !ok {
		return apierrors.NewNotFound("pods", o.GetName())
	}
	name := o.GetContainer()
	if name == "" {
		if cs := pod.GetSpec().GetContainers(); len(cs) == 1 {
			name = cs[0].GetName()
		} else {
			return apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", o.GetName()))
		}
	}
	all, err := a.obs.observe(ctx, o.GetNamespace(), o.GetName())
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("container runtime: %v", err))
	}
	rt := all.forUID(pod.GetMetadata().GetUid())
	target := rt.latest(name, "")
	if o.GetPrevious() {
		target = rt.previous(name)
		if target == nil {
			return apierrors.NewBadRequest(fmt.Sprintf("previous terminated container %q in pod %q not found", name, o.GetName()))
		}
	}
	if target == nil {
		reason := reasonContainerCreating
		a.mu.Lock()
		st := a.lastStatus[pod.GetMetadata().GetUid()].status
		a.mu.Unlock()
		for _, cs := range append(st.GetInitContainerStatuses(), st.GetContainerStatuses()...) {
			if cs.GetName() == name && cs.GetState().GetWaiting().GetReason() != "" {
				reason = cs.GetState().GetWaiting().GetReason()
			}
		}
		return apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q is waiting to start: %s", name, o.GetName(), reason))
	}
	if target.LogPath == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q has no log file", name, o.GetName()))
	}
	f := logFilter{timestamps: o.GetTimestamps()}
	if o.SinceSeconds != nil {
		f.since = a.cfg.Clock.Now().Add(-time.Duration(o.GetSinceSeconds()) * time.Second)
	}
	n := int64(-1)
	if o.TailLines != nil {
		n = o.GetTailLines()
	}
	follow := o.GetFollow() && target.running()
	return a.streamLog(ctx, target, f, n, follow, func(b []byte) error { return stream.Send(&corev1.LogChunk{Data: b}) })
}

// streamLog sends a log file's lines, then, with follow, the lines
// appended to it until the container stops running or ctx ends.
func (a *Agent) streamLog(ctx context.Context, c *containerInfo, f logFilter, tailLines int64, follow bool, send func([]byte) error) error {
	file, err := os.Open(c.LogPath)
	if errors.Is(err, os.ErrNotExist) && !follow {
		return nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return apierrors.NewInternal(fmt.Errorf("opening log: %w", err))
	}
	var asm lineAssembler
	var pending []byte // bytes after the last newline read
	readMore := func() ([]logLine, error) {
		if file == nil {
			fl, err := os.Open(c.LogPath)
			if errors.Is(err, os.ErrNotExist) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			file = fl
		}
		b, err := io.ReadAll(file)
		if err != nil {
			return nil, err
		}
		pending = append(pending, b...)
		end := bytes.LastIndexByte(pending, '\n')
		if end < 0 {
			return nil, nil
		}
		lines := parseLines(pending[:end+1], &asm)
		pending = append(pending[:0], pending[end+1:]...)
		return lines, nil
	}
	defer func() {
		if file != nil {
			file.Close()
		}
	}()
	sendLines := func(lines []logLine) error {
		var buf []byte
		for _, l := range lines {
			if !f.keep(l) {
				continue
			}
			buf = f.format(buf, l)
			if len(buf) >= maxChunk {
				if err := send(buf); err != nil {
					return err
				}
				buf = nil
			}
		}
		if len(buf) > 0 {
			return send(buf)
		}
		return nil
	}
	lines, err := readMore()
	if err != nil {
		return apierrors.NewInternal(fmt.Errorf("reading log: %w", err))
	}
	if !follow {
		if l, ok := asm.flush(); ok {
			lines = append(lines, l)
		}
	}
	var kept []logLine
	for _, l := range lines {
		if f.keep(l) {
			kept = append(kept, l)
		}
	}
	if err := sendLines(tail(kept, tailLines)); err != nil {
		return err
	}
	if !follow {
		return nil
	}
	poll := time.NewTicker(a.cfg.LogFollowPoll)
	defer poll.Stop()
	lastCheck := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-poll.C:
		}
		lines, err := readMore()
		if err != nil {
			return apierrors.NewInternal(fmt.Errorf("reading log: %w", err))
		}
		if err := sendLines(lines); err != nil {
			return err
		}
		if time.Since(lastCheck) < time.Second {
			continue
		}
		lastCheck = time.Now()
		st, err := a.rt.ContainerStatus(ctx, c.ID)
		if err == nil && containerInfoOf(st, c.SandboxID).running() {
			continue
		}
		// Ended (or gone): what it wrote last, then the end.
		lines, err = readMore()
		if err != nil {
			return apierrors.NewInternal(fmt.Errorf("reading log: %w", err))
		}
		if l, ok := asm.flush(); ok {
			lines = append(lines, l)
		}
		return sendLines(lines)
	}
}
