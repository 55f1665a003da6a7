// Package app is skiff-node-agent's program: its flags and Run, which
// connects to the apiserver and the container runtime, serves the
// NodeAgent gRPC service (logs) and /metrics, /healthz, /readyz, and runs
// the agent. cmd/skiff-node-agent is only main; tests run the same
// program in-process.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/client"
	"skiff.dev/internal/grpcmetrics"
	"skiff.dev/internal/serving"
	"skiff.dev/internal/tracing"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/node-agent/agent"
	"skiff.dev/services/node-agent/cri"
	"skiff.dev/services/node-agent/network"
)

// Options are the program's settings, from flags.
type Options struct {
	// API is the apiserver: address, CA, credentials (--server, --tls-*, --token-file, --insecure).
	API client.Config
	// Serving secures the NodeAgent service (--serving-*).
	Serving ServingTLS
	// Join makes the node join with a bootstrap token (--join, --token,
	// --ca-cert-hash, --cert-dir).
	Join                  JoinOptions
	NodeName              string
	RuntimeEndpoint       string
	RuntimeRequestTimeout time.Duration
	Listen                string // the NodeAgent gRPC service
	MetricsListen         string // "" disables /metrics, /healthz, /readyz
	LogLevel              string

	NodeIP  string
	RootDir string
	// LocalVolumeRoot holds the local-path provisioner's volumes.
	LocalVolumeRoot string
	PodLogDir       string
	CgroupRoot      string
	Labels          map[string]string
	Taints          []*corev1.Taint
	Capacity        map[string]string
	MaxPods         int

	ManagePodNetwork bool
	CNIConfDir       string
	ClusterCIDR      netip.Prefix
	// PodNetworkBackend is how other nodes' pod subnets are reached
	// (--pod-network-backend); VXLAN configures the vxlan one.
	PodNetworkBackend network.Backend
	VXLAN             network.VXLAN

	LeaseDuration          time.Duration
	LeaseRenewInterval     time.Duration
	NodeStatusUpdatePeriod time.Duration
	RelistPeriod           time.Duration
	Workers                int
	MaxParallelStarts      int
	CrashLoopBackOff       time.Duration
	CrashLoopBackOffMax    time.Duration
	ImagePullBackOff       time.Duration
	ImagePullBackOffMax    time.Duration

	// EvictionHard are the hard eviction thresholds (--eviction-hard),
	// checked every EvictionMonitoringInterval; MemoryPressure stays True
	// EvictionPressureTransitionPeriod after the last one met.
	EvictionHard                     []agent.Threshold
	EvictionMonitoringInterval       time.Duration
	EvictionPressureTransitionPeriod time.Duration

	// SyncFrequency: how often running pods' configMap, secret,
	// downwardAPI and projected volumes are rewritten from their sources.
	SyncFrequency time.Duration
	// SecretVolumesOnDisk: secret and projected volumes without a tmpfs.
	SecretVolumesOnDisk bool
	// SeccompProfileRoot holds Localhost seccomp profiles.
	SeccompProfileRoot string
	// AllowedUnsafeSysctls: sysctls (or prefixes with "*") allowed
	// beyond the safe set.
	AllowedUnsafeSysctls []string

	Services ServiceOptions // the service proxy and the DNS server

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
	fs := flag.NewFlagSet("skiff-node-agent", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, `Usage: skiff-node-agent [flags]

Registers this machine as a Node, renews its Lease, and runs the pods bound
to it as containers through a CRI runtime (containerd), reporting their
status. With --manage-pod-network it also sets up the pod network: the CNI
configuration for the Node's spec.podCIDR (assigned by the
controller-manager's nodeipam controller) in --cni-conf-dir, and routes to
the other nodes' pod subnets, through their InternalIPs or with
--pod-network-backend=vxlan through a VXLAN overlay (needs CAP_NET_ADMIN). Serves container logs to the apiserver (NodeAgent gRPC on --listen)
and metrics on --metrics-listen at /metrics, with /healthz and /readyz.

It reaches the apiserver at --server over TLS, verified with --tls-ca-file,
as system:node:<node> in group system:nodes: a client certificate
(--tls-cert-file, --tls-key-file) issued with "skiff-apiserver certs issue
--cn system:node:<node> --o system:nodes --san <node>", which also serves
the NodeAgent service (unless --serving-cert-file); only the apiserver's
client certificate may call that service. --insecure: plain text for both.

Or it joins with a bootstrap token: --join ADDR --token T --ca-cert-hash H
(the command "skiff-apiserver token create --print-join-command" prints)
fetches the cluster CA from ADDR, trusting it only if its hash is H, asks
for its client certificate and, once its Node is registered, its serving
certificate (CertificateSigningRequests the controller-manager approves and
signs), keeps them in --cert-dir and renews them before they expire.

Flags:
`)
		fs.PrintDefaults()
	}
	o := &Options{}
	hostname, _ := os.Hostname()
	o.API.AddFlags(fs, "127.0.0.1:6443")
	o.Tracing.AddFlags(fs, 0)
	o.Serving.AddFlags(fs)
	o.Join.AddFlags(fs)
	o.Services.addFlags(fs)
	fs.StringVar(&o.NodeName, "node-name", strings.ToLower(hostname), "the Node's name")
	fs.StringVar(&o.RuntimeEndpoint, "container-runtime-endpoint", cri.DefaultEndpoint, "the CRI runtime's endpoint (unix:///path/to/socket)")
	fs.DurationVar(&o.RuntimeRequestTimeout, "runtime-request-timeout", cri.DefaultTimeout, "timeout of each runtime call but image pulls")
	fs.StringVar(&o.Listen, "listen", "0.0.0.0:10250", "address of the NodeAgent gRPC service (its port is advertised in the Node's status)")
	fs.StringVar(&o.MetricsListen, "metrics-listen", "0.0.0.0:10248", "HTTP address for /metrics, /healthz and /readyz (empty disables)")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.NodeIP, "node-ip", "", "the Node's InternalIP (default: the IPv4 address of the default route's interface, as the kubelet chooses it)")
	fs.StringVar(&o.RootDir, "root-dir", agent.DefaultRootDir, "directory of the pods' volumes")
	fs.StringVar(&o.LocalVolumeRoot, "local-volume-root", agent.DefaultLocalVolumeRoot, "directory of the node's local-path persistent volumes (announced in the Node's annotation skiff.dev/local-volume-root; the provisioner makes each volume <dir>/pvc-<uid>_<namespace>_<claim>)")
	fs.StringVar(&o.PodLogDir, "pod-log-dir", agent.DefaultPodLogDir, "directory of the containers' logs")
	fs.StringVar(&o.CgroupRoot, "cgroup-root", "", "parent cgroup of a cgroup per pod (empty: the runtime's default)")
	fs.Func("labels", "labels added to the Node: k=v,k2=v2", func(s string) error {
		l, err := ParseLabels(s)
		o.Labels = l
		return err
	})
	fs.Func("register-with-taints", "the Node's taints at registration: key=value:Effect,key:Effect", func(s string) error {
		t, err := ParseTaints(s)
		o.Taints = t
		return err
	})
	fs.Func("capacity", "capacity overriding the machine's: cpu=4,memory=8Gi", func(s string) error {
		c, err := ParseLabels(s)
		o.Capacity = c
		return err
	})
	fs.IntVar(&o.MaxPods, "max-pods", agent.DefaultMaxPods, "pods capacity")
	fs.BoolVar(&o.ManagePodNetwork, "manage-pod-network", false, "write the CNI configuration for the Node's spec.podCIDR into --cni-conf-dir and keep routes to the other nodes' pod subnets through their InternalIPs; the node is NotReady until the configuration is written (off: the CNI configuration and routes are someone else's)")
	fs.StringVar(&o.CNIConfDir, "cni-conf-dir", network.DefaultConfDir, "where --manage-pod-network writes "+network.ConflistName+" (the container runtime's CNI configuration directory)")
	clusterCIDR := fs.String("cluster-cidr", network.DefaultClusterCIDR, "every node's pod subnets lie in this range (the controller-manager's --cluster-cidr): --manage-pod-network only adds and removes routes to subnets inside it")
	backend := fs.String("pod-network-backend", string(network.BackendRoutes), "how --manage-pod-network reaches the other nodes' pod subnets: routes (a route through each node's InternalIP: the nodes share an L2 segment) or vxlan (a VXLAN device "+network.VXLANDevice+" bound to the InternalIP, its MAC published in the Node's annotation "+network.AnnVTEPMAC+"; the nodes only need to reach each other's --vxlan-port over UDP), the same on every node")
	fs.IntVar(&o.VXLAN.VNI, "vxlan-vni", network.DefaultVNI, "the VXLAN network identifier of --pod-network-backend=vxlan, the same on every node")
	fs.IntVar(&o.VXLAN.Port, "vxlan-port", network.DefaultVXLANPort, "the UDP port of --pod-network-backend=vxlan, the same on every node (8472, flannel's and the Linux kernel's historical default; IANA's is 4789)")
	fs.DurationVar(&o.LeaseDuration, "lease-duration", agent.DefaultLeaseDuration, "the node Lease's duration")
	fs.DurationVar(&o.LeaseRenewInterval, "lease-renew-interval", agent.DefaultLeaseRenewInterval, "how often the node Lease is renewed")
	fs.DurationVar(&o.NodeStatusUpdatePeriod, "node-status-update-frequency", agent.DefaultNodeStatusUpdatePeriod, "how often the runtime's readiness is checked for the Node's Ready condition")
	fs.DurationVar(&o.RelistPeriod, "relist-period", agent.DefaultRelistPeriod, "how often the runtime is relisted to notice container changes")
	fs.DurationVar(&o.SyncFrequency, "sync-frequency", agent.DefaultVolumeSyncPeriod, "how often running pods' configMap, secret, downwardAPI and projected volumes are rewritten from their sources (an update reaches the files within it)")
	fs.StringVar(&o.SeccompProfileRoot, "seccomp-profile-root", agent.DefaultSeccompProfileRoot, "directory of the seccomp profiles pods name with seccompProfile type Localhost (localhostProfile is a path under it)")
	fs.Func("allowed-unsafe-sysctls", "sysctls or sysctl prefixes ending in * (net.core.*) pods may set beyond the safe set, comma-separated; a pod with another is rejected (Failed, reason SysctlForbidden)", func(s string) error {
		o.AllowedUnsafeSysctls = nil
		for _, v := range strings.Split(s, ",") {
			if v = strings.TrimSpace(v); v != "" {
				o.AllowedUnsafeSysctls = append(o.AllowedUnsafeSysctls, v)
			}
		}
		return nil
	})
	fs.BoolVar(&o.SecretVolumesOnDisk, "secret-volumes-on-disk", false, "write secret and projected volumes to plain directories under --root-dir instead of a tmpfs each (for an agent that cannot mount: without CAP_SYS_ADMIN)")
	fs.IntVar(&o.Workers, "pod-workers", agent.DefaultWorkers, "pods synced in parallel")
	fs.IntVar(&o.MaxParallelStarts, "max-parallel-pod-starts", 0, "syncs creating sandboxes or starting containers at once (0: 4 per CPU; negative: no bound)")
	fs.DurationVar(&o.CrashLoopBackOff, "crashloop-backoff", agent.DefaultCrashLoopBackOff, "first delay before restarting a container that keeps failing (doubles each time)")
	fs.DurationVar(&o.CrashLoopBackOffMax, "crashloop-backoff-max", agent.DefaultCrashLoopBackOffMax, "longest crash-loop delay")
	fs.DurationVar(&o.ImagePullBackOff, "image-pull-backoff", agent.DefaultImagePullBackOff, "first delay before pulling an image again after a failure (doubles each time)")
	fs.DurationVar(&o.ImagePullBackOffMax, "image-pull-backoff-max", agent.DefaultImagePullBackOffMax, "longest image pull delay")
	o.EvictionHard, _ = agent.ParseEvictionHard(agent.DefaultEvictionHard)
	fs.Func("eviction-hard", "hard eviction thresholds, the kubelet's syntax: memory.available<100Mi or memory.available<10% (the only signal Skiff implements); below one the node reports MemoryPressure, refuses BestEffort pods and evicts one pod per --eviction-monitoring-interval; empty: none (default "+agent.DefaultEvictionHard+")", func(s string) error {
		ts, err := agent.ParseEvictionHard(s)
		o.EvictionHard = ts
		return err
	})
	fs.DurationVar(&o.EvictionMonitoringInterval, "eviction-monitoring-interval", agent.DefaultEvictionMonitoringInterval, "how often the eviction thresholds are checked")
	fs.DurationVar(&o.EvictionPressureTransitionPeriod, "eviction-pressure-transition-period", agent.DefaultEvictionPressureTransitionPeriod, "how long MemoryPressure stays True after the last threshold met")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q (see --help)", fs.Args())
	}
	if o.NodeName == "" {
		return nil, errors.New("--node-name: required (the hostname is unknown)")
	}
	serverSet := false
	fs.Visit(func(f *flag.Flag) { serverSet = serverSet || (f.Name == "server" && f.Value.String() != "") })
	if err := o.Join.check(o, serverSet); err != nil {
		return nil, err
	}
	if err := o.Tracing.Validate(); err != nil {
		return nil, err
	}
	if err := o.Services.check(); err != nil {
		return nil, err
	}
	p, err := netip.ParsePrefix(*clusterCIDR)
	if err != nil {
		return nil, fmt.Errorf("--cluster-cidr %q: not a CIDR (e.g. %s)", *clusterCIDR, network.DefaultClusterCIDR)
	}
	if p != p.Masked() {
		return nil, fmt.Errorf("--cluster-cidr %q: has bits set beyond its /%d prefix (did you mean %s?)", *clusterCIDR, p.Bits(), p.Masked())
	}
	o.ClusterCIDR = p
	if o.PodNetworkBackend, err = network.ParseBackend(*backend); err != nil {
		return nil, fmt.Errorf("--pod-network-backend: %w", err)
	}
	if o.VXLAN.VNI < 1 || o.VXLAN.VNI > 1<<24-1 {
		return nil, fmt.Errorf("--vxlan-vni %d: want 1 to %d", o.VXLAN.VNI, 1<<24-1)
	}
	if o.VXLAN.Port < 1 || o.VXLAN.Port > 65535 {
		return nil, fmt.Errorf("--vxlan-port %d: want 1 to 65535", o.VXLAN.Port)
	}
	return o, nil
}

// ParseLabels parses "k=v,k2=v2".
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

// ParseTaints parses "key=value:Effect,key:Effect".
func ParseTaints(s string) ([]*corev1.Taint, error) {
	var out []*corev1.Taint
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		kv, effect, ok := strings.Cut(t, ":")
		if !ok || !slices.Contains([]string{"NoSchedule", "PreferNoSchedule", "NoExecute"}, effect) {
			return nil, fmt.Errorf("taint %q: want key[=value]:Effect with Effect NoSchedule, PreferNoSchedule or NoExecute", t)
		}
		k, v, _ := strings.Cut(kv, "=")
		if k == "" {
			return nil, fmt.Errorf("taint %q: empty key", t)
		}
		out = append(out, &corev1.Taint{Key: k, Value: v, Effect: effect})
	}
	return out, nil
}

// Addrs are the addresses the program serves, once it listens.
type Addrs struct {
	GRPC    string // the NodeAgent service
	Metrics string // "" when disabled
	DNS     string // the DNS server's (UDP and TCP), "" without one
}

// Run connects to the apiserver and the runtime, serves the NodeAgent
// service and the metrics, and runs the agent until ctx ends (nil). ready,
// when not nil, receives the addresses once they listen.
func Run(ctx context.Context, o *Options, log *zap.Logger, ready func(Addrs)) error {
	reg := serving.NewRegistry()
	jn, err := o.join(ctx, log)
	if err != nil {
		return err
	}
	serverOpts, err := o.serverOptions(jn)
	if err != nil {
		return err
	}
	tr, err := tracing.New(ctx, o.Tracing, "skiff-node-agent", log)
	if err != nil {
		return err
	}
	defer tr.Stop(log)
	// The NodeAgent service (logs, for the apiserver) and the apiserver
	// connection make spans with tracing on.
	serverOpts = append(serverOpts, tr.ServerOptions()...)
	conn, err := client.Dial(o.API, append(tr.DialOptions(), o.DialOptions...)...)
	if err != nil {
		return err
	}
	defer conn.Close()
	if jn != nil {
		certsCtx, stopCerts := context.WithCancel(ctx)
		certsDone := make(chan struct{})
		go func() { defer close(certsDone); jn.run(certsCtx, conn, o.NodeName) }()
		defer func() { stopCerts(); <-certsDone }()
	}
	rconn, err := cri.Dial(o.RuntimeEndpoint)
	if err != nil {
		return fmt.Errorf("--container-runtime-endpoint: %w", err)
	}
	defer rconn.Close()
	l, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	defer l.Close()
	clusterDNS, domain, resolvConf := o.Services.agentDNS()
	a, err := agent.New(agent.Config{
		NodeName: o.NodeName, API: conn, Runtime: rconn, RuntimeTimeout: o.RuntimeRequestTimeout,
		RootDir: o.RootDir, LocalVolumeRoot: o.LocalVolumeRoot, PodLogDir: o.PodLogDir, CgroupRoot: o.CgroupRoot,
		NodeIP: o.NodeIP, Port: int32(l.Addr().(*net.TCPAddr).Port),
		Labels: o.Labels, Taints: o.Taints, Capacity: o.Capacity, MaxPods: o.MaxPods,
		ManagePodNetwork: o.ManagePodNetwork, CNIConfDir: o.CNIConfDir, ClusterCIDR: o.ClusterCIDR,
		PodNetworkBackend: o.PodNetworkBackend, VXLAN: o.VXLAN,
		ClusterDNS: clusterDNS, ClusterDomain: domain, ResolvConf: resolvConf,
		LeaseDuration: o.LeaseDuration, LeaseRenewInterval: o.LeaseRenewInterval,
		NodeStatusUpdatePeriod: o.NodeStatusUpdatePeriod, RelistPeriod: o.RelistPeriod, Workers: o.Workers,
		VolumeSyncPeriod: o.SyncFrequency, SecretVolumesOnDisk: o.SecretVolumesOnDisk, MaxParallelStarts: o.MaxParallelStarts,
		SeccompProfileRoot: o.SeccompProfileRoot, AllowedUnsafeSysctls: o.AllowedUnsafeSysctls,
		TokenSource:      agent.APITokenSource(conn),
		CrashLoopBackOff: o.CrashLoopBackOff, CrashLoopBackOffMax: o.CrashLoopBackOffMax,
		ImagePullBackOff: o.ImagePullBackOff, ImagePullBackOffMax: o.ImagePullBackOffMax,
		EvictionHard: o.EvictionHard, EvictionMonitoringInterval: o.EvictionMonitoringInterval, EvictionPressureTransitionPeriod: o.EvictionPressureTransitionPeriod,
		Logger: log, Registerer: reg,
	})
	if err != nil {
		return err
	}
	svc, err := startServices(o, conn, o.NodeIP, log, reg)
	if err != nil {
		return err
	}
	// The metrics' interceptors first: refused calls count too.
	// The API's flow-control windows (client.WindowSizes): exec stdin, cp
	// to a pod and port-forward stream bulk data in from the apiserver.
	serverOpts = append(serverOpts, grpc.InitialWindowSize(client.StreamWindowBytes), grpc.InitialConnWindowSize(client.ConnWindowBytes))
	g := grpc.NewServer(append(grpcmetrics.ServerOptions(grpcmetrics.New(reg)), serverOpts...)...)
	a.RegisterServices(g)
	served := make(chan error, 1)
	go func() { served <- g.Serve(l) }()
	defer func() {
		g.Stop()
		<-served
	}()
	addrs := Addrs{GRPC: l.Addr().String()}
	if svc != nil && svc.dns != nil {
		addrs.DNS = svc.dns.Addr()
	}
	if o.MetricsListen != "" {
		srv, err := serving.Start(serving.Options{Addr: o.MetricsListen, Registry: reg, Logger: log, Ready: a.Ready})
		if err != nil {
			return fmt.Errorf("--metrics-listen: %w", err)
		}
		defer srv.Close()
		addrs.Metrics = srv.Addr()
	}
	log.Info("starting", zap.String("node", o.NodeName), zap.String("server", o.API.Server),
		zap.String("runtime", o.RuntimeEndpoint), zap.String("listen", addrs.GRPC), zap.String("metrics", addrs.Metrics),
		zap.Bool("managePodNetwork", o.ManagePodNetwork), zap.String("podNetworkBackend", string(o.PodNetworkBackend)),
		zap.String("services", o.Services.describe()))
	if ready != nil {
		ready(addrs)
	}
	svcCtx, stopServices := context.WithCancel(ctx)
	svcDone := make(chan error, 1)
	go func() { svcDone <- svc.run(svcCtx) }()
	err = a.Run(ctx)
	stopServices()
	if serr := <-svcDone; err == nil && serr != nil {
		err = fmt.Errorf("services: %w", serr)
	}
	return err
}
