// Package app is skiff-controller-manager's program: its flags, the
// catalogue of controllers, and Run, which connects to the apiserver, serves
// metrics and health, and runs the manager. cmd/skiff-controller-manager is
// only main; tests run the same program in-process.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"skiff.dev/internal/certs"
	"skiff.dev/internal/client"
	"skiff.dev/internal/leaderelection"
	"skiff.dev/internal/serving"
	"skiff.dev/internal/tracing"
	"skiff.dev/services/controller-manager/certificates"
	"skiff.dev/services/controller-manager/cronjob"
	"skiff.dev/services/controller-manager/daemonset"
	"skiff.dev/services/controller-manager/deployment"
	"skiff.dev/services/controller-manager/disruption"
	"skiff.dev/services/controller-manager/endpointslice"
	"skiff.dev/services/controller-manager/garbagecollector"
	"skiff.dev/services/controller-manager/job"
	"skiff.dev/services/controller-manager/manager"
	"skiff.dev/services/controller-manager/namespace"
	"skiff.dev/services/controller-manager/nodeipam"
	"skiff.dev/services/controller-manager/nodelifecycle"
	"skiff.dev/services/controller-manager/podgc"
	"skiff.dev/services/controller-manager/replicaset"
	"skiff.dev/services/controller-manager/resourcequota"
	"skiff.dev/services/controller-manager/rootcacertpublisher"
	"skiff.dev/services/controller-manager/serviceaccount"
	"skiff.dev/services/controller-manager/statefulset"
	"skiff.dev/services/controller-manager/tokencleaner"
	"skiff.dev/services/controller-manager/ttlafterfinished"
	"skiff.dev/services/controller-manager/volume/localpath"
	"skiff.dev/services/controller-manager/volume/persistentvolume"
	"skiff.dev/services/controller-manager/volume/protection"
)

// Builders is the catalogue of controllers, by --controllers name.
func Builders() map[string]manager.Builder {
	return map[string]manager.Builder{
		replicaset.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return replicaset.New(mc, replicaset.Options{Workers: cfg.Workers[replicaset.Name]})
		},
		deployment.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return deployment.New(mc, deployment.Options{Workers: cfg.Workers[deployment.Name]})
		},
		garbagecollector.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return garbagecollector.New(mc, garbagecollector.Options{Workers: cfg.Workers[garbagecollector.Name]})
		},
		nodelifecycle.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			tolerate := cfg.DefaultTolerationSeconds
			if tolerate == 0 {
				tolerate = -1 // the flag's 0 is "evict at once"; the Options' 0 is "the default"
			}
			return nodelifecycle.New(mc, nodelifecycle.Options{
				Workers:                  cfg.Workers[nodelifecycle.Name],
				GracePeriod:              cfg.NodeMonitorGracePeriod,
				DefaultTolerationSeconds: tolerate,
			})
		},
		nodeipam.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			o := nodeipam.Options{Workers: cfg.Workers[nodeipam.Name], NodeCIDRMaskSize: cfg.NodeCIDRMaskSize}
			if cfg.ClusterCIDR != "" {
				// ParseFlags checked it; an invalid one makes Run fail.
				o.ClusterCIDR, _ = netip.ParsePrefix(cfg.ClusterCIDR)
			}
			return nodeipam.New(mc, o)
		},
		namespace.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return namespace.New(mc, namespace.Options{Workers: cfg.Workers[namespace.Name]})
		},
		resourcequota.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return resourcequota.New(mc, resourcequota.Options{Workers: cfg.Workers[resourcequota.Name], SyncPeriod: cfg.ResourceQuotaSyncPeriod})
		},
		endpointslice.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return endpointslice.New(mc, endpointslice.Options{Workers: cfg.Workers[endpointslice.Name],
				MaxEndpointsPerSlice: cfg.MaxEndpointsPerSlice, BatchPeriod: cfg.EndpointUpdatesBatchPeriod})
		},
		serviceaccount.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return serviceaccount.New(mc, serviceaccount.Options{Workers: cfg.Workers[serviceaccount.Name]})
		},
		rootcacertpublisher.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			p, err := rootcacertpublisher.New(mc, rootcacertpublisher.Options{RootCA: cfg.RootCA})
			if err != nil {
				return idle{why: err.Error(), log: cfg.Logger}
			}
			return p
		},
		job.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return job.New(mc, job.Options{Workers: cfg.Workers[job.Name]})
		},
		ttlafterfinished.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return ttlafterfinished.New(mc, ttlafterfinished.Options{Workers: cfg.Workers[ttlafterfinished.Name]})
		},
		cronjob.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return cronjob.New(mc, cronjob.Options{Workers: cfg.Workers[cronjob.Name]})
		},
		daemonset.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return daemonset.New(mc, daemonset.Options{Workers: cfg.Workers[daemonset.Name]})
		},
		statefulset.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return statefulset.New(mc, statefulset.Options{Workers: cfg.Workers[statefulset.Name]})
		},
		disruption.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return disruption.New(mc, disruption.Options{Workers: cfg.Workers[disruption.Name]})
		},
		persistentvolume.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return persistentvolume.New(mc, persistentvolume.Options{Workers: cfg.Workers[persistentvolume.Name]})
		},
		protection.PVCName: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return protection.NewPVCProtection(mc, protection.Options{Workers: cfg.Workers[protection.PVCName]})
		},
		protection.PVName: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return protection.NewPVProtection(mc, protection.Options{Workers: cfg.Workers[protection.PVName]})
		},
		localpath.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			return localpath.New(mc, localpath.Options{DefaultStorageClass: cfg.DefaultStorageClass})
		},
		certificates.ApprovingName: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			review, err := certificates.NewHTTPReviewer(cfg.API)
			if err != nil {
				return idle{why: "csrapproving: " + err.Error(), log: cfg.Logger}
			}
			return certificates.NewApprover(mc, review)
		},
		certificates.SigningName: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			if cfg.ClusterSigningCertFile == "" || cfg.ClusterSigningKeyFile == "" {
				return idle{why: "csrsigning: no --cluster-signing-cert-file and --cluster-signing-key-file: CSRs are not signed", log: cfg.Logger}
			}
			ca, err := certificates.LoadCA(cfg.ClusterSigningCertFile, cfg.ClusterSigningKeyFile)
			if err != nil {
				return idle{why: "csrsigning: " + err.Error(), log: cfg.Logger}
			}
			return certificates.NewSigner(mc, ca, cfg.ClusterSigningDuration)
		},
		tokencleaner.Name: func(mc *manager.Context, _ *manager.Config) manager.Controller {
			return tokencleaner.New(mc)
		},
		podgc.Name: func(mc *manager.Context, cfg *manager.Config) manager.Controller {
			threshold := cfg.TerminatedPodGCThreshold
			if threshold == 0 {
				threshold = -1 // the flag's 0 is "no limit"; the Options' 0 is "the default"
			}
			return podgc.New(mc, podgc.Options{TerminatedPodThreshold: threshold})
		},
	}
}

// Defaults are the controllers "*" stands for: all of them.
func Defaults() []string {
	return []string{replicaset.Name, deployment.Name, garbagecollector.Name, nodelifecycle.Name, nodeipam.Name, namespace.Name, resourcequota.Name, podgc.Name, endpointslice.Name,
		serviceaccount.Name, rootcacertpublisher.Name, job.Name, ttlafterfinished.Name, cronjob.Name, daemonset.Name, statefulset.Name,
		disruption.Name, persistentvolume.Name, protection.PVCName, protection.PVName, localpath.Name,
		certificates.ApprovingName, certificates.SigningName, tokencleaner.Name}
}

// idle is a controller that cannot work (root-ca-cert-publisher without a
// CA): it says why once and waits.
type idle struct {
	why string
	log *zap.Logger
}

func (c idle) Run(ctx context.Context) error {
	if c.log != nil {
		c.log.Warn("controller idle", zap.String("why", c.why))
	}
	<-ctx.Done()
	return nil
}

// Options are the program's settings, from flags.
type Options struct {
	API client.Config // the apiserver: address, CA, credentials
	// RotateCertificates renews API's client certificate (certs.Dial).
	RotateCertificates bool
	MetricsListen      string // "" disables /metrics, /healthz, /readyz
	LogLevel           string
	Manager            manager.Config
	Tracing            tracing.Options // --tracing-*
	// RootCAFile is the CA bundle published as kube-root-ca.crt ("": the
	// API's CA, --tls-ca-file).
	RootCAFile string
}

// workersFlags maps --concurrent-<x>-syncs to controller names.
var workersFlags = []struct{ flag, controller string }{
	{"concurrent-replicaset-syncs", replicaset.Name},
	{"concurrent-deployment-syncs", deployment.Name},
	{"concurrent-gc-syncs", garbagecollector.Name},
	{"concurrent-node-syncs", nodelifecycle.Name},
	{"concurrent-namespace-syncs", namespace.Name},
	{"concurrent-resource-quota-syncs", resourcequota.Name},
	{"concurrent-service-endpoint-syncs", endpointslice.Name},
	{"concurrent-job-syncs", job.Name},
	{"concurrent-ttl-after-finished-syncs", ttlafterfinished.Name},
	{"concurrent-cron-job-syncs", cronjob.Name},
	{"concurrent-daemonset-syncs", daemonset.Name},
	{"concurrent-statefulset-syncs", statefulset.Name},
}

// ParseFlags reads args into Options. It returns flag.ErrHelp after printing
// the usage for -h/--help.
func ParseFlags(args []string, out io.Writer) (*Options, error) {
	if out == nil {
		out = os.Stderr
	}
	fs := flag.NewFlagSet("skiff-controller-manager", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, `Usage: skiff-controller-manager [flags]

Runs Skiff's control loops against the apiserver: Deployments roll out
through ReplicaSets to Pods, the garbage collector deletes what lost its
owner, the node lifecycle controller taints and evicts nodes whose Lease
stops, and the node IPAM controller gives every Node a pod subnet
(spec.podCIDR) cut from --cluster-cidr, the namespace controller deletes
what is in a deleted namespace, the resourcequota controller keeps
ResourceQuota usage true, and the pod garbage collector (podgc) deletes the
pods of deleted nodes and terminated pods beyond
--terminated-pod-gc-threshold. With --leader-elect only one of several copies works at a time.
Metrics on --metrics-listen at /metrics; /healthz and /readyz beside them.

It reaches the apiserver at --server over TLS, verified with --tls-ca-file,
as the user of its client certificate (--tls-cert-file and --tls-key-file,
issued with "skiff-apiserver certs issue --cn system:kube-controller-manager")
or of a bearer token (--token-file); --insecure dials a development
apiserver in plain text.

Controllers: %s ("*" = all; "-name" removes one).

Flags:
`, strings.Join(Defaults(), ", "))
		fs.PrintDefaults()
	}
	o := &Options{}
	var controllers string
	o.API.AddFlags(fs, "127.0.0.1:6443")
	fs.BoolVar(&o.RotateCertificates, "rotate-certificates", false, certs.RotateFlagUsage)
	o.Tracing.AddFlags(fs, 0)
	fs.StringVar(&o.MetricsListen, "metrics-listen", "0.0.0.0:10257", "HTTP address for /metrics, /healthz and /readyz (empty disables)")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&controllers, "controllers", "*", "comma-separated controllers to run")
	workers := map[string]*int{}
	for _, w := range workersFlags {
		workers[w.controller] = fs.Int(w.flag, 0, "workers of the "+w.controller+" controller (0: its default)")
	}
	m := &o.Manager
	fs.BoolVar(&m.LeaderElect, "leader-elect", true, "run the controllers only while holding the leader Lease")
	fs.StringVar(&m.LeaderElection.Lock.Namespace, "leader-elect-resource-namespace", "kube-system", "namespace of the leader Lease")
	fs.StringVar(&m.LeaderElection.Lock.Name, "leader-elect-resource-name", "skiff-controller-manager", "name of the leader Lease")
	fs.StringVar(&m.LeaderElection.Identity, "leader-elect-identity", leaderelection.DefaultIdentity(), "this member's name in the Lease: unique among the candidates and the same after a restart, so that a restarted member takes its Lease back at once (default: the host name)")
	fs.DurationVar(&m.LeaderElection.LeaseDuration, "leader-elect-lease-duration", leaderelection.DefaultLeaseDuration, "how long standbys wait after the Lease last changed before taking it over")
	fs.DurationVar(&m.LeaderElection.RenewDeadline, "leader-elect-renew-deadline", leaderelection.DefaultRenewDeadline, "how long the leader keeps working without renewing before it stops")
	fs.DurationVar(&m.LeaderElection.RetryPeriod, "leader-elect-retry-period", leaderelection.DefaultRetryPeriod, "interval between attempts to acquire or renew the Lease")
	fs.DurationVar(&m.NodeMonitorGracePeriod, "node-monitor-grace-period", 40*time.Second, "a node whose Lease is older than this becomes NotReady (unreachable)")
	fs.Int64Var(&m.DefaultTolerationSeconds, "default-toleration-seconds", 300, "how long pods without a toleration for unreachable/not-ready stay on such a node before eviction")
	fs.StringVar(&m.ClusterCIDR, "cluster-cidr", nodeipam.DefaultClusterCIDR, "the pods' address range, cut by the nodeipam controller into one subnet per Node (spec.podCIDR); the node agents' --cluster-cidr must match")
	fs.IntVar(&m.NodeCIDRMaskSize, "node-cidr-mask-size", nodeipam.DefaultNodeCIDRMaskSize, "prefix length of each Node's pod subnet (24: 254 pod addresses per node, 256 nodes in a /16)")
	fs.DurationVar(&m.ResourceQuotaSyncPeriod, "resource-quota-sync-period", resourcequota.DefaultSyncPeriod, "recompute every ResourceQuota's status.used this often (also after deletes of pods, configmaps, replicasets and deployments)")
	fs.StringVar(&m.DefaultStorageClass, "default-storage-class", localpath.DefaultClassName, "the StorageClass the local-path provisioner makes at start when missing, the cluster's default (provisioner skiff.dev/local-path, WaitForFirstConsumer, reclaimPolicy Delete); \"\" makes none")
	fs.IntVar(&m.MaxEndpointsPerSlice, "max-endpoints-per-slice", endpointslice.DefaultMaxEndpointsPerSlice, "the most endpoints an EndpointSlice the endpointslice controller writes holds (1 to 1000)")
	fs.DurationVar(&m.EndpointUpdatesBatchPeriod, "endpoint-updates-batch-period", 0, "how long the endpointslice controller delays a Service's sync after a pod change, so that more changes share one write (0: none; the queue coalesces what arrives meanwhile)")
	fs.IntVar(&m.TerminatedPodGCThreshold, "terminated-pod-gc-threshold", podgc.DefaultTerminatedPodThreshold, "terminated pods (Succeeded or Failed) that may exist before the pod garbage collector deletes the oldest (0: no limit)")
	fs.StringVar(&o.RootCAFile, "root-ca-file", "", "CA bundle (PEM) the root-ca-cert-publisher publishes as ConfigMap kube-root-ca.crt (key ca.crt) in every namespace, for pods to verify the apiserver (default: --tls-ca-file)")
	fs.StringVar(&m.ClusterSigningCertFile, "cluster-signing-cert-file", "", "CA certificate (PEM) the csrsigning controller signs approved CertificateSigningRequests of the kubernetes.io/kube-apiserver-client-kubelet, kubelet-serving and kube-apiserver-client signers with (empty: it signs nothing), e.g. <apiserver pki-dir>/ca.crt; read again at each signing, so a CA put in its place is used without a restart")
	fs.StringVar(&m.ClusterSigningKeyFile, "cluster-signing-key-file", "", "private key (PEM) of --cluster-signing-cert-file")
	fs.DurationVar(&m.ClusterSigningDuration, "cluster-signing-duration", certificates.DefaultSigningDuration, "the longest certificate csrsigning issues; a request's spec.expirationSeconds may shorten it (to 10 minutes at least); never beyond the CA's own expiry")
	fs.DurationVar(&m.Resync, "resync-period", 0, "replay every cached object to the controllers at this period (0: never)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q (see --help)", fs.Args())
	}
	m.Controllers = strings.Split(controllers, ",")
	m.Workers = map[string]int{}
	for _, w := range workersFlags {
		if n := *workers[w.controller]; n != 0 {
			if n < 0 {
				return nil, fmt.Errorf("--%s: %d, must be at least 1", w.flag, n)
			}
			m.Workers[w.controller] = n
		}
	}
	if m.NodeMonitorGracePeriod <= 0 {
		return nil, fmt.Errorf("--node-monitor-grace-period: %v, must be positive", m.NodeMonitorGracePeriod)
	}
	if m.ResourceQuotaSyncPeriod <= 0 {
		return nil, fmt.Errorf("--resource-quota-sync-period: %v, must be positive", m.ResourceQuotaSyncPeriod)
	}
	if m.TerminatedPodGCThreshold < 0 {
		return nil, fmt.Errorf("--terminated-pod-gc-threshold: %d, must be 0 (no limit) or more", m.TerminatedPodGCThreshold)
	}
	if m.MaxEndpointsPerSlice < 1 || m.MaxEndpointsPerSlice > endpointslice.MaxMaxEndpointsPerSlice {
		return nil, fmt.Errorf("--max-endpoints-per-slice: %d, must be between 1 and %d", m.MaxEndpointsPerSlice, endpointslice.MaxMaxEndpointsPerSlice)
	}
	if m.EndpointUpdatesBatchPeriod < 0 {
		return nil, fmt.Errorf("--endpoint-updates-batch-period: %v, must be 0 or more", m.EndpointUpdatesBatchPeriod)
	}
	if m.DefaultTolerationSeconds < 0 {
		return nil, fmt.Errorf("--default-toleration-seconds: %d, must be 0 or more", m.DefaultTolerationSeconds)
	}
	if (m.ClusterSigningCertFile == "") != (m.ClusterSigningKeyFile == "") {
		return nil, errors.New("--cluster-signing-cert-file and --cluster-signing-key-file go together")
	}
	if m.ClusterSigningDuration <= 0 {
		return nil, fmt.Errorf("--cluster-signing-duration: %v, must be positive", m.ClusterSigningDuration)
	}
	if err := checkNodeIPAM(m.ClusterCIDR, m.NodeCIDRMaskSize); err != nil {
		return nil, err
	}
	if err := o.Tracing.Validate(); err != nil {
		return nil, err
	}
	return o, nil
}

// checkNodeIPAM checks --cluster-cidr and --node-cidr-mask-size.
func checkNodeIPAM(cluster string, mask int) error {
	p, err := netip.ParsePrefix(cluster)
	if err != nil {
		return fmt.Errorf("--cluster-cidr %q: not a CIDR (e.g. %s)", cluster, nodeipam.DefaultClusterCIDR)
	}
	if p != p.Masked() {
		return fmt.Errorf("--cluster-cidr %q: has bits set beyond its /%d prefix (did you mean %s?)", cluster, p.Bits(), p.Masked())
	}
	if _, err := (nodeipam.Options{ClusterCIDR: p, NodeCIDRMaskSize: mask}).NewSet(); err != nil {
		return fmt.Errorf("--node-cidr-mask-size %d with --cluster-cidr %s: %w", mask, cluster, err)
	}
	return nil
}

// Run connects to the apiserver and runs the manager until ctx ends.
// ready, when not nil, receives the metrics address once it listens.
func Run(ctx context.Context, o *Options, log *zap.Logger, ready func(metricsAddr string)) error {
	reg := serving.NewRegistry()
	o.Manager.Logger = log
	if o.Manager.RootCA == nil {
		rootCA, err := readRootCA(o)
		if err != nil {
			return err
		}
		o.Manager.RootCA = rootCA
	}
	o.Manager.Registerer = reg
	o.Manager.API = o.API

	tr, err := tracing.New(ctx, o.Tracing, "skiff-controller-manager", log)
	if err != nil {
		return err
	}
	defer tr.Stop(log)
	conn, closeConn, err := certs.Dial(o.API, o.RotateCertificates, log, tr.DialOptions()...)
	if err != nil {
		return err
	}
	defer closeConn()
	mgr, err := manager.New(conn, o.Manager, Builders(), Defaults())
	if err != nil {
		return err
	}
	log.Info("starting", zap.String("server", o.API.Server), zap.Strings("controllers", mgr.Controllers()),
		zap.Bool("leaderElect", o.Manager.LeaderElect), zap.String("identity", o.Manager.LeaderElection.Identity))

	var addr string
	if o.MetricsListen != "" {
		srv, err := serving.Start(serving.Options{Addr: o.MetricsListen, Registry: reg, Logger: log, Ready: func() error {
			if !mgr.Synced() {
				return errors.New("informers not synced (or waiting for leadership)")
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
	return mgr.Run(ctx)
}

// readRootCA is the CA bundle of --root-ca-file, else the API's CA
// (--tls-ca-file or the config's CA data); nil when there is none.
func readRootCA(o *Options) ([]byte, error) {
	file := o.RootCAFile
	if file == "" {
		if o.API.CAData != nil {
			return o.API.CAData, nil
		}
		file = o.API.CAFile
	}
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--root-ca-file: %w", err)
	}
	return b, nil
}
