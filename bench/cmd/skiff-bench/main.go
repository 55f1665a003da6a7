// Command skiff-bench measures the control plane in one process: it starts
// the real apiserver on an embedded etcd (real fsync, fresh data directory),
// runs the chosen scenarios against it, and prints a table and one
// "BENCH <figure> <value>" line per figure. A missed target is reported as
// MISS and still exits 0; only errors exit non-zero.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"skiff.dev/bench/scenarios"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authn/pki"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "skiff-bench:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a bad command line (exit status 2).
type usageError struct{ error }

type options struct {
	scenario   string
	dataDir    string
	cpuProfile string
	memProfile string
	pprofAddr  string
	insecure   bool
	cfg        scenarios.Config
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	o := options{cfg: scenarios.DefaultConfig()}
	fs := flag.NewFlagSet("skiff-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.scenario, "scenario", "", "run the scenarios with a figure whose name starts with this prefix (\"\" = all), e.g. api, watch, etcd.put")
	fs.DurationVar(&o.cfg.Duration, "duration", o.cfg.Duration, "measured window of each throughput/latency scenario (the write scenario splits it over -rounds)")
	fs.IntVar(&o.cfg.Rounds, "rounds", o.cfg.Rounds, "alternating rounds of etcd puts and API creates in the write scenario")
	fs.DurationVar(&o.cfg.Warmup, "warmup", o.cfg.Warmup, "load before each measured window")
	fs.IntVar(&o.cfg.Clients, "clients", o.cfg.Clients, "concurrent clients of etcd.put and api.create")
	fs.IntVar(&o.cfg.Conns, "conns", o.cfg.Conns, "gRPC connections api.create spreads its clients over")
	fs.IntVar(&o.cfg.Watchers, "watchers", o.cfg.Watchers, "watchers of watch.fanout")
	fs.IntVar(&o.cfg.WatchConns, "watch-conns", o.cfg.WatchConns, "gRPC connections the watchers are spread over")
	fs.IntVar(&o.cfg.WatchWriters, "watch-writers", o.cfg.WatchWriters, "concurrent writer goroutines of watch.fanout")
	fs.IntVar(&o.cfg.WatchRate, "watch-rate", o.cfg.WatchRate, "writes per second of watch.fanout")
	fs.DurationVar(&o.cfg.WatchDuration, "watch-duration", o.cfg.WatchDuration, "how long watch.fanout writes")
	fs.IntVar(&o.cfg.RSReplicas, "rs-replicas", o.cfg.RSReplicas, "pods the ReplicaSet of controllers.rs scales to")
	fs.DurationVar(&o.cfg.RSTimeout, "rs-timeout", o.cfg.RSTimeout, "bound on the wait for controllers.rs pods to be created and ready")
	fs.IntVar(&o.cfg.SchedNodes, "sched-nodes", o.cfg.SchedNodes, "nodes of the scheduler scenario")
	fs.IntVar(&o.cfg.SchedPods, "sched-pods", o.cfg.SchedPods, "pods of the scheduler scenario")
	fs.IntVar(&o.cfg.SchedClients, "sched-clients", o.cfg.SchedClients, "concurrent pod creators of the scheduler scenario")
	fs.DurationVar(&o.cfg.SchedTimeout, "sched-timeout", o.cfg.SchedTimeout, "bound on the wait for the scheduler scenario's binds")
	fs.StringVar(&o.cfg.MemoryLimit, "memory-limit", "", "--memory-limit of the memory scenario's apiserver process (default: none given: GOMEMLIMIT or the container's limit, if any, as skiff-apiserver takes by default)")
	fs.StringVar(&o.dataDir, "data-dir", os.TempDir(), "parent of the temporary etcd data directory (put it on the disk to measure)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a pprof CPU profile of the whole run to this file")
	fs.StringVar(&o.memProfile, "memprofile", "", "write a pprof allocation profile of the whole run to this file")
	fs.BoolVar(&o.insecure, "insecure", false, "run the apiserver as --insecure does (plain text, no authentication, authorization, admission or flow control), to compare; default: skiff-apiserver's defaults (TLS, client certificates, Node,RBAC, the default admission plugins, flow control)")
	fs.StringVar(&o.pprofAddr, "pprof-addr", "", "serve net/http/pprof on this address during the run, e.g. 127.0.0.1:6060 (also turns on block and mutex profiling, which costs some CPU)")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: skiff-bench [flags]

Starts the apiserver in-process on an embedded etcd (fsync on, fresh data
directory), runs the scenarios, prints a table (figure, value, unit, target,
ok/MISS, notes) and one "BENCH <figure> <value>" line per figure.
Exit status: 0 when every scenario ran (even if a target is missed), 1 on an
error, 2 on bad flags. CPU figures are the whole process's CPU (apiserver,
etcd and the benchmark's clients share it) divided by the objects or events.

Flags:
`)
		fs.PrintDefaults()
		fmt.Fprint(stderr, "\nScenarios (a scenario runs when one of its figures starts with -scenario):\n")
		for _, s := range scenarios.All() {
			fmt.Fprintf(stderr, "  %s: %s\n", s.Name, s.Summary)
			for _, f := range s.Figures {
				target := ""
				if f.Target.Cmp != "" {
					target = "  target " + f.Target.String()
				}
				fmt.Fprintf(stderr, "      %-30s %s%s\n", f.Name, f.Unit, target)
			}
			if len(s.Needs) > 0 {
				fmt.Fprintf(stderr, "      (also runs %v)\n", s.Needs)
			}
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, usageError{err}
	}
	if fs.NArg() > 0 {
		return o, usageError{fmt.Errorf("unexpected arguments %v (see -help)", fs.Args())}
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	selected, err := scenarios.Select(scenarios.All(), o.scenario)
	if err != nil {
		return usageError{err}
	}

	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if o.memProfile != "" {
		defer func() {
			f, err := os.Create(o.memProfile)
			if err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}

	if o.pprofAddr != "" {
		lis, err := net.Listen("tcp", o.pprofAddr)
		if err != nil {
			return err
		}
		defer lis.Close()
		runtime.SetBlockProfileRate(int(time.Millisecond))
		runtime.SetMutexProfileFraction(100)
		go func() { _ = http.Serve(lis, nil) }() // net/http/pprof registers on the default mux
		fmt.Fprintf(stderr, "skiff-bench: pprof on http://%s/debug/pprof/\n", lis.Addr())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The whole process (apiserver, etcd and the clients, so also the raw
	// etcd baseline) runs with the apiserver binary's runtime settings.
	gogc := apiserver.TuneRuntime(apiserver.DefaultGCPercent)
	dir, err := os.MkdirTemp(o.dataDir, "skiff-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := apiserver.Config{
		DataDir:           dir,
		Listen:            "127.0.0.1:0",
		MetricsListen:     "",
		Logger:            zap.NewNop(),
		EtcdUnsafeNoFsync: false,
	}
	if !o.insecure {
		if err := securityDefaults(&cfg); err != nil {
			return err
		}
	}
	srv, err := apiservertest.StartConfig(cfg)
	if err != nil {
		return fmt.Errorf("starting apiserver: %w", err)
	}
	defer srv.Stop()

	etcdTLS, err := srv.EtcdClientTLS().ClientConfig()
	if err != nil {
		return fmt.Errorf("the apiserver's etcd client certificate: %w", err)
	}
	env := &scenarios.Env{
		Addr:         srv.Addr(),
		EtcdEndpoint: srv.EtcdEndpoint(),
		EtcdTLS:      etcdTLS,
		Config:       o.cfg,
		Progress:     stderr,
	}
	mode := "insecure (no TLS, authentication, authorization, admission or flow control)"
	if !o.insecure {
		if env.Client, err = benchUser(ctx, srv); err != nil {
			return err
		}
		env.ServingCert = func(host string) (tls.Certificate, error) {
			certPEM, keyPEM, err := srv.CA.Issue(pki.Request{CommonName: host, Hosts: []string{host}, Server: true}, time.Now())
			if err != nil {
				return tls.Certificate{}, err
			}
			return tls.X509KeyPair(certPEM, keyPEM)
		}
		mode = fmt.Sprintf("TLS, user %q authorized by RBAC (%s), admission %v, flow control %d/%d seats",
			benchUserName, benchBinding, cfg.Admission.Enabled(), cfg.FlowControl.MaxRequestsInflight, cfg.FlowControl.MaxMutatingRequestsInflight)
	}
	fmt.Fprintf(stderr, "skiff-bench: apiserver %s, etcd %s, data in %s; %s\n", env.Addr, env.EtcdEndpoint, dir, mode)
	load0 := loadAverage()
	rs, runErr := scenarios.Run(ctx, env, selected)
	// Print what was measured even when a later scenario failed.
	fmt.Fprintf(stdout, "# %d CPUs (GOMAXPROCS %d, GOGC %d as skiff-apiserver), 1-minute load average %s at start, %s at end; other processes on the host skew the figures\n# apiserver: %s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), gogc, load0, loadAverage(), mode)
	if err := scenarios.WriteReport(stdout, rs); err != nil {
		return err
	}
	return runErr
}

// loadAverage is the host's 1-minute load average, "?" where unknown.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}
