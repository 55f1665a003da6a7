// Command skiff-apiserver serves the Skiff API over gRPC, storing objects in
// an embedded etcd (or an external etcd cluster).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/client"
	"skiff.dev/internal/logging"
	"skiff.dev/internal/version"
	"skiff.dev/services/apiserver/apiserver"
)

func main() {
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "certs":
		err = runCerts(os.Args[2:], os.Stdout, os.Stderr)
	case len(os.Args) > 1 && os.Args[1] == "token":
		err = runToken(os.Args[2:], os.Stdout, os.Stderr)
	case len(os.Args) > 1 && os.Args[1] == "member":
		err = runMember(os.Args[2:], os.Stdout, os.Stderr)
	default:
		err = run(os.Args[1:])
	}
	if err != nil && !isHelp(err) {
		fmt.Fprintln(os.Stderr, "skiff-apiserver:", err)
		os.Exit(1)
	}
}

const insecureWarning = `
##########################################################################
#  WARNING: --insecure: the API is served in PLAIN TEXT and WITHOUT       #
#  AUTHENTICATION. Anyone who reaches the port may do anything.           #
#  For development only.                                                  #
##########################################################################`

// tlsOrAuthnFlags mean nothing with --insecure.
var tlsOrAuthnFlags = map[string]bool{
	"pki-dir": true, "tls-cert-file": true, "tls-key-file": true, "client-ca-file": true, "tls-san": true,
	"token-auth-file": true, "service-account-key-file": true, "service-account-issuer": true, "anonymous-auth": true,
	"node-agent-client-cert-file": true, "node-agent-client-key-file": true, "node-agent-ca-file": true,
}

func run(args []string) error {
	fs := flag.NewFlagSet("skiff-apiserver", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: skiff-apiserver [flags]
       skiff-apiserver certs init|issue [flags]   the cluster CA and certificates
       skiff-apiserver token [flags]              a service-account token
       skiff-apiserver member list [flags]         the control-plane members: etcd's members, learners, leader
       skiff-apiserver member remove [flags] NAME  a control-plane member leaves the etcd cluster

Serves the Skiff API (gRPC, with health and reflection) and stores objects in
an embedded etcd under --data-dir, or in the etcd cluster given by
--etcd-servers. Prometheus metrics are on --metrics-listen at /metrics.

The API is served over TLS and every request is authenticated: a client
certificate signed by the cluster CA (CN = user, O = groups), a bearer
token from --token-auth-file, or a service-account token. On first start
the apiserver makes the CA, its serving certificate and the
service-account key in --pki-dir (default <data-dir>/pki); issue client
certificates with "skiff-apiserver certs issue". --insecure serves plain
text without authentication, for development only.

Flags:
`)
		fs.PrintDefaults()
	}
	var cfg apiserver.Config
	var etcdServers, logLevel string
	var showVersion bool
	var gcPercent int
	var memoryLimit string
	fs.StringVar(&cfg.DataDir, "data-dir", "/var/lib/skiff", "directory of the embedded etcd's data")
	fs.StringVar(&etcdServers, "etcd-servers", "", "comma-separated client URLs of an external etcd cluster (instead of the embedded one)")
	fs.StringVar(&cfg.EtcdCAFile, "etcd-cafile", "", "CA (PEM) that verifies the external etcd's serving certificates (with --etcd-servers https://...)")
	fs.StringVar(&cfg.EtcdCertFile, "etcd-certfile", "", "client certificate (PEM) shown to the external etcd")
	fs.StringVar(&cfg.EtcdKeyFile, "etcd-keyfile", "", "private key of --etcd-certfile")
	fs.DurationVar(&cfg.EtcdDialTimeout, "etcd-dial-timeout", 10*time.Second, "how long to wait for an external etcd to answer at start")
	fs.StringVar(&cfg.Listen, "listen", "0.0.0.0:6443", "gRPC listen address")
	fs.StringVar(&cfg.MetricsListen, "metrics-listen", "0.0.0.0:6444", "HTTP address for /metrics and /healthz (empty disables)")
	fs.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.DurationVar(&cfg.CompactionInterval, "compaction-interval", 5*time.Minute, "compact etcd revisions older than one interval, every interval (0 disables)")
	fs.Int64Var(&cfg.QuotaBackendBytes, "quota-backend-bytes", 8<<30, "embedded etcd backend size quota in bytes")
	fs.Int64Var(&cfg.DefragThreshold, "defrag-threshold-bytes", 64<<20, "defragment after a compaction when at least this many bytes are free")
	fs.DurationVar(&cfg.BookmarkInterval, "bookmark-interval", time.Minute, "how often watchers that allow bookmarks receive one")
	fs.IntVar(&cfg.WatchCacheWindow, "watch-cache-window", 10000, "recent events kept per resource for watches that resume")
	fs.IntVar(&cfg.WatcherBuffer, "watcher-buffer", 1000, "events a watcher may lag behind before it is cut off")
	fs.DurationVar(&cfg.WatchBatchInterval, "watch-batch-interval", apiserver.DefaultWatchBatchInterval, "least time between two batches of events the watch caches publish (the first event after a quiet spell goes at once); a watcher sends a batch as one message, encoded once for every watcher of the same namespace and version without a selector (0: every event at once)")
	fs.IntVar(&gcPercent, "gc-percent", apiserver.DefaultGCPercent, "Go GC target percentage (GOGC); the GOGC environment variable wins when set")
	fs.StringVar(&memoryLimit, "memory-limit", "", "soft memory limit of the Go runtime (GOMEMLIMIT), a size such as 2Gi: the garbage collector works harder as the heap nears it and returns freed memory to the system; empty: GOMEMLIMIT when set, else 90% of the container's (cgroup's) memory limit when there is one; 0: none")
	fs.StringVar(&cfg.ServiceClusterIPRange, "service-cluster-ip-range", apiserver.DefaultServiceClusterIPRange, "IPv4 CIDR (/12 to /30) Services' cluster IPs are allocated from; its first address is the kubernetes Service's")
	fs.StringVar(&cfg.ServiceNodePortRange, "service-node-port-range", apiserver.DefaultServiceNodePortRange, "port range NodePort Services' node ports are allocated from")
	fs.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "the IP address the kubernetes Service's endpoint names (empty: the --listen address when it is one, else the IPv4 address of this host's default route's interface)")
	var clusterInit bool
	var clusterTokenFile string
	fs.BoolVar(&clusterInit, "cluster-init", false, "start a cluster of control-plane members that others join (--join): needs --cluster-token-file and --etcd-peer-url")
	fs.StringVar(&cfg.Cluster.Name, "etcd-name", "skiff", "this member's name in the embedded etcd cluster (unique among the members)")
	fs.StringVar(&cfg.Cluster.PeerURL, "etcd-peer-url", "", "where this member's embedded etcd listens for and is reached by the other members, e.g. https://10.0.0.1:2380 (peers talk TLS with the cluster CA; http:// with --insecure; empty: a free loopback port, a cluster of one)")
	fs.StringVar(&cfg.Cluster.Join, "join", "", "the API address (host:port) of a control-plane member to join: its etcd adds this one as a learner, promoted once in step")
	fs.StringVar(&cfg.Cluster.JoinCAFile, "join-ca-file", "", "CA certificate (PEM) of the member --join names (its serving certificate's); without it or --ca-cert-hash: plain text, for members started with --insecure")
	fs.StringVar(&cfg.Cluster.CACertHash, "ca-cert-hash", "", "sha256:<hex> pin of the cluster CA's public key (as skiff-apiserver token create --print-join-command prints it): --join fetches the CA from the member it names and keeps it only if it matches")
	fs.StringVar(&cfg.Cluster.BootstrapToken, "token", "", "with --join instead of --cluster-token-file: a bootstrap token made for control-plane members (skiff-apiserver token create --control-plane); the join gives this member the members' token, kept in --pki-dir")
	fs.StringVar(&clusterTokenFile, "cluster-token-file", "", "file holding the members' shared token: a member answers joins that present it, --join presents it")
	fs.BoolVar(&showVersion, "version", false, "print the version and exit")
	cfg.Authn.AddFlags(fs)
	cfg.Authz.AddFlags(fs)
	cfg.Admission.AddFlags(fs)
	cfg.FlowControl.AddFlags(fs)
	cfg.Audit.AddFlags(fs)
	cfg.Tracing.AddFlags(fs, 0)
	fs.StringVar(&cfg.EncryptionProviderConfig, "encryption-provider-config", "", "file with an EncryptionConfiguration (apiserver.config.k8s.io/v1): the resources it names are encrypted in etcd with its first provider (aesgcm, secretbox or identity) and read with any of them; empty: everything stored plain")
	fs.BoolVar(&cfg.AccessLog, "access-log", false, "log an info line per request: request id, user, verb, API group, resource, subresource, namespace, name, gRPC method, code (gRPC and HTTP) and duration; never request or response bodies; health checks are not logged")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (see --help)", fs.Args())
	}
	if showVersion {
		v := version.Get()
		fmt.Println("skiff-apiserver", v.GitVersion, v.GitCommit)
		return nil
	}
	if cfg.WatchBatchInterval == 0 {
		cfg.WatchBatchInterval = -1 // off (0 in Config means the default)
	}
	if etcdServers != "" {
		cfg.EtcdServers = strings.Split(etcdServers, ",")
	}
	if clusterTokenFile != "" {
		b, err := os.ReadFile(clusterTokenFile)
		if err != nil {
			return fmt.Errorf("--cluster-token-file: %w", err)
		}
		if cfg.Cluster.Token = strings.TrimSpace(string(b)); cfg.Cluster.Token == "" {
			return fmt.Errorf("--cluster-token-file %s: empty", clusterTokenFile)
		}
	}
	switch {
	case cfg.Cluster.BootstrapToken != "" && (cfg.Cluster.Join == "" || cfg.Cluster.Token != ""):
		return fmt.Errorf("--token joins with a bootstrap token: it goes with --join and without --cluster-token-file")
	case clusterInit && cfg.Cluster.Token == "":
		return fmt.Errorf("--cluster-init needs --cluster-token-file (the members' shared token)")
	case cfg.Cluster.Join != "" && cfg.Cluster.Token == "" && cfg.Cluster.BootstrapToken == "":
		return fmt.Errorf("--join needs --cluster-token-file (the members' shared token) or --token (a bootstrap token made with token create --control-plane)")
	case clusterInit && cfg.Cluster.Join != "":
		return fmt.Errorf("--cluster-init starts a cluster, --join joins one: give one of them")
	case clusterInit && cfg.Cluster.PeerURL == "":
		return fmt.Errorf("--cluster-init needs --etcd-peer-url: the address the other members reach this one's etcd at")
	case (clusterInit || cfg.Cluster.Join != "") && len(cfg.EtcdServers) > 0:
		return fmt.Errorf("--cluster-init and --join are for the embedded etcd, not --etcd-servers")
	case (cfg.EtcdCAFile != "" || cfg.EtcdCertFile != "" || cfg.EtcdKeyFile != "") && len(cfg.EtcdServers) == 0:
		return fmt.Errorf("--etcd-cafile, --etcd-certfile and --etcd-keyfile are for the external etcd of --etcd-servers")
	case cfg.Cluster.CACertHash != "" && cfg.Cluster.Join == "":
		return fmt.Errorf("--ca-cert-hash pins the CA of the member --join names: give --join too")
	case cfg.Cluster.CACertHash != "":
		if _, err := client.ParseCACertHash(cfg.Cluster.CACertHash); err != nil {
			return fmt.Errorf("--ca-cert-hash %w", err)
		}
	}
	log, err := logging.New("apiserver", logLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	memLimit, err := apiserver.ParseMemoryLimit(memoryLimit)
	if err != nil {
		return err
	}
	gogc := apiserver.TuneRuntime(gcPercent)
	memLimit, memSource := apiserver.TuneMemory(memLimit, os.DirFS("/"))
	log.Info("runtime", zap.Int("gogc", gogc), zap.Int64("memoryLimitBytes", memLimit), zap.String("memoryLimitFrom", memSource))
	cfg.Logger = log
	if !cfg.Authn.Enabled {
		fmt.Fprintln(os.Stderr, insecureWarning)
		log.Warn("INSECURE: plain-text gRPC and no authentication (--insecure): every client acts as system:unsecured, a member of system:masters")
		var ignored []string
		fs.Visit(func(f *flag.Flag) {
			if tlsOrAuthnFlags[f.Name] {
				ignored = append(ignored, "--"+f.Name)
			}
		})
		if len(ignored) > 0 {
			log.Warn("--insecure: these flags have no effect", zap.Strings("flags", ignored))
		}
	}

	srv, err := apiserver.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := srv.Run(ctx); err != nil {
		log.Error("apiserver exited", zap.Error(err))
		return err
	}
	return nil
}
