// Package cmd is skiffctl's command tree (cobra): one file per command,
// each turning flags and arguments into calls of the packages that do the
// work (manifest, kinds, apply, printers, describe, config) and the API.
// Execute runs a command line in-process with injected streams,
// environment and clock, so tests run the real CLI against an in-process
// apiserver; cmd/skiffctl/main.go only calls it.
package cmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/tracing"
	"skiff.dev/services/ctl/config"
	"skiff.dev/services/ctl/kinds"
)

// Env is what a run of skiffctl gets from its surroundings.
type Env struct {
	In       io.Reader
	Out, Err io.Writer
	// Getenv reads environment variables ($KUBECONFIG, $SKIFFCONFIG).
	Getenv func(string) string
	// Home is the user's home directory (for ~/.skiff/config).
	Home string
	// Now is the clock (ages, restartedAt).
	Now func() time.Time
}

// OSEnv is the process's real environment.
func OSEnv() Env {
	home, _ := os.UserHomeDir()
	return Env{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Getenv: os.Getenv, Home: home, Now: time.Now}
}

// globalFlags apply to every command.
type globalFlags struct {
	kubeconfig     string // --kubeconfig
	skiffconfig    string // --skiffconfig, the same as --kubeconfig
	overrides      config.Overrides
	verbosity      int
	requestTimeout time.Duration
	tracing        tracing.Options
}

// root holds one run's state: flags, then (lazily) the config, the
// connection and the kinds the server serves.
type root struct {
	env   Env
	flags globalFlags
	log   *zap.Logger

	resolved *config.Resolved
	conn     *grpc.ClientConn
	tracing  *tracing.Tracing // with --tracing-endpoint, made by connect
	mapper   *kinds.Mapper
}

// Execute runs one command line and returns the process's exit code. ctx
// ends long-running commands (get -w, logs -f, rollout status).
func Execute(ctx context.Context, args []string, env Env) int {
	if env.Now == nil {
		env.Now = time.Now
	}
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.In == nil {
		env.In = strings.NewReader("")
	}
	r := &root{env: env, log: zap.NewNop()}
	defer r.close()
	c := r.command()
	c.SetArgs(args)
	c.SetIn(env.In)
	c.SetOut(env.Out)
	c.SetErr(env.Err)
	err := c.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.silent {
		return ee.code
	}
	fmt.Fprintln(env.Err, r.message(err))
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func (r *root) command() *cobra.Command {
	c := &cobra.Command{
		Use:   "skiffctl",
		Short: "skiffctl controls a Skiff cluster",
		Long: `skiffctl controls a Skiff cluster, the way kubectl controls Kubernetes.

It reads a kubeconfig for the apiserver address, credentials and default
namespace: the --kubeconfig file, else the files of $KUBECONFIG merged as
kubectl merges them, else $SKIFFCONFIG, else ~/.skiff/config. --server,
--token, --context and --namespace override it.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			r.log = newLogger(r.env.Err, r.flags.verbosity)
			return r.flags.tracing.Validate()
		},
	}
	f := c.PersistentFlags()
	f.StringVar(&r.flags.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: the files of $KUBECONFIG, else $SKIFFCONFIG, else ~/.skiff/config)")
	f.StringVar(&r.flags.skiffconfig, "skiffconfig", "", "the same as --kubeconfig")
	f.StringVar(&r.flags.overrides.Context, "context", "", "the config context to use")
	f.StringVar(&r.flags.overrides.Cluster, "cluster", "", "the config cluster to use")
	f.StringVar(&r.flags.overrides.User, "user", "", "the config user to use")
	f.StringVarP(&r.flags.overrides.Server, "server", "s", "", "the apiserver's address (host:port)")
	f.StringVar(&r.flags.overrides.Token, "token", "", "bearer token for authentication to the apiserver")
	f.StringVarP(&r.flags.overrides.Namespace, "namespace", "n", "", "the namespace of this request")
	f.IntVarP(&r.flags.verbosity, "v", "v", 0, "log verbosity: 6 shows the gRPC calls, 8 also their bodies")
	f.DurationVar(&r.flags.requestTimeout, "request-timeout", 0, "how long to wait for one request (0: no limit)")
	// Unlike kubectl: a trace that starts at the command line, sampled
	// unless told otherwise.
	tfs := flag.NewFlagSet("tracing", flag.ContinueOnError)
	r.flags.tracing.AddFlags(tfs, tracing.MaxSamplingRatePerMillion)
	f.AddGoFlagSet(tfs)
	c.AddGroup(&cobra.Group{ID: "basic", Title: "Basic Commands:"},
		&cobra.Group{ID: "deploy", Title: "Deploy Commands:"},
		&cobra.Group{ID: "cluster", Title: "Cluster Management Commands:"},
		&cobra.Group{ID: "debug", Title: "Troubleshooting and Debugging Commands:"},
		&cobra.Group{ID: "advanced", Title: "Advanced Commands:"},
		&cobra.Group{ID: "settings", Title: "Settings Commands:"},
		&cobra.Group{ID: "other", Title: "Other Commands:"})
	add := func(group string, cmds ...*cobra.Command) {
		for _, sc := range cmds {
			sc.GroupID = group
			c.AddCommand(sc)
		}
	}
	add("basic", r.createCmd(), r.exposeCmd(), r.getCmd(), r.deleteCmd())
	add("deploy", r.rolloutCmd(), r.scaleCmd())
	add("cluster", r.certificateCmd(), r.cordonCmd(true), r.cordonCmd(false), r.drainCmd(), r.topCmd())
	add("debug", r.describeCmd(), r.logsCmd(), r.execCmd(), r.attachCmd(), r.portForwardCmd(), r.cpCmd(), r.debugCmd())
	add("advanced", r.applyCmd(), r.waitCmd())
	add("settings", r.labelCmd("label"), r.labelCmd("annotate"))
	add("other", r.apiResourcesCmd(), r.apiVersionsCmd(), r.configCmd(), r.versionCmd())
	c.SetHelpCommandGroupID("other")
	c.SetCompletionCommandGroupID("settings")
	return c
}

func (r *root) close() {
	if r.conn != nil {
		r.conn.Close()
	}
	r.tracing.Stop(r.log) // sends the command's spans
}

// configRules are the kubeconfig files of this run: --kubeconfig (or
// --skiffconfig), else $KUBECONFIG's, else $SKIFFCONFIG or ~/.skiff/config.
func (r *root) configRules() (config.Rules, error) {
	explicit := r.flags.kubeconfig
	if s := r.flags.skiffconfig; s != "" {
		if explicit != "" && explicit != s {
			return config.Rules{}, fmt.Errorf("--kubeconfig %q and --skiffconfig %q name different files: give one", explicit, s)
		}
		explicit = s
	}
	return config.NewRules(explicit, r.env.Getenv, r.env.Home), nil
}

// resolve loads the config and applies the flags. What of the user's
// credentials skiffctl cannot use is said once, on stderr.
func (r *root) resolve() (*config.Resolved, error) {
	if r.resolved != nil {
		return r.resolved, nil
	}
	rules, err := r.configRules()
	if err != nil {
		return nil, err
	}
	cfg, err := rules.Load()
	if err != nil {
		return nil, err
	}
	res, err := cfg.Resolve(r.flags.overrides)
	if err != nil {
		return nil, err
	}
	if res.Warning != "" {
		fmt.Fprintln(r.env.Err, "Warning: "+res.Warning)
	}
	r.resolved = res
	return res, nil
}

// namespace is the namespace commands act in.
func (r *root) namespace() (string, error) {
	res, err := r.resolve()
	if err != nil {
		return "", err
	}
	return res.Namespace, nil
}

// connect dials the apiserver (lazily: the first call fails if it is away):
// TLS when the config names a CA, a client certificate, or an https://
// server; plain text otherwise (an apiserver started with --insecure).
func (r *root) connect() (*grpc.ClientConn, error) {
	if r.conn != nil {
		return r.conn, nil
	}
	res, err := r.resolve()
	if err != nil {
		return nil, err
	}
	if r.tracing == nil {
		if r.tracing, err = tracing.New(context.Background(), r.flags.tracing, "skiffctl", r.log); err != nil {
			return nil, err
		}
	}
	conn, err := client.Dial(client.Config{
		Server: res.Server, Insecure: !res.TLS,
		CAData: res.CA, CertData: res.CertPEM, KeyData: res.KeyPEM, Token: res.Token,
		ServerName: res.ServerName, InsecureSkipVerify: res.InsecureSkipVerify,
	}, append(r.tracing.DialOptions(), grpc.WithChainUnaryInterceptor(r.unaryInterceptor), grpc.WithChainStreamInterceptor(r.streamInterceptor))...)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", res.Server, err)
	}
	r.conn = conn
	return conn, nil
}

// kinds returns the mapper of what the server serves (asked once per run).
func (r *root) kinds(ctx context.Context) (*kinds.Mapper, error) {
	if r.mapper != nil {
		return r.mapper, nil
	}
	conn, err := r.connect()
	if err != nil {
		return nil, err
	}
	ctx, cancel := r.requestContext(ctx)
	defer cancel()
	m, err := kinds.Discover(ctx, conn)
	if err != nil {
		if st, ok := status.FromError(errors.Unwrap(err)); ok && st.Code() == codes.Unimplemented || apierrors.IsMethodNotAllowed(err) {
			m = kinds.Static() // a server without discovery: assume it serves everything known
		} else {
			return nil, err
		}
	}
	r.mapper = m
	return m, nil
}

// requestContext bounds one request by --request-timeout.
func (r *root) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.flags.requestTimeout > 0 {
		return context.WithTimeout(ctx, r.flags.requestTimeout)
	}
	return context.WithCancel(ctx)
}

// exitError ends a command with a code; silent ones print nothing more.
type exitError struct {
	code   int
	msg    string
	silent bool
}

func (e *exitError) Error() string { return e.msg }

// errSilent fails the run without another message (the command printed
// its errors already).
var errSilent = &exitError{code: 1, silent: true}

// grpcConn is a connection the typed clients use.
type grpcConn = grpc.ClientConnInterface
