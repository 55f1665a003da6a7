package app

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	nodev1 "skiff.dev/proto/node/v1"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authn/pki"
)

// TestProgramOverTLS runs the program against an apiserver with TLS and
// authentication, as system:node:node-a with one certificate for both its
// client and its NodeAgent service: the node registers, a pod runs, and
// its log streams through the apiserver, which reaches the agent over TLS
// with its own client certificate. Nobody else may call the agent.
func TestProgramOverTLS(t *testing.T) {
	api := apiservertest.Start(t, apiservertest.Secure())
	rt := startRuntime(t)
	dir := t.TempDir()
	certPEM, keyPEM, err := api.CA.Issue(pki.Request{CommonName: "system:node:node-a", Organizations: []string{"system:nodes"},
		Hosts: []string{"node-a"}, Client: true, Server: true}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WritePair(dir, "node-a", certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	if err := pki.WriteFile(caFile, api.CA.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := startProgram(t, ctx, rt, "--server", api.Addr(), "--tls-ca-file", caFile,
		"--tls-cert-file", filepath.Join(dir, "node-a.crt"), "--tls-key-file", filepath.Join(dir, "node-a.key"), "--metrics-listen", "")
	runWebPod(t, ctx, api.Conn)
	c, _ := rt.ContainerOf("default", "web", "app")
	if err := rt.WriteLog(c.ID, "stdout", "hello over TLS"); err != nil {
		t.Fatal(err)
	}
	s, err := corev1.NewPodsClient(api.Conn).Logs(ctx, &corev1.PodLogOptions{Namespace: "default", Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	chunk, err := s.Recv()
	if err != nil || string(chunk.GetData()) != "hello over TLS\n" {
		t.Fatalf("logs through the apiserver: %q, %v", chunk.GetData(), err)
	}

	// Straight to the agent: another user's certificate is denied, and
	// without one the handshake fails.
	agentCall := func(cfg client.Config) error {
		cfg.Server, cfg.ServerName = a.GRPC, "node-a"
		conn, err := client.Dial(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		st, err := nodev1.NewNodeAgentClient(conn).Logs(ctx, &corev1.PodLogOptions{Namespace: "default", Name: "web", Container: "app"})
		if err != nil {
			return err
		}
		_, err = st.Recv()
		return err
	}
	alice, err := api.Config("alice", "dev")
	if err != nil {
		t.Fatal(err)
	}
	if err := agentCall(alice); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), `user "alice" may not call`) {
		t.Fatalf("alice at the agent: %v, want PermissionDenied", err)
	}
	if err := agentCall(client.Config{CAData: api.CA.CertPEM}); status.Code(err) != codes.Unavailable {
		t.Fatalf("no certificate at the agent: %v, want the handshake refused", err)
	}
}

func TestServingFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--node-name", "n"}, "--serving-cert-file: the NodeAgent service needs a serving certificate"},
		{[]string{"--node-name", "n", "--serving-cert-file", "a.crt"}, "--serving-cert-file and --serving-key-file go together"},
		{[]string{"--node-name", "n", "--insecure", "--serving-cert-file", "a.crt", "--serving-key-file", "a.key"}, "--insecure serves the NodeAgent service in plain text"},
		{[]string{"--node-name", "n", "--tls-cert-file", "a.crt", "--tls-key-file", "a.key"}, "--serving-client-ca-file: the NodeAgent service needs the CA"},
	} {
		o, err := ParseFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.serverOptions(nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
