package agent

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "skiff.dev/proto/core/v1"
)

// Termination messages, as the kubelet keeps them: each container instance
// gets an empty host file of its own (under the pod's directory) mounted at
// its terminationMessagePath; when the container has exited, what it wrote
// there (at most 4096 bytes) is its terminated state's message. With
// terminationMessagePolicy FallbackToLogsOnError, a container that failed
// and wrote nothing gets the end of its log instead (the last 80 lines, at
// most 2048 bytes). The path and policy are kept on the container
// (annotations, the kubelet's names), so an exited container's message
// needs no spec.

const (
	annotationTerminationMessagePath   = "io.kubernetes.container.terminationMessagePath"
	annotationTerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"

	maxTerminationMessageLength    = 4096 // kubecontainer.MaxContainerTerminationMessageLength
	maxTerminationMessageLogLength = 2048 // ...LogLength
	maxTerminationMessageLogLines  = 80   // ...LogLines

	policyFallbackToLogsOnError = "FallbackToLogsOnError"
)

// withTerminationLog adds to mounts the termination message file of a new
// instance of container c of pod p (none when c has no
// terminationMessagePath): a new empty file, writable by any user, in
// <root>/pods/<uid>/containers/<name>/.
func withTerminationLog(root string, p *corev1.Pod, c *corev1.Container, mounts []*runtimeapi.Mount) ([]*runtimeapi.Mount, error) {
	path := c.GetTerminationMessagePath()
	if path == "" {
		return mounts, nil
	}
	dir := filepath.Join(podDir(root, p.GetMetadata().GetUid()), "containers", c.GetName())
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("termination message directory: %w", err)
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	file := filepath.Join(dir, hex.EncodeToString(id[:]))
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return nil, fmt.Errorf("termination message file: %w", err)
	}
	f.Close()
	// The umask narrowed the mode; a container of any user may write it.
	if err := os.Chmod(file, 0o666); err != nil {
		return nil, fmt.Errorf("termination message file: %w", err)
	}
	return append(mounts, &runtimeapi.Mount{HostPath: file, ContainerPath: path}), nil
}

// terminationAnnotations keep c's termination message settings on its
// container.
func terminationAnnotations(c *corev1.Container) map[string]string {
	return map[string]string{
		annotationTerminationMessagePath:   c.GetTerminationMessagePath(),
		annotationTerminationMessagePolicy: c.GetTerminationMessagePolicy(),
	}
}

// terminationMessage is the message of exited container st: the runtime's
// message, then (after ": ") the one the container left in its file, or
// the end of its log when its policy says so.
func terminationMessage(st *runtimeapi.ContainerStatus) string {
	msg := st.GetMessage()
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		return msg
	}
	path := st.GetAnnotations()[annotationTerminationMessagePath]
	fallback := st.GetAnnotations()[annotationTerminationMessagePolicy] == policyFallbackToLogsOnError &&
		st.GetExitCode() != 0 && st.GetReason() != "ContainerCannotRun" // never ran: no log
	own, checkLogs := messageFromFile(st.GetMounts(), path, fallback)
	if checkLogs {
		own = messageFromLog(st.GetLogPath())
	}
	if own == "" {
		return msg
	}
	if msg != "" {
		return msg + ": " + own
	}
	return own
}

// messageFromFile reads the file mounted at path (its last
// maxTerminationMessageLength bytes); it also says whether to look at the
// logs instead (fallback and nothing written).
func messageFromFile(mounts []*runtimeapi.Mount, path string, fallback bool) (string, bool) {
	if path == "" {
		return "", fallback
	}
	for _, m := range mounts {
		if m.GetContainerPath() != path {
			continue
		}
		data, err := readTail(m.GetHostPath(), maxTerminationMessageLength)
		if os.IsNotExist(err) {
			return "", fallback
		}
		if err != nil {
			return fmt.Sprintf("Error on reading termination log %s: %v", m.GetHostPath(), err), false
		}
		return string(data), fallback && len(data) == 0
	}
	return "", fallback
}

// logTailWindow is how much of a log's end is read for its last lines: 80
// lines of CRI records (about 40 bytes of prefix each) and 2048 bytes of
// text fit with room to spare.
const logTailWindow = 64 << 10

// messageFromLog is the end of a CRI log file: its last 80 lines, of which
// the last 2048 bytes.
func messageFromLog(path string) string {
	data, err := readTail(path, logTailWindow)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	if info, serr := os.Stat(path); serr == nil && info.Size() > int64(len(data)) {
		// Started mid-record: skip to the first whole one.
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n') // a last record without its newline still counts
	}
	var asm lineAssembler
	lines := parseLines(data, &asm)
	if l, ok := asm.flush(); ok { // the log ended inside a line
		lines = append(lines, l)
	}
	var out []byte
	for _, l := range tail(lines, maxTerminationMessageLogLines) {
		out = append(out, l.text...)
	}
	if len(out) > maxTerminationMessageLogLength {
		out = out[len(out)-maxTerminationMessageLogLength:]
	}
	return string(out)
}

// readTail returns the last n bytes of a file (all of it when shorter).
func readTail(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > n {
		if _, err := f.Seek(-n, io.SeekEnd); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, n))
}
