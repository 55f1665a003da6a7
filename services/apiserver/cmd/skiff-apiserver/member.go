package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"skiff.dev/services/apiserver/apiserver"
)

// runMember is "skiff-apiserver member remove": a member stopped for good
// leaves the etcd cluster (before a replacement joins with --join).
func runMember(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "remove" {
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
			fmt.Fprintln(stderr, "Usage: skiff-apiserver member remove --server HOST:PORT --cluster-token-file FILE [--join-ca-file CA] NAME")
			return flag.ErrHelp
		}
		return fmt.Errorf("member: the command is remove (see member --help)")
	}
	fs := newFlagSet("member remove", `Usage: skiff-apiserver member remove --server HOST:PORT --cluster-token-file FILE [--join-ca-file CA] NAME

Removes the control-plane member NAME (its --etcd-name) from the etcd
cluster, through the member at --server, which must be another one: a
member stopped for good, before its replacement joins with --join. The
cluster then needs a majority of the members that remain.
`, stderr)
	var c apiserver.ClusterOptions
	var tokenFile string
	fs.StringVar(&c.Join, "server", "127.0.0.1:6443", "the API address of a member that stays")
	fs.StringVar(&tokenFile, "cluster-token-file", "", "file holding the members' shared token (required)")
	fs.StringVar(&c.JoinCAFile, "join-ca-file", "", "CA certificate (PEM) of that member's serving certificate; empty: plain text (members with --insecure)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("member remove: the member's name is required (one argument)")
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		return fmt.Errorf("--cluster-token-file: %w", err)
	}
	c.Token = strings.TrimSpace(string(b))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := apiserver.RemoveMember(ctx, c, fs.Arg(0)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "member %s removed\n", fs.Arg(0))
	return nil
}
