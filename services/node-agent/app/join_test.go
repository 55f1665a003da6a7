package app

import (
	"io"
	"strings"
	"testing"
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
