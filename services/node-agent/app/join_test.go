package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authz"
)

// TestJoinFlags: --join sets the server unless --server is given, and
// refuses what would contradict it.
func TestJoinFlags(t *testing.T) {
	pin := "--ca-cert-hash=sha256:" + strings.Repeat("0a", 32)
	o, err := ParseFlags([]string{"--node-name=n1", "--join=10.0.0.1:6443", "--token=abcdef.0123456789abcdef", pin}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.API.Server != "10.0.0.1:6443" || o.Join.Token != "abcdef.0123456789abcdef" {
		t.Errorf("server %q, token %q", o.API.Server, o.Join.Token)
	}
	if o, err = ParseFlags([]string{"--node-name=n1", "--join=10.0.0.1:6443", "--server=a:6443,b:6443", pin}, io.Discard); err != nil || o.API.Server != "a:6443,b:6443" {
		t.Errorf("--server beside --join: %q %v", o.API.Server, err)
	}
	// An empty --server (an unset variable of a unit's settings) is no
	// server: --join's.
	if o, err = ParseFlags([]string{"--node-name=n1", "--join=10.0.0.1:6443", "--server=", pin}, io.Discard); err != nil || o.API.Server != "10.0.0.1:6443" {
		t.Errorf("an empty --server beside --join: %q %v", o.API.Server, err)
	}
	for args, want := range map[string]string{
		"--join=a:6443":                                           "--join needs --ca-cert-hash (or --tls-ca-file)",
		"--join=a:6443 --ca-cert-hash=md5:00":                     `--ca-cert-hash "md5:00": want sha256:<64 hex digits>`,
		"--join=a:6443 --insecure " + pin:                         "it cannot go with --insecure",
		"--join=a:6443 --tls-cert-file=c --tls-key-file=k " + pin: "it cannot go with --tls-cert-file",
		"--token=abcdef.0123456789abcdef":                         "--token and --ca-cert-hash go with --join",
	} {
		if _, err := ParseFlags(append([]string{"--node-name=n1"}, strings.Fields(args)...), io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", args, err, want)
		}
	}
}

// TestNodeHostsWaitsForTheNodesAddresses: the names of a joined node's
// serving certificate come once its Node is registered with addresses,
// seen through a watch (not before: a Node without addresses is not
// enough).
func TestNodeHostsWaitsForTheNodesAddresses(t *testing.T) {
	api := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan []string, 1)
	go func() {
		h, err := nodeHosts(ctx, api.Conn, "n1", zap.NewNop(), after(time.Second))
		if err != nil {
			t.Errorf("nodeHosts: %v", err)
		}
		got <- h
	}()
	nodes := client.Nodes(api.Conn)
	n, err := nodes.Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n2"}, Status: &corev1.NodeStatus{}}); err != nil {
		t.Fatal(err)
	}
	n.Status = &corev1.NodeStatus{Addresses: []*corev1.NodeAddress{{Type: "InternalIP", Address: "10.1.2.3"}, {Type: "Hostname", Address: "n1.example"}}}
	if _, err := nodes.UpdateStatus(ctx, n); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-got:
		if want := []string{"n1", "10.1.2.3", "n1.example"}; !slices.Equal(h, want) {
			t.Errorf("hosts %q, want %q", h, want)
		}
	case <-ctx.Done():
		t.Fatal("nodeHosts did not return once the Node had addresses")
	}
}

// TestNodeHostsSaysWhyItCannotReadTheNode: a node that may not read its
// Node (here a user RBAC grants nothing) keeps trying, and says why, once
// per different failure rather than at every try.
func TestNodeHostsSaysWhyItCannotReadTheNode(t *testing.T) {
	api := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Authz = authz.Options{Modes: []string{authz.ModeRBAC}}
	}))
	conn := api.Security.ConnAs(t, "stranger")
	core, logs := observer.New(zapcore.InfoLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Five tries, then it is stopped.
	const tries = 5
	pauses := 0
	stopped := errors.New("stopped")
	_, err := nodeHosts(ctx, conn, "n1", zap.New(core), func(context.Context) error {
		if pauses++; pauses == tries {
			return stopped
		}
		return nil
	})
	if !errors.Is(err, stopped) {
		t.Fatalf("nodeHosts: %v after %d tries, want it stopped after %d", err, pauses, tries)
	}
	entries := logs.All()
	if len(entries) != 1 {
		t.Fatalf("%d log entries over %d refused tries, want 1 (the same refusal once): %v", len(entries), tries, entries)
	}
	if e := fmt.Sprint(entries[0].ContextMap()["error"]); !strings.Contains(e, "forbidden") {
		t.Errorf("logged %q with error %q, want the refusal", entries[0].Message, e)
	}
}
