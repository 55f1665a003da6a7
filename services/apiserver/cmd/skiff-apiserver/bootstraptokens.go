package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"skiff.dev/internal/bootstraptoken"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/authn/pki"
	"skiff.dev/services/apiserver/user"
)

// skiff-apiserver token create|list|delete: bootstrap tokens, as kubeadm
// token. They run on a control-plane machine: they reach the apiserver
// at --server as a short-lived administrator whose certificate is issued
// from the CA in the PKI directory.

const bootstrapTokenUsage = `Usage: skiff-apiserver token create [TOKEN] [--ttl 24h] [--description TEXT] [--groups G,... | --control-plane] [--print-join-command]
       skiff-apiserver token list
       skiff-apiserver token delete TOKEN-ID|TOKEN...
       skiff-apiserver token --serviceaccount NAMESPACE/NAME [flags] (a service-account token; see token --help)

Bootstrap tokens let a machine join the cluster: a node agent started with
--join ADDR --token TOKEN --ca-cert-hash sha256:... authenticates with the
token as system:bootstrap:<id> (group system:bootstrappers) and asks for
its certificate, which the controller-manager approves and signs. A token
is the Secret kube-system/bootstrap-token-<id> (type
bootstrap.kubernetes.io/token): it stops working at its expiration or when
deleted. A token made with --control-plane joins a control-plane member
instead (skiff-apiserver --join ADDR --token T --ca-cert-hash H). The
commands reach the apiserver at --server as a short-lived
administrator issued from the CA in the PKI directory (run them on a
control-plane machine).
`

// runBootstrapToken runs token create, list or delete.
func runBootstrapToken(cmd string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("token "+cmd, bootstrapTokenUsage, stderr)
	var p pkiFlags
	p.add(fs)
	var server, description string
	var groups []string
	var ttl time.Duration
	var printJoin, controlPlane bool
	fs.StringVar(&server, "server", "127.0.0.1:6443", "the apiserver (host:port); with --print-join-command, also the address the printed command joins")
	if cmd == "create" {
		fs.DurationVar(&ttl, "ttl", 24*time.Hour, "how long the token is valid (0: it never expires)")
		fs.StringVar(&description, "description", "", "a description of the token's use")
		fs.Var(sansFlag{&groups}, "groups", "extra groups the token authenticates as, each system:bootstrappers:... (default "+bootstraptoken.DefaultNodeGroup+")")
		fs.BoolVar(&printJoin, "print-join-command", false, "print the join command (with the CA's hash) instead of the token alone")
		fs.BoolVar(&controlPlane, "control-plane", false, "a token for control-plane members (group "+bootstraptoken.ControlPlaneGroup+"): skiff-apiserver --join ADDR --token T --ca-cert-hash H joins with it, instead of the members' token")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if ttl < 0 {
		return fmt.Errorf("--ttl %s: must not be negative", ttl)
	}
	switch {
	case controlPlane && len(groups) > 0:
		return errors.New("--control-plane sets the token's group: it cannot go with --groups")
	case controlPlane:
		groups = []string{bootstraptoken.ControlPlaneGroup}
	case len(groups) == 0:
		groups = []string{bootstraptoken.DefaultNodeGroup}
	}
	ca, conn, err := adminConn(p.dir(), server)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	secrets := client.Secrets(conn)
	switch cmd {
	case "create":
		if fs.NArg() > 1 {
			return fmt.Errorf("token create takes at most one TOKEN, got %q", fs.Args())
		}
		tok := bootstraptoken.New()
		if fs.NArg() == 1 {
			tok = fs.Arg(0)
		}
		sec, err := bootstraptoken.Secret(tok, bootstraptoken.Options{TTL: ttl, Description: description, ExtraGroups: groups}, time.Now())
		if err != nil {
			return err
		}
		if _, err := secrets.Create(ctx, sec); err != nil {
			return fmt.Errorf("creating the token's Secret: %w", err)
		}
		switch {
		case printJoin && controlPlane:
			fmt.Fprintf(stdout, "skiff-apiserver --join %s --token %s --ca-cert-hash %s --etcd-name NAME --etcd-peer-url https://IP:2380\n", server, tok, client.CACertHash(ca.Cert))
			return nil
		case printJoin:
			fmt.Fprintf(stdout, "skiff-node-agent --join %s --token %s --ca-cert-hash %s\n", server, tok, client.CACertHash(ca.Cert))
			return nil
		}
		fmt.Fprintln(stdout, tok)
	case "list":
		if fs.NArg() > 0 {
			return fmt.Errorf("token list takes no arguments, got %q", fs.Args())
		}
		list, err := secrets.List(ctx, &metav1.ListOptions{Namespace: bootstraptoken.Namespace, FieldSelector: "type=" + bootstraptoken.SecretType})
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(stdout, 0, 8, 3, ' ', 0)
		fmt.Fprintln(w, "TOKEN\tTTL\tEXPIRES\tUSAGES\tDESCRIPTION\tEXTRA GROUPS")
		now := time.Now()
		for _, s := range list.GetItems() {
			d := s.GetData()
			ttl, expires := "<forever>", "<never>"
			if e, ok := d[bootstraptoken.ExpirationKey]; ok {
				expires = string(e)
				if t, err := time.Parse(time.RFC3339, expires); err == nil {
					ttl = "<expired>"
					if !bootstraptoken.Expired(s, now) {
						ttl = t.Sub(now).Round(time.Second).String()
					}
				}
			}
			var usages []string
			for _, u := range []string{"authentication", "signing"} {
				if string(d["usage-bootstrap-"+u]) == "true" {
					usages = append(usages, u)
				}
			}
			desc := string(d[bootstraptoken.DescriptionKey])
			if desc == "" {
				desc = "<none>"
			}
			fmt.Fprintf(w, "%s.%s\t%s\t%s\t%s\t%s\t%s\n", d[bootstraptoken.IDKey], d[bootstraptoken.SecretKey], ttl, expires,
				strings.Join(usages, ","), desc, d[bootstraptoken.ExtraGroupsKey])
		}
		return w.Flush()
	case "delete":
		if fs.NArg() == 0 {
			return errors.New("token delete: give the TOKEN-ID or TOKEN of each token to delete")
		}
		for _, a := range fs.Args() {
			id, _, ok := bootstraptoken.Parse(a)
			if !ok {
				id = a
			}
			if _, err := secrets.Delete(ctx, &metav1.DeleteRequest{Namespace: bootstraptoken.Namespace, Name: bootstraptoken.SecretPrefix + id}); err != nil {
				if apierrors.IsNotFound(err) {
					return fmt.Errorf("bootstrap token %q not found", id)
				}
				return err
			}
			fmt.Fprintf(stdout, "bootstrap token %q deleted\n", id)
		}
	}
	return nil
}

// adminConn reaches the apiserver at server as a five-minute
// administrator whose certificate the CA in dir issues.
func adminConn(dir, server string) (*pki.CA, *grpc.ClientConn, error) {
	ca, err := pki.LoadCA(dir)
	if err != nil {
		return nil, nil, err
	}
	certPEM, keyPEM, err := ca.Issue(pki.Request{CommonName: "skiff-apiserver-token", Organizations: []string{user.Masters}, Client: true, Validity: 5 * time.Minute}, time.Now())
	if err != nil {
		return nil, nil, err
	}
	conn, err := client.Dial(client.Config{Server: server, CAData: ca.CertPEM, CertData: certPEM, KeyData: keyPEM})
	if err != nil {
		return nil, nil, err
	}
	return ca, conn, nil
}
