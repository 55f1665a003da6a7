package app

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	nodev1 "skiff.dev/proto/node/v1"
	"skiff.dev/services/apiserver/authn/pki"
)

// TestOnlyTheAPIServerMayExec: the NodeAgent service's exec, attach and
// port-forward (which run commands in containers) admit the apiserver's
// client certificate only; a node's or a user's certificate of the same
// CA is refused before the stream reaches the agent.
func TestOnlyTheAPIServerMayExec(t *testing.T) {
	dir := t.TempDir()
	ca, _, err := pki.InitCA(filepath.Join(dir, "ca"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	issue := func(name string, r pki.Request) client.Config {
		certPEM, keyPEM, err := ca.Issue(r, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := pki.WritePair(dir, name, certPEM, keyPEM); err != nil {
			t.Fatal(err)
		}
		return client.Config{CAData: ca.CertPEM, CertData: certPEM, KeyData: keyPEM}
	}
	issue("node-a", pki.Request{CommonName: "system:node:node-a", Organizations: []string{"system:nodes"}, Hosts: []string{"node-a"}, Client: true, Server: true})
	caFile := filepath.Join(dir, "ca.crt")
	if err := pki.WriteFile(caFile, ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := ParseFlags([]string{"--node-name", "node-a", "--tls-ca-file", caFile,
		"--tls-cert-file", filepath.Join(dir, "node-a.crt"), "--tls-key-file", filepath.Join(dir, "node-a.key")}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := o.serverOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The service itself answers Unimplemented: reaching it means admitted.
	g := grpc.NewServer(opts...)
	nodev1.RegisterNodeAgentServer(g, nodev1.UnimplementedNodeAgentServer{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(l)
	defer g.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	calls := map[string]func(nodev1.NodeAgentClient) error{
		"Exec": func(c nodev1.NodeAgentClient) error {
			s, err := c.Exec(ctx)
			if err != nil {
				return err
			}
			_ = s.Send(&corev1.ExecRequest{Options: &corev1.PodExecOptions{Namespace: "default", Name: "web", Command: []string{"sh"}}})
			_, err = s.Recv()
			return err
		},
		"Attach": func(c nodev1.NodeAgentClient) error {
			s, err := c.Attach(ctx)
			if err != nil {
				return err
			}
			_ = s.Send(&corev1.ExecRequest{Options: &corev1.PodExecOptions{Namespace: "default", Name: "web"}})
			_, err = s.Recv()
			return err
		},
		"PortForward": func(c nodev1.NodeAgentClient) error {
			s, err := c.PortForward(ctx)
			if err != nil {
				return err
			}
			_ = s.Send(&corev1.PortForwardRequest{Options: &corev1.PodPortForwardOptions{Namespace: "default", Name: "web", Port: 80}})
			_, err = s.Recv()
			return err
		},
	}
	for _, tc := range []struct {
		who  string
		cfg  client.Config
		want codes.Code
	}{
		{"the apiserver", issue("apiserver", pki.Request{CommonName: "system:apiserver", Client: true}), codes.Unimplemented},
		{"a node", issue("node-b", pki.Request{CommonName: "system:node:node-b", Organizations: []string{"system:nodes"}, Client: true}), codes.PermissionDenied},
		{"a user", issue("alice", pki.Request{CommonName: "alice", Organizations: []string{"dev"}, Client: true}), codes.PermissionDenied},
	} {
		cfg := tc.cfg
		cfg.Server, cfg.ServerName = l.Addr().String(), "node-a"
		conn, err := client.Dial(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for method, call := range calls {
			if err := call(nodev1.NewNodeAgentClient(conn)); status.Code(err) != tc.want {
				t.Errorf("%s calling %s: %v, want %v", tc.who, method, err, tc.want)
			}
		}
		conn.Close()
	}
}
