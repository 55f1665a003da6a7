package main

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"skiff.dev/internal/client"
	"skiff.dev/services/apiserver/authn"
	"skiff.dev/services/apiserver/authn/pki"
)

// The subcommands that manage the cluster's credentials offline, from the
// apiserver's PKI directory: certs init, certs issue, token.

const certsUsage = `Usage: skiff-apiserver certs <command> [flags]

Manages the cluster CA in the apiserver's PKI directory (--pki-dir, default
<data-dir>/pki). The apiserver makes the same files on its first start
when they are missing; run these before it to hand certificates out.

Commands:
  init    create the CA (ca.crt, ca.key), the apiserver's serving
          certificate (apiserver.crt), its client certificate for node
          agents and the service-account signing key (sa.key); existing
          files are kept (a serving certificate lacking a --tls-san, or
          expiring within 30 days, is issued again)
  hash    print the CA's hash (sha256:<hex> of its public key), which
          --ca-cert-hash pins on joining machines
  issue   issue a certificate signed by the CA: <name>.crt, <name>.key and
          ca.crt in --out. A client certificate names a user (--cn) and its
          groups (--o); with --san it is also a serving certificate (node
          agents: --san <node name>)

Run "skiff-apiserver certs <command> --help" for a command's flags.
`

func runCerts(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, certsUsage)
		if len(args) == 0 {
			return errors.New("certs: a command is required (init, hash or issue)")
		}
		return nil
	}
	switch args[0] {
	case "init":
		return runCertsInit(args[1:], stdout, stderr)
	case "issue":
		return runCertsIssue(args[1:], stdout, stderr)
	case "hash":
		fs := newFlagSet("certs hash", "Usage: skiff-apiserver certs hash [--data-dir DIR | --pki-dir DIR]\n\nPrints the cluster CA's hash, as --ca-cert-hash takes it.\n", stderr)
		var p pkiFlags
		p.add(fs)
		if err := parse(fs, args[1:]); err != nil {
			return err
		}
		ca, err := pki.LoadCA(p.dir())
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, client.CACertHash(ca.Cert))
		return nil
	default:
		return fmt.Errorf("certs: unknown command %q (init, hash or issue; see skiff-apiserver certs --help)", args[0])
	}
}

// pkiFlags are the flags every credentials command shares.
type pkiFlags struct {
	dataDir, pkiDir string
}

func (p *pkiFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&p.dataDir, "data-dir", "/var/lib/skiff", "the apiserver's --data-dir (the PKI is in <data-dir>/pki)")
	fs.StringVar(&p.pkiDir, "pki-dir", "", "the apiserver's --pki-dir (default <data-dir>/pki)")
}

func (p *pkiFlags) dir() string {
	o := authn.Options{PKIDir: p.pkiDir}
	return o.PKIDirIn(p.dataDir)
}

// newFlagSet is a subcommand's flag set with its usage text.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("skiff-apiserver "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args; errHelp ends the command successfully after --help.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (see --help)", fs.Args())
	}
	return nil
}

func runCertsInit(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("certs init", `Usage: skiff-apiserver certs init [--data-dir DIR | --pki-dir DIR] [--tls-san NAME]...

Creates what the apiserver needs to serve TLS and sign service-account
tokens, keeping what exists.
`, stderr)
	var p pkiFlags
	p.add(fs)
	var o authn.Options
	fs.Var(sansFlag{&o.TLSSANs}, "tls-san", "extra DNS name or IP of the apiserver's serving certificate (repeat or comma-separate), e.g. apiserver")
	if err := parse(fs, args); err != nil {
		return err
	}
	o.PKIDir = p.dir()
	m, err := o.Material("", time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "PKI in %s: CA %s (valid until %s), serving certificate for %s\n",
		o.PKIDir, pki.CACertFile, m.CA.Cert.NotAfter.UTC().Format(time.DateOnly), strings.Join(m.ServingNames(), ", "))
	return nil
}

func runCertsIssue(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("certs issue", `Usage: skiff-apiserver certs issue --cn NAME [--o GROUP]... [--san HOST]... --out DIR [flags]

Issues a certificate signed by the cluster CA and writes <name>.crt,
<name>.key (0600) and ca.crt into --out. Examples:

  # an administrator (group system:masters may do everything)
  skiff-apiserver certs issue --cn alice --o system:masters --out ./creds
  # the scheduler and the controller-manager
  skiff-apiserver certs issue --cn system:kube-scheduler --out ./creds --name scheduler
  skiff-apiserver certs issue --cn system:kube-controller-manager --out ./creds --name controller-manager
  # a node agent: client (system:node:<node>, group system:nodes) and serving certificate
  skiff-apiserver certs issue --cn system:node:node-1 --o system:nodes --san node-1 --out ./creds --name node-1
`, stderr)
	var p pkiFlags
	p.add(fs)
	var r pki.Request
	var out, name string
	fs.StringVar(&r.CommonName, "cn", "", "common name: the user the certificate authenticates (required)")
	fs.Var(sansFlag{&r.Organizations}, "o", "organization: a group of the user (repeat or comma-separate)")
	fs.Var(sansFlag{&r.Hosts}, "san", "DNS name or IP the certificate also serves (repeat or comma-separate): makes it a serving certificate too")
	fs.DurationVar(&r.Validity, "ttl", pki.DefaultValidity, "how long the certificate is valid")
	fs.StringVar(&out, "out", "", "directory to write the files into (required)")
	fs.StringVar(&name, "name", "", "base name of the files (default: the common name, ':' replaced by '-')")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case r.CommonName == "":
		return errors.New("--cn: required (the user name)")
	case out == "":
		return errors.New("--out: required (the directory for the files)")
	case strings.ContainsAny(name, `/\`):
		return fmt.Errorf("--name %q: a file name, not a path", name)
	}
	if name == "" {
		name = strings.ReplaceAll(r.CommonName, ":", "-")
	}
	ca, err := pki.LoadCA(p.dir())
	if err != nil {
		return err
	}
	r.Client, r.Server = true, len(r.Hosts) > 0
	certPEM, keyPEM, err := ca.Issue(r, time.Now())
	if err != nil {
		return err
	}
	if err := pki.WritePair(out, name, certPEM, keyPEM); err != nil {
		return err
	}
	if err := pki.WriteFile(filepath.Join(out, pki.CACertFile), ca.CertPEM, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s, %s and %s in %s: user %q, groups %v\n", name+".crt", name+".key", pki.CACertFile, out, r.CommonName, r.Organizations)
	return nil
}

func runToken(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "create" || args[0] == "list" || args[0] == "delete") {
		return runBootstrapToken(args[0], args[1:], stdout, stderr)
	}
	fs := newFlagSet("token", `Usage: skiff-apiserver token --serviceaccount NAMESPACE/NAME [--ttl 1h] [--uid UID | --server HOST:PORT] [flags]

Prints a service-account token signed by the apiserver's key. It
authenticates as system:serviceaccount:NAMESPACE:NAME (groups
system:serviceaccounts and system:serviceaccounts:NAMESPACE) while the
ServiceAccount exists with the uid the token names. Without --uid the
ServiceAccount is read from the apiserver at --server (as a short-lived
administrator whose certificate is issued from the CA in the PKI directory).
`, stderr)
	var p pkiFlags
	p.add(fs)
	var sa, uid, server, keyFile, issuer string
	var ttl time.Duration
	fs.StringVar(&sa, "serviceaccount", "", "the ServiceAccount, NAMESPACE/NAME (required)")
	fs.DurationVar(&ttl, "ttl", time.Hour, "how long the token is valid")
	fs.StringVar(&uid, "uid", "", "the ServiceAccount's uid (default: read it from --server)")
	fs.StringVar(&server, "server", "127.0.0.1:6443", "the apiserver to read the ServiceAccount's uid from")
	fs.StringVar(&keyFile, "service-account-key-file", "", "the signing key (default <pki-dir>/sa.key), as the apiserver's flag")
	fs.StringVar(&issuer, "service-account-issuer", authn.DefaultIssuer, "the iss claim, as the apiserver's flag")
	if err := parse(fs, args); err != nil {
		return err
	}
	ns, name, ok := strings.Cut(sa, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("--serviceaccount %q: want NAMESPACE/NAME", sa)
	}
	if ttl <= 0 {
		return fmt.Errorf("--ttl %s: must be positive", ttl)
	}
	dir := p.dir()
	if keyFile == "" {
		keyFile = filepath.Join(dir, authn.ServiceAccountKey)
	}
	key, err := pki.ReadKey(keyFile)
	if err != nil {
		return fmt.Errorf("--service-account-key-file: %w", err)
	}
	ek, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return fmt.Errorf("--service-account-key-file %s: want an ECDSA P-256 key, got %T", keyFile, key)
	}
	if uid == "" {
		if uid, err = serviceAccountUID(dir, server, ns, name); err != nil {
			return err
		}
	}
	tok, err := authn.SignServiceAccountToken(ek, issuer, ns, name, uid, time.Now(), ttl)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, tok)
	return nil
}

// serviceAccountUID reads the ServiceAccount from the apiserver with a
// five-minute administrator certificate issued from the CA in dir.
func serviceAccountUID(dir, server, namespace, name string) (string, error) {
	_, conn, err := adminConn(dir, server)
	if err != nil {
		return "", fmt.Errorf("reading the ServiceAccount's uid needs the CA (or give --uid): %w", err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	obj, err := client.ServiceAccounts(conn).Get(ctx, namespace, name)
	if err != nil {
		return "", fmt.Errorf("serviceaccount %s/%s at --server %s: %w", namespace, name, server, err)
	}
	return obj.GetMetadata().GetUid(), nil
}

// sansFlag is a repeatable, comma-separated list.
type sansFlag struct{ list *[]string }

func (f sansFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f sansFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*f.list = append(*f.list, v)
		}
	}
	return nil
}

// isHelp: the command printed its usage for --help.
func isHelp(err error) bool { return errors.Is(err, flag.ErrHelp) }
