package main

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/authn/pki"
)

// The version the test binary is built with, as make build sets it.
const (
	testVersion = "v9.8.7-test"
	testCommit  = "0123abc"
)

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "skiff-apiserver")
	ldflags := "-X skiff.dev/internal/version.gitVersion=" + testVersion + " -X skiff.dev/internal/version.gitCommit=" + testCommit
	out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput()
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
		// Not Prometheus' 9090: a Prometheus beside the apiserver is common.
		{"metrics port", []string{"--help"}, true, `HTTP address for /metrics and /healthz (empty disables) (default "0.0.0.0:6444")`},
		{"version", []string{"--version"}, true, "skiff-apiserver " + testVersion + " " + testCommit},
		{"unknown flag", []string{"--nope"}, false, "flag provided but not defined: -nope"},
		{"bad log level", []string{"--log-level", "loud"}, false, `--log-level "loud": must be debug, info, warn or error`},
		{"bad memory limit", []string{"--memory-limit", "lots"}, false, `--memory-limit "lots": invalid quantity`},
		{"stray argument", []string{"extra"}, false, "unexpected arguments"},
		{"certs help", []string{"certs", "--help"}, true, "issue a certificate signed by the CA"},
		{"certs without a command", []string{"certs"}, false, "certs: a command is required"},
		{"certs unknown command", []string{"certs", "sign"}, false, `certs: unknown command "sign"`},
		{"certs issue help", []string{"certs", "issue", "--help"}, true, "--san"},
		{"certs issue without --cn", []string{"certs", "issue", "--out", "x"}, false, "--cn: required"},
		{"certs issue without a CA", []string{"certs", "issue", "--cn", "a", "--out", "x", "--pki-dir", "/nonexistent/pki"}, false, "skiff-apiserver certs init"},
		{"token help", []string{"token", "--help"}, true, "--serviceaccount"},
		{"token bad service account", []string{"token", "--serviceaccount", "robot"}, false, `--serviceaccount "robot": want NAMESPACE/NAME`},
		{"member without a command", []string{"member"}, false, "member: the command is list or remove"},
		{"member list with an argument", []string{"member", "list", "--cluster-token-file", "main_test.go", "m1"}, false, `member list: no arguments, got ["m1"]`},
		{"member list help", []string{"member", "list", "--help"}, true, "which one\nleads"},
		{"member remove without a name", []string{"member", "remove", "--cluster-token-file", "main_test.go"}, false, "the member's name is required"},
		{"join without a token", []string{"--join", "10.0.0.1:6443"}, false, "--join needs --cluster-token-file"},
		{"cluster-init without a peer URL", []string{"--cluster-init", "--cluster-token-file", "main_test.go"}, false, "--cluster-init needs --etcd-peer-url"},
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

// startServer runs the binary and returns its gRPC address and its
// remaining log lines.
func startServer(t *testing.T, bin string, args ...string) (*exec.Cmd, string, *bufio.Scanner, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	other := &strings.Builder{} // the lines up to serving, the --insecure banner among them
	addr := ""
	for addr == "" && lines.Scan() {
		other.WriteString(lines.Text() + "\n")
		var entry map[string]any
		if err := json.Unmarshal(lines.Bytes(), &entry); err != nil {
			continue
		}
		if entry["msg"] == "apiserver serving" {
			addr, _ = entry["grpc"].(string)
		}
	}
	if addr == "" {
		_ = cmd.Process.Kill()
		t.Fatalf("no 'apiserver serving' log line\n%s", other)
	}
	return cmd, addr, lines, other
}

// stopServer sends SIGTERM and checks a clean exit.
func stopServer(t *testing.T, cmd *exec.Cmd, lines *bufio.Scanner) {
	t.Helper()
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
}

func runOK(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s %v: %v\n%s", bin, args, err, stderr)
	}
	return string(out)
}

// TestServeAndGracefulShutdown runs the binary as it runs by default (TLS
// and authentication, its PKI made in --data-dir on first start): it
// serves, reports SERVING, logs JSON, and exits 0 on SIGTERM; a restart
// on the same --data-dir keeps the CA (certificates issued before still
// work) and finds the objects written before. `certs issue` and `token`
// make credentials the server accepts.
func TestServeAndGracefulShutdown(t *testing.T) {
	bin := buildBinary(t)
	dataDir := t.TempDir()
	creds := t.TempDir()
	for run := 0; run < 2; run++ {
		cmd, addr, lines, _ := startServer(t, bin, "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--tls-san", "apiserver.test")
		if run == 0 {
			out := runOK(t, bin, "certs", "issue", "--data-dir", dataDir, "--cn", "admin", "--o", "system:masters", "--out", creds)
			if !strings.Contains(out, "admin.crt") {
				t.Fatalf("certs issue: %s", out)
			}
		}
		admin := client.Config{Server: addr, CAFile: filepath.Join(creds, "ca.crt"), CertFile: filepath.Join(creds, "admin.crt"), KeyFile: filepath.Join(creds, "admin.key")}
		conn, err := client.Dial(admin)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health: %v %v", resp, err)
		}
		if v, err := discoveryv1.NewDiscoveryClient(conn).Version(ctx, &discoveryv1.VersionRequest{}); err != nil || v.GetGitVersion() != testVersion || v.GetGitCommit() != testCommit {
			t.Fatalf("Discovery Version: %v %v, want %s %s (the build's)", v, err, testVersion, testCommit)
		}
		cms := client.ConfigMaps(conn)
		if run == 0 {
			if _, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "kept"}, Data: map[string]string{"k": "v"}}); err != nil {
				t.Fatal(err)
			}
		} else if got, err := cms.Get(ctx, "default", "kept"); err != nil || got.Data["k"] != "v" {
			t.Fatalf("object written before the restart: %v %v", got, err)
		}
		if run == 1 {
			// A service-account token from the token command.
			if _, err := client.ServiceAccounts(conn).Create(ctx, &corev1.ServiceAccount{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "robot"}}); err != nil {
				t.Fatal(err)
			}
			tok := strings.TrimSpace(runOK(t, bin, "token", "--data-dir", dataDir, "--serviceaccount", "default/robot", "--server", addr, "--ttl", "10m"))
			robot, err := client.Dial(client.Config{Server: addr, CAFile: admin.CAFile, ServerName: "apiserver.test", Token: tok})
			if err != nil {
				t.Fatal(err)
			}
			// Authenticated as the service account: allowed, or denied by
			// authorization naming it (it has no role).
			if _, err := client.ConfigMaps(robot).Get(ctx, "default", "kept"); err != nil &&
				(status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), `"system:serviceaccount:default:robot"`)) {
				t.Fatalf("with the service-account token: %v", err)
			}
			robot.Close()
			checkBootstrapTokens(ctx, t, bin, dataDir, addr, admin.CAFile)
			// Without credentials: Unauthenticated.
			anon, err := client.Dial(client.Config{Server: addr, CAFile: admin.CAFile})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.ConfigMaps(anon).Get(ctx, "default", "kept"); status.Code(err) != codes.Unauthenticated {
				t.Fatalf("without credentials: %v, want Unauthenticated", err)
			}
			anon.Close()
		}
		cancel()
		conn.Close()
		stopServer(t, cmd, lines)
		if _, err := os.Stat(filepath.Join(dataDir, "etcd", "member")); err != nil {
			t.Fatalf("etcd data not in --data-dir: %v", err)
		}
		for _, f := range []string{"ca.crt", "ca.key", "apiserver.crt", "apiserver.key", "sa.key"} {
			if _, err := os.Stat(filepath.Join(dataDir, "pki", f)); err != nil {
				t.Fatalf("PKI file: %v", err)
			}
		}
	}
}

// TestInsecure: --insecure serves plain text without authentication, and
// says so loudly.
func TestInsecure(t *testing.T) {
	bin := buildBinary(t)
	cmd, addr, lines, banner := startServer(t, bin, "--insecure", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--metrics-listen", "",
		"--anonymous-auth")
	if !strings.Contains(banner.String(), "WARNING: --insecure") {
		t.Errorf("no warning banner on stderr:\n%s", banner)
	}
	if !strings.Contains(banner.String(), `"flags":["--anonymous-auth"]`) {
		t.Errorf("no warning that --anonymous-auth has no effect:\n%s", banner)
	}
	conn, err := client.Dial(client.Config{Server: addr, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.ConfigMaps(conn).Get(ctx, "default", "absent"); status.Code(err) != codes.NotFound {
		t.Fatalf("plain text without credentials: %v, want NotFound", err)
	}
	conn.Close()
	stopServer(t, cmd, lines)
}

// TestCertsInit: certs init makes the PKI once; issue makes a serving and
// client certificate for a node agent.
func TestCertsInit(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "pki")
	out := runOK(t, bin, "certs", "init", "--pki-dir", dir, "--tls-san", "apiserver")
	if !strings.Contains(out, "apiserver") || !strings.Contains(out, dir) {
		t.Fatalf("certs init: %s", out)
	}
	ca1, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	runOK(t, bin, "certs", "init", "--pki-dir", dir)
	if ca2, _ := os.ReadFile(filepath.Join(dir, "ca.crt")); string(ca1) != string(ca2) {
		t.Fatal("a second certs init replaced the CA")
	}
	outDir := t.TempDir()
	runOK(t, bin, "certs", "issue", "--pki-dir", dir, "--cn", "system:node:node-1", "--o", "system:nodes", "--san", "node-1,10.0.0.5", "--out", outDir)
	b, err := os.ReadFile(filepath.Join(outDir, "system-node-node-1.crt"))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.ParseCert(b)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:node:node-1" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "system:nodes" {
		t.Fatalf("subject %v", cert.Subject)
	}
	if err := cert.VerifyHostname("node-1"); err != nil {
		t.Fatal(err)
	}
	if err := cert.VerifyHostname("10.0.0.5"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(outDir, "system-node-node-1.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
}

// checkBootstrapTokens: token create makes a bootstrap token that
// authenticates as system:bootstrap:<id> and prints the join command with
// the CA's hash; token list shows it; token delete revokes it.
func checkBootstrapTokens(ctx context.Context, t *testing.T, bin, dataDir, addr, caFile string) {
	t.Helper()
	join := strings.Fields(runOK(t, bin, "token", "create", "--data-dir", dataDir, "--server", addr, "--ttl", "10m", "--description", "for node-9", "--print-join-command"))
	if len(join) != 7 || join[0] != "skiff-node-agent" || join[1] != "--join" || join[2] != addr || join[3] != "--token" || join[5] != "--ca-cert-hash" {
		t.Fatalf("token create --print-join-command: %q", join)
	}
	tok, hash := join[4], join[6]
	caPEM, err := os.ReadFile(filepath.Join(dataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(caPEM)
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if hash != client.CACertHash(ca) {
		t.Errorf("printed hash %s, the CA's is %s", hash, client.CACertHash(ca))
	}
	if got := strings.TrimSpace(runOK(t, bin, "certs", "hash", "--data-dir", dataDir)); got != hash {
		t.Errorf("certs hash: %s, want %s", got, hash)
	}
	cp := strings.Fields(runOK(t, bin, "token", "create", "--data-dir", dataDir, "--server", addr, "--control-plane", "--print-join-command"))
	if len(cp) < 7 || cp[0] != "skiff-apiserver" || cp[1] != "--join" || cp[5] != "--ca-cert-hash" || cp[6] != hash {
		t.Errorf("token create --control-plane --print-join-command: %q", cp)
	}
	id, _, _ := strings.Cut(tok, ".")
	list := runOK(t, bin, "token", "list", "--data-dir", dataDir, "--server", addr)
	if !strings.Contains(list, tok) || !strings.Contains(list, "for node-9") || !strings.Contains(list, "system:bootstrappers:kubeadm:default-node-token") {
		t.Errorf("token list does not show the token:\n%s", list)
	}
	conn, err := client.Dial(client.Config{Server: addr, CAFile: caFile, ServerName: "apiserver.test", Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := client.ConfigMaps(conn).Get(ctx, "default", "kept"); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), `"system:bootstrap:`+id+`"`) {
		t.Fatalf("with the bootstrap token: %v, want denied to system:bootstrap:%s", err, id)
	}
	runOK(t, bin, "token", "delete", "--data-dir", dataDir, "--server", addr, id)
	if _, err := client.ConfigMaps(conn).Get(ctx, "default", "kept"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("with the deleted bootstrap token: %v, want Unauthenticated", err)
	}
}
