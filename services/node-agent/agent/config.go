package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/events"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/node-agent/network"
)

// Defaults, the kubelet's where it has one.
const (
	DefaultRootDir                = "/var/lib/skiff-node-agent"
	DefaultPodLogDir              = "/var/log/pods"
	DefaultMaxPods                = 110
	DefaultLeaseDuration          = 40 * time.Second
	DefaultLeaseRenewInterval     = 10 * time.Second
	DefaultNodeStatusUpdatePeriod = 10 * time.Second
	DefaultNodeStatusReportPeriod = 5 * time.Minute
	DefaultRelistPeriod           = time.Second
	DefaultWorkers                = 64
	DefaultCrashLoopBackOff       = 10 * time.Second
	DefaultCrashLoopBackOffMax    = 5 * time.Minute
	DefaultImagePullBackOff       = 10 * time.Second
	DefaultImagePullBackOffMax    = 5 * time.Minute
	DefaultLogFollowPoll          = 100 * time.Millisecond
	DefaultStatsTimeout           = 5 * time.Second
	DefaultUsageWindow            = time.Second
	DefaultVolumeSyncPeriod       = 30 * time.Second
	// DefaultLocalVolumeRoot holds the directories of the local-path
	// provisioner's volumes on the node (<root>/pvc-<uid>_<ns>_<claim>).
	DefaultLocalVolumeRoot = "/var/lib/skiff/volumes"
)

// NodeLeaseNamespace holds the Leases node agents renew, one per node.
const NodeLeaseNamespace = "kube-node-lease"

// Config configures an Agent. Zero fields take the defaults above.
type Config struct {
	// NodeName is the Node the agent registers and whose pods it runs.
	NodeName string
	// API is a connection to the apiserver.
	API grpc.ClientConnInterface
	// Runtime is a connection to the CRI runtime (cri.Dial).
	Runtime grpc.ClientConnInterface
	// RuntimeTimeout bounds each runtime call but image pulls.
	RuntimeTimeout time.Duration

	// RootDir holds the pods' volumes (<RootDir>/pods/<uid>/volumes).
	RootDir string
	// LocalVolumeRoot holds the local-path provisioner's volumes on this
	// node; the agent announces it in the Node's annotation
	// skiff.dev/local-volume-root, creates a volume's directory when first
	// mounted and removes it when the volume is deleted.
	LocalVolumeRoot string
	// PodLogDir holds the container logs (<PodLogDir>/<ns>_<name>_<uid>).
	PodLogDir string
	// CgroupRoot, when set, is the parent of a cgroup per pod
	// (<CgroupRoot>/pod<uid>); empty leaves it to the runtime.
	CgroupRoot string

	// NodeIP is the node's InternalIP ("": the address of the default
	// route's interface, internal/hostaddr); pods' hostIP and where the
	// apiserver reaches Port.
	NodeIP string
	// Hostname is the node's Hostname address ("": the machine's).
	Hostname string
	// Port is the port of the agent's NodeAgent gRPC service, advertised
	// in status.daemonEndpoints.kubeletEndpoint.
	Port int32
	// Labels are added to the node's (with kubernetes.io/hostname and
	// kubernetes.io/os).
	Labels map[string]string
	// Taints are the node's at registration.
	Taints []*corev1.Taint
	// Capacity overrides what the machine has (cpu, memory, pods...).
	Capacity map[string]string
	// MaxPods is the pods capacity.
	MaxPods int

	// ManagePodNetwork: the agent writes the CNI configuration for its
	// Node's spec.podCIDR into CNIConfDir and routes the other nodes' pod
	// subnets inside ClusterCIDR through their InternalIPs (package
	// network). Until the configuration is written the node reports
	// Ready=False (NetworkNotReady) and starts no pod off the host network.
	ManagePodNetwork bool
	// CNIConfDir is the CNI configuration directory (network.DefaultConfDir).
	CNIConfDir string
	// ClusterCIDR holds every node's pod subnet (network.DefaultClusterCIDR).
	ClusterCIDR netip.Prefix
	// Router changes the routing table (nil: netlink, the agent's own
	// network namespace).
	Router network.Router
	// PodNetworkBackend is how the other nodes' pod subnets are reached
	// (network.BackendRoutes if empty); VXLAN configures
	// network.BackendVXLAN.
	PodNetworkBackend network.Backend
	VXLAN             network.VXLAN

	// ClusterDNS are the nameservers of pods with dnsPolicy ClusterFirst
	// (the agent's own DNS server's address); empty: such pods get the
	// node's resolv.conf, as the kubelet does without --cluster-dns.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain (DefaultClusterDomain).
	ClusterDomain string
	// ResolvConf is the node's resolv.conf: the search domains added to
	// a ClusterFirst pod's, the resolvers of a Default pod ("": none).
	ResolvConf string

	LeaseDuration      time.Duration
	LeaseRenewInterval time.Duration
	// NodeStatusUpdatePeriod: how often the runtime's readiness is checked
	// (the node's status is written when it changes).
	NodeStatusUpdatePeriod time.Duration
	// NodeStatusReportPeriod: the node's status is written at least this
	// often even without a change.
	NodeStatusReportPeriod time.Duration
	// RelistPeriod: how often the runtime is relisted to notice changes
	// (the PLEG).
	RelistPeriod time.Duration
	// Workers: pods synced in parallel (one pod is never synced twice at
	// once).
	Workers int
	// MaxParallelStarts bounds the syncs that create sandboxes or start
	// containers at once (default 4 per CPU; negative: no bound). A
	// burst of pods then queues in the agent rather than in the runtime,
	// where dozens of concurrent sandbox creations slow every one of them.
	MaxParallelStarts int

	// Crash-loop backoff of restarted containers (base, doubling to max),
	// and backoff of failed image pulls.
	CrashLoopBackOff, CrashLoopBackOffMax time.Duration
	ImagePullBackOff, ImagePullBackOffMax time.Duration
	// LogFollowPoll: how often a followed log file is read for more.
	LogFollowPoll time.Duration
	// StatsTimeout bounds the reading of the runtime's stats for a scrape
	// of the usage metrics (container_cpu_usage_seconds_total...).
	StatsTimeout time.Duration
	// UsageWindow is the least time between the two samples of the CPU
	// counters that NodeAgent.Usage's rates come from: a call waits for
	// it unless the previous call's sample is old enough (up to a minute).
	UsageWindow time.Duration

	// EvictionHard are the hard eviction thresholds (ParseEvictionHard of
	// the kubelet's --eviction-hard; nil: the agent evicts nothing, and
	// the command's default is DefaultEvictionHard): see eviction.go.
	EvictionHard []Threshold
	// EvictionMonitoringInterval: how often the thresholds are checked, on
	// Clock (DefaultEvictionMonitoringInterval).
	EvictionMonitoringInterval time.Duration
	// EvictionPressureTransitionPeriod: how long MemoryPressure stays True
	// after the threshold was last met (DefaultEvictionPressureTransitionPeriod).
	EvictionPressureTransitionPeriod time.Duration
	// evictionObserve reads the memory the eviction manager compares
	// (observeMemory; tests put in their own).
	evictionObserve func(ctx context.Context) (memoryObservation, error)

	// VolumeSyncPeriod: how often the configMap, secret, downwardAPI and
	// projected volumes of running pods are rewritten from their sources
	// (the kubelet's sync period is about a minute).
	VolumeSyncPeriod time.Duration
	// SecretVolumesOnDisk: secret and projected volumes are plain
	// directories under RootDir, not tmpfs mounts (for an agent that
	// cannot mount: without CAP_SYS_ADMIN).
	SecretVolumesOnDisk bool

	// SeccompProfileRoot holds the seccomp profiles of type Localhost: a
	// pod's localhostProfile is a path under it (DefaultSeccompProfileRoot).
	SeccompProfileRoot string
	// AllowedUnsafeSysctls are the sysctls, or prefixes ending in "*"
	// (net.core.*), pods may set besides the safe set; a pod with another
	// is rejected (Failed, reason SysctlForbidden), as by the kubelet.
	AllowedUnsafeSysctls []string
	// TokenSource gives serviceAccountToken projections a token of the
	// pod's service account for the audience, bound to the pod (nil: pods
	// with such volumes fail to mount, with a FailedMount event saying so).
	TokenSource func(ctx context.Context, pod *corev1.Pod, audience string, expirationSeconds int64) (token string, expires time.Time, err error)

	// Clock drives backoffs, requeue delays and timestamps (a
	// workqueue.FakeClock in tests); the periodic loops (relist, lease,
	// node status, probes) run on the wall clock.
	Clock      workqueue.Clock
	Logger     *zap.Logger
	Registerer prometheus.Registerer
	// Recorder records the agent's events; nil: a broadcaster of the
	// agent's own writes them to the API.
	Recorder events.Recorder
	// ProbeDial dials for httpGet and tcpSocket probes (nil: net.Dialer).
	// Tests with a simulated runtime map pod IPs to local servers with it.
	ProbeDial func(ctx context.Context, network, addr string) (net.Conn, error)

	// machineStats reads the machine's usage (readMachineStats; tests
	// put in their own).
	machineStats func() (machineSample, error)
	// hostFiles are where status.nodeInfo is read from (nil: the
	// machine's, defaultHostFiles; tests put in their own).
	hostFiles *hostFiles
}

func (c *Config) defaults() error {
	if c.NodeName == "" {
		return errors.New("agent: Config.NodeName is required")
	}
	if c.API == nil || c.Runtime == nil {
		return errors.New("agent: Config.API and Config.Runtime are required")
	}
	setDefault(&c.RootDir, DefaultRootDir)
	setDefault(&c.LocalVolumeRoot, DefaultLocalVolumeRoot)
	c.LocalVolumeRoot = filepath.Clean(c.LocalVolumeRoot)
	setDefault(&c.PodLogDir, DefaultPodLogDir)
	setDefault(&c.MaxPods, DefaultMaxPods)
	setDefault(&c.LeaseDuration, DefaultLeaseDuration)
	setDefault(&c.LeaseRenewInterval, DefaultLeaseRenewInterval)
	setDefault(&c.NodeStatusUpdatePeriod, DefaultNodeStatusUpdatePeriod)
	setDefault(&c.NodeStatusReportPeriod, DefaultNodeStatusReportPeriod)
	setDefault(&c.RelistPeriod, DefaultRelistPeriod)
	setDefault(&c.Workers, DefaultWorkers)
	setDefault(&c.MaxParallelStarts, 4*runtime.NumCPU())
	setDefault(&c.CrashLoopBackOff, DefaultCrashLoopBackOff)
	setDefault(&c.CrashLoopBackOffMax, DefaultCrashLoopBackOffMax)
	setDefault(&c.ImagePullBackOff, DefaultImagePullBackOff)
	setDefault(&c.ImagePullBackOffMax, DefaultImagePullBackOffMax)
	setDefault(&c.LogFollowPoll, DefaultLogFollowPoll)
	setDefault(&c.StatsTimeout, DefaultStatsTimeout)
	setDefault(&c.UsageWindow, DefaultUsageWindow)
	setDefault(&c.EvictionMonitoringInterval, DefaultEvictionMonitoringInterval)
	setDefault(&c.EvictionPressureTransitionPeriod, DefaultEvictionPressureTransitionPeriod)
	setDefault(&c.VolumeSyncPeriod, DefaultVolumeSyncPeriod)
	setDefault(&c.SeccompProfileRoot, DefaultSeccompProfileRoot)
	if err := checkSysctlPatterns(c.AllowedUnsafeSysctls); err != nil {
		return fmt.Errorf("agent: Config.AllowedUnsafeSysctls: %w", err)
	}
	if c.machineStats == nil {
		c.machineStats = readMachineStats
	}
	if c.hostFiles == nil {
		c.hostFiles = &defaultHostFiles
	}
	if c.CrashLoopBackOffMax < c.CrashLoopBackOff {
		c.CrashLoopBackOffMax = c.CrashLoopBackOff
	}
	if c.ImagePullBackOffMax < c.ImagePullBackOff {
		c.ImagePullBackOffMax = c.ImagePullBackOff
	}
	if c.Clock == nil {
		c.Clock = workqueue.RealClock()
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return nil
}

func setDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}
