package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"skiff.dev/services/apiserver/apiserver"
)

// memberCommands are member's commands: their arguments after the
// common flags, and what they do.
var memberCommands = map[string]struct{ args, about string }{
	"list": {"", `Lists the members of the etcd cluster as the member at --server sees
them: name (--etcd-name), etcd member ID, voter or learner, which one
leads, peer URLs.`},
	"remove": {" NAME", `Removes the control-plane member NAME (its --etcd-name) from the etcd
cluster, through the member at --server, which must be another one: a
member stopped for good, before its replacement joins with --join. The
cluster then needs a majority of the members that remain.`},
}

// memberUsage is verb's usage line.
func memberUsage(verb string) string {
	return "skiff-apiserver member " + verb + " --server HOST:PORT --cluster-token-file FILE [--join-ca-file CA]" + memberCommands[verb].args
}

// runMember is "skiff-apiserver member list|remove": the etcd cluster's
// members as one member sees them, and the removal of a member stopped
// for good (before a replacement joins with --join).
func runMember(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || memberCommands[args[0]].about == "" {
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
			fmt.Fprintf(stderr, "Usage: %s\n       %s\n", memberUsage("list"), memberUsage("remove"))
			return flag.ErrHelp
		}
		return fmt.Errorf("member: the command is list or remove (see member --help)")
	}
	verb := args[0]
	help := "Usage: " + memberUsage(verb) + "\n\n" + memberCommands[verb].about + "\n"
	fs := newFlagSet("member "+verb, help, stderr)
	var c apiserver.ClusterOptions
	var tokenFile string
	fs.StringVar(&c.Join, "server", "127.0.0.1:6443", "the API address of a member")
	fs.StringVar(&tokenFile, "cluster-token-file", "", "file holding the members' shared token (required)")
	fs.StringVar(&c.JoinCAFile, "join-ca-file", "", "CA certificate (PEM) of that member's serving certificate; empty: plain text (members with --insecure)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if wantArgs := len(strings.Fields(memberCommands[verb].args)); fs.NArg() != wantArgs {
		if verb == "list" {
			return fmt.Errorf("member list: no arguments, got %q", fs.Args())
		}
		return fmt.Errorf("member remove: the member's name is required (one argument)")
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		return fmt.Errorf("--cluster-token-file: %w", err)
	}
	c.Token = strings.TrimSpace(string(b))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if verb == "list" {
		members, err := apiserver.ListMembers(ctx, c)
		if err != nil {
			return err
		}
		printMembers(stdout, members)
		return nil
	}
	if err := apiserver.RemoveMember(ctx, c, fs.Arg(0)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "member %s removed\n", fs.Arg(0))
	return nil
}

// printMembers writes members as a table, as etcdctl member list -w table
// would with the leader marked.
func printMembers(w io.Writer, members []apiserver.Member) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tROLE\tLEADER\tPEER URLS")
	for _, m := range members {
		role, leader := "voter", ""
		if m.Learner {
			role = "learner"
		}
		if m.Leader {
			leader = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.Name, m.ID, role, leader, strings.Join(m.PeerURLs, ","))
	}
	_ = tw.Flush()
}
