// Package app is skiff-scheduler's program: its flags, the policy file,
// and Run, which connects to the apiserver, serves metrics and health, and
// schedules while holding the leader Lease. cmd/skiff-scheduler is only
// main; tests run the same program in-process.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/certs"
	"skiff.dev/internal/client"
	"skiff.dev/internal/leaderelection"
	"skiff.dev/internal/serving"
	"skiff.dev/internal/tracing"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/plugins"
	"skiff.dev/services/scheduler/scheduler"
)

// Options are the program's settings, from flags.
type Options struct {
	API client.Config // the apiserver: address, CA, credentials
	// RotateCertificates renews API's client certificate (certs.Dial).
	RotateCertificates bool
	ConfigFile         string // the policy file; "" for the defaults
	MetricsListen      string // "" disables /metrics, /healthz, /readyz
	LogLevel           string

	LeaderElect    bool
	LeaderElection leaderelection.Config
	// set records which leader election flags were given, so that the
	// policy file's leaderElection section fills only the others.
	set map[string]bool

	// Policy, when set, is used instead of loading ConfigFile.
	Policy *config.Configuration

	Tracing tracing.Options // --tracing-*

	// DialOptions are added to the apiserver connection (tests).
	DialOptions []grpc.DialOption
}

// ParseFlags reads args into Options. It returns flag.ErrHelp after
// printing the usage for -h/--help.
func ParseFlags(args []string, out io.Writer) (*Options, error) {
	if out == nil {
		out = os.Stderr
	}
	fs := flag.NewFlagSet("skiff-scheduler", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, `Usage: skiff-scheduler [flags]

Watches pods without a node, filters the nodes that fit, scores them, and
binds each pod to the best one. What runs at each step is set by the
policy file (--config, a KubeSchedulerConfiguration): plugins per
extension point, score weights, percentageOfNodesToScore, and one profile
per schedulerName. With --leader-elect only one of several copies
schedules at a time; the others keep their caches warm.
Metrics on --metrics-listen at /metrics; /healthz and /readyz beside them.

It reaches the apiserver at --server over TLS, verified with --tls-ca-file,
as the user of its client certificate (--tls-cert-file and --tls-key-file,
issued with "skiff-apiserver certs issue --cn system:kube-scheduler") or
of a bearer token (--token-file); --insecure dials a development
apiserver in plain text.

Flags:
`)
		fs.PrintDefaults()
	}
	o := &Options{}
	o.API.AddFlags(fs, "127.0.0.1:6443")
	fs.BoolVar(&o.RotateCertificates, "rotate-certificates", false, certs.RotateFlagUsage)
	o.Tracing.AddFlags(fs, 0)
	fs.StringVar(&o.ConfigFile, "config", "", "the scheduler policy file (KubeSchedulerConfiguration YAML); empty for the defaults")
	fs.StringVar(&o.MetricsListen, "metrics-listen", "0.0.0.0:10259", "HTTP address for /metrics, /healthz and /readyz (empty disables)")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	le := &o.LeaderElection
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "schedule only while holding the leader Lease")
	fs.StringVar(&le.Lock.Namespace, "leader-elect-resource-namespace", "kube-system", "namespace of the leader Lease")
	fs.StringVar(&le.Lock.Name, "leader-elect-resource-name", "skiff-scheduler", "name of the leader Lease")
	fs.StringVar(&le.Identity, "leader-elect-identity", leaderelection.DefaultIdentity(), "this member's name in the Lease: unique among the candidates and the same after a restart, so that a restarted member takes its Lease back at once (default: the host name)")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", leaderelection.DefaultLeaseDuration, "how long standbys wait after the Lease last changed before taking it over")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", leaderelection.DefaultRenewDeadline, "how long the leader keeps scheduling without renewing before it stops")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", leaderelection.DefaultRetryPeriod, "interval between attempts to acquire or renew the Lease")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q (see --help)", fs.Args())
	}
	if err := o.Tracing.Validate(); err != nil {
		return nil, err
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	return o, nil
}

// LoadPolicy reads --config (or returns the defaults) and lets its
// leaderElection section fill the leader election settings no flag set.
func LoadPolicy(o *Options) (*config.Configuration, error) {
	known, err := plugins.Known(plugins.NewRegistry())
	if err != nil {
		return nil, err
	}
	if o.ConfigFile == "" {
		return config.Default(known), nil
	}
	p, err := config.Load(o.ConfigFile, known)
	if err != nil {
		return nil, err
	}
	fe, le := p.LeaderElection, &o.LeaderElection
	fill := func(flagName string, apply func()) {
		if !o.set[flagName] {
			apply()
		}
	}
	if fe.LeaderElect != nil {
		fill("leader-elect", func() { o.LeaderElect = *fe.LeaderElect })
	}
	if fe.LeaseDuration > 0 {
		fill("leader-elect-lease-duration", func() { le.LeaseDuration = fe.LeaseDuration })
	}
	if fe.RenewDeadline > 0 {
		fill("leader-elect-renew-deadline", func() { le.RenewDeadline = fe.RenewDeadline })
	}
	if fe.RetryPeriod > 0 {
		fill("leader-elect-retry-period", func() { le.RetryPeriod = fe.RetryPeriod })
	}
	if fe.ResourceNamespace != "" {
		fill("leader-elect-resource-namespace", func() { le.Lock.Namespace = fe.ResourceNamespace })
	}
	if fe.ResourceName != "" {
		fill("leader-elect-resource-name", func() { le.Lock.Name = fe.ResourceName })
	}
	return p, nil
}

// Run loads the policy (a bad one fails here, before anything starts),
// connects to the apiserver and schedules until ctx ends (nil) or, with
// leader election, until the Lease is lost (an error: exit and start
// again as a candidate). ready, when not nil, receives the metrics
// address once it listens.
func Run(ctx context.Context, o *Options, log *zap.Logger, ready func(metricsAddr string)) error {
	policy := o.Policy
	if policy == nil {
		p, err := LoadPolicy(o)
		if err != nil {
			return err
		}
		policy = p
	}
	reg := serving.NewRegistry()

	tr, err := tracing.New(ctx, o.Tracing, "skiff-scheduler", log)
	if err != nil {
		return err
	}
	defer tr.Stop(log)
	conn, closeConn, err := certs.Dial(o.API, o.RotateCertificates, log, append(tr.DialOptions(), o.DialOptions...)...)
	if err != nil {
		return err
	}
	defer closeConn()
	sched, err := scheduler.New(conn, scheduler.Config{Policy: policy, Logger: log, Registerer: reg})
	if err != nil {
		return err
	}
	log.Info("starting", zap.String("server", o.API.Server), zap.String("config", o.ConfigFile),
		zap.Strings("profiles", sched.Profiles()), zap.Bool("leaderElect", o.LeaderElect),
		zap.String("identity", o.LeaderElection.Identity))

	var addr string
	if o.MetricsListen != "" {
		srv, err := serving.Start(serving.Options{Addr: o.MetricsListen, Registry: reg, Logger: log, Ready: func() error {
			if !sched.HasSynced() {
				return errors.New("informers not synced")
			}
			return nil
		}})
		if err != nil {
			return fmt.Errorf("--metrics-listen: %w", err)
		}
		defer srv.Close()
		addr = srv.Addr()
	}
	if ready != nil {
		ready(addr)
	}

	if !o.LeaderElect {
		return sched.Run(ctx)
	}
	// A standby keeps its cache warm, so that it schedules at once when it
	// takes over.
	ictx, stopInformers := context.WithCancel(ctx)
	defer func() { stopInformers(); sched.WaitInformers() }()
	sched.StartInformers(ictx)

	le := o.LeaderElection
	le.Client = client.Leases(conn)
	le.Logger = log.Named("leaderelection")
	le.Registerer = reg
	var runErr error
	err = leaderelection.Run(ctx, le, func(lctx context.Context) {
		runErr = sched.Run(lctx)
	})
	if err != nil {
		return err
	}
	return runErr
}
