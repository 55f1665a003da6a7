package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestWithTerminationLog(t *testing.T) {
	root := t.TempDir()
	p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Uid: "u1"}}
	c := &corev1.Container{Name: "app", TerminationMessagePath: "/dev/termination-log"}
	m1, err := withTerminationLog(root, p, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := withTerminationLog(root, p, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m1) != 1 || m1[0].GetContainerPath() != "/dev/termination-log" || m1[0].GetReadonly() {
		t.Fatalf("mounts %v, want the file at /dev/termination-log, writable", m1)
	}
	if m1[0].GetHostPath() == m2[0].GetHostPath() {
		t.Error("two instances share a termination file")
	}
	if dir := filepath.Dir(m1[0].GetHostPath()); dir != filepath.Join(root, "pods", "u1", "containers", "app") {
		t.Errorf("file in %s, want the pod's containers/app", dir)
	}
	info, err := os.Stat(m1[0].GetHostPath())
	if err != nil || info.Size() != 0 || info.Mode().Perm() != 0o666 {
		t.Errorf("file %v, %v: want empty, mode 0666", info, err)
	}
	if m, _ := withTerminationLog(root, p, &corev1.Container{Name: "x"}, nil); len(m) != 0 {
		t.Errorf("no terminationMessagePath: mounts %v", m)
	}
}

// criLog writes a CRI log file of the lines (each one F record).
func criLog(t *testing.T, lines ...string) string {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "2024-01-02T03:04:05.000000006Z stdout F %s\n", l)
	}
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o666); err != nil {
			t.Fatal(err)
		}
		return p
	}
	written := write("written", "bye: config missing")
	empty := write("empty", "")
	big := write("big", strings.Repeat("a", 5000)+"END")
	var many []string
	for i := range 100 {
		many = append(many, fmt.Sprintf("line %d", i))
	}
	logPath := criLog(t, many...)
	longLog := criLog(t, strings.Repeat("x", 3000))

	status := func(file, policy string, exit int32, reason, log string) *runtimeapi.ContainerStatus {
		return &runtimeapi.ContainerStatus{
			State: runtimeapi.ContainerState_CONTAINER_EXITED, ExitCode: exit, Reason: reason, LogPath: log,
			Annotations: map[string]string{annotationTerminationMessagePath: "/dev/termination-log", annotationTerminationMessagePolicy: policy},
			Mounts:      []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: dir}, {ContainerPath: "/dev/termination-log", HostPath: file}},
		}
	}
	last80 := strings.Join(many[20:], "\n") + "\n"
	for _, c := range []struct {
		name string
		st   *runtimeapi.ContainerStatus
		want string
	}{
		{"from the file", status(written, "File", 1, "Error", logPath), "bye: config missing"},
		{"file, even on success with the fallback", status(written, policyFallbackToLogsOnError, 0, "Completed", logPath), "bye: config missing"},
		{"empty file, policy File", status(empty, "File", 1, "Error", logPath), ""},
		{"empty file, failed: the log's last 80 lines", status(empty, policyFallbackToLogsOnError, 1, "Error", logPath), last80},
		{"empty file, succeeded: no fallback", status(empty, policyFallbackToLogsOnError, 0, "Completed", logPath), ""},
		{"file gone: fallback", status(filepath.Join(dir, "gone"), policyFallbackToLogsOnError, 2, "Error", logPath), last80},
		{"never ran: no fallback", status(empty, policyFallbackToLogsOnError, 128, "ContainerCannotRun", logPath), ""},
		{"the file's last 4096 bytes", status(big, "File", 0, "Completed", ""), strings.Repeat("a", 4093) + "END"},
		{"the log's last 2048 bytes", status(empty, policyFallbackToLogsOnError, 1, "Error", longLog), strings.Repeat("x", 2047) + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := terminationMessage(c.st); got != c.want {
				t.Errorf("message %q (%d bytes), want %q (%d bytes)", trimmed(got), len(got), trimmed(c.want), len(c.want))
			}
		})
	}

	// The runtime's own message comes first.
	st := status(written, "File", 137, "OOMKilled", "")
	st.Message = "out of memory"
	if got := terminationMessage(st); got != "out of memory: bye: config missing" {
		t.Errorf("with the runtime's message: %q", got)
	}
	// Running: the runtime's message only; nothing is read.
	st.State = runtimeapi.ContainerState_CONTAINER_RUNNING
	if got := terminationMessage(st); got != "out of memory" {
		t.Errorf("running: %q", got)
	}
}

func trimmed(s string) string {
	if len(s) > 60 {
		return s[:30] + "..." + s[len(s)-30:]
	}
	return s
}
