package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "skiff-apiserver")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestFlagsAndErrors(t *testing.T) {
	bin := buildBinary(t)
	cases := []struct {
		name     string
		args     []string
		exitZero bool
		want     string
	}{
		{"help", []string{"--help"}, true, "--etcd-servers"},
		{"version", []string{"--version"}, true, "skiff-apiserver"},
		{"unknown flag", []string{"--nope"}, false, "flag provided but not defined: -nope"},
		{"bad log level", []string{"--log-level", "loud"}, false, `--log-level "loud": must be debug, info, warn or error`},
		{"stray argument", []string{"extra"}, false, "unexpected arguments"},
		{"unreachable external etcd", []string{"--etcd-servers", "http://127.0.0.1:1", "--etcd-dial-timeout", "500ms", "--listen", "127.0.0.1:0", "--metrics-listen", ""}, false, "etcd http://127.0.0.1:1 does not answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec.Command(bin, c.args...).CombinedOutput()
			if (err == nil) != c.exitZero {
				t.Fatalf("exit error %v, want exit zero %v\n%s", err, c.exitZero, out)
			}
			if !strings.Contains(string(out), c.want) {
				t.Fatalf("output lacks %q:\n%s", c.want, out)
			}
		})
	}
}

// TestServeAndGracefulShutdown runs the binary: it serves, reports
// SERVING, logs JSON, and exits 0 on SIGTERM; a restart on the same
// --data-dir finds the objects written before.
func TestServeAndGracefulShutdown(t *testing.T) {
	bin := buildBinary(t)
	dataDir := t.TempDir()
	for run := 0; run < 2; run++ {
		cmd := exec.Command(bin, "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stderr)
		addr := ""
		for addr == "" && lines.Scan() {
			var entry map[string]any
			if err := json.Unmarshal(lines.Bytes(), &entry); err != nil {
				t.Fatalf("log line is not JSON: %q", lines.Text())
			}
			if entry["msg"] == "apiserver serving" {
				addr, _ = entry["grpc"].(string)
			}
		}
		if addr == "" {
			_ = cmd.Process.Kill()
			t.Fatal("no 'apiserver serving' log line")
		}
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health: %v %v", resp, err)
		}
		cms := client.ConfigMaps(conn)
		if run == 0 {
			if _, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "kept"}, Data: map[string]string{"k": "v"}}); err != nil {
				t.Fatal(err)
			}
		} else if got, err := cms.Get(ctx, "default", "kept"); err != nil || got.Data["k"] != "v" {
			t.Fatalf("object written before the restart: %v %v", got, err)
		}
		cancel()
		conn.Close()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		stopped := false
		for lines.Scan() {
			stopped = stopped || strings.Contains(lines.Text(), `"apiserver stopped"`)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
		if !stopped {
			t.Fatal("no 'apiserver stopped' log line after SIGTERM")
		}
		if _, err := os.Stat(filepath.Join(dataDir, "etcd", "member")); err != nil {
			t.Fatalf("etcd data not in --data-dir: %v", err)
		}
	}
}
