// Package agent is the node agent (Skiff's kubelet): it registers its
// Node, keeps its Lease and Ready condition, and runs the pods bound to
// the node as containers through a CRI runtime (containerd, or the
// simulated runtime of package sim), reporting their status.
//
// The data flow, one file per stage:
//
//	agent.go         New and Run: the runtime check (Version, Status), the
//	                 node's registration, the pods informer (field selector
//	                 spec.nodeName=<node>), and the loops below
//	node.go          the Node: capacity, addresses, nodeInfo, Ready only
//	                 while the runtime and its network are (readyCondition)
//	lease.go         the heartbeat: kube-node-lease/<node> renewed every
//	                 LeaseRenewInterval
//	pleg.go          the relist loop: lists the runtime every RelistPeriod
//	                 and enqueues the pods whose containers changed
//	runtimestate.go  what the runtime holds for one pod (sandboxes and
//	                 containers, found by the kubelet's labels), read afresh
//	                 by each sync
//	decide.go        computeActions, pure: spec + runtime state -> kill,
//	                 create sandbox, start init containers (initActions:
//	                 the next one, and sidecars kept running), start
//	                 containers, remove garbage
//	sidecar.go       native sidecars (init containers with restartPolicy
//	                 Always): their part in probes, Initialized,
//	                 ContainersReady and the phase, and the stop order
//	                 (main containers, then sidecars in reverse)
//	sync.go          the executor: one sync of one pod (the controller
//	                 runner guarantees one pod is never synced twice at once,
//	                 and syncs different pods in parallel); image pulls by
//	                 policy, crash-loop and pull backoffs (backoff.go),
//	                 deletion, cleanup of pods that are gone, the status
//	                 write (only when it changed, retrying on conflict)
//	runtimeconfig.go pure: the CRI sandbox and container configs (labels,
//	                 log paths, ports, cgroup resources from quantities)
//	podcgroup.go     the pod-level cgroup <CgroupRoot>/pod<uid> with the
//	                 pod's summed limits, made before its sandbox
//	eviction.go      the eviction manager: memory.available against
//	                 EvictionHard every EvictionMonitoringInterval (on
//	                 Config.Clock), MemoryPressure, one pod evicted per
//	                 interval in the kubelet's order, BestEffort pods
//	                 refused under pressure
//	env.go, volumes.go environment (values, ConfigMap and Secret keys,
//	                 envFrom, fieldRef, resourceFieldRef; serviceenv.go the
//	                 Services' variables) and volumes (emptyDir, hostPath,
//	                 configMap, secret, downwardAPI, projected)
//	atomicwriter.go  configMap, secret, downwardAPI and projected volumes
//	                 written as the kubelet's AtomicWriter (..data swapped
//	                 by a rename); volumemount.go their tmpfs;
//	                 volumetoken.go serviceAccountToken projections'
//	                 tokens; volumesync.go the periodic rewrite
//	claimvolumes.go  persistentVolumeClaim volumes: the bound volume's
//	                 local.path or hostPath.path (waiting, FailedMount,
//	                 until the claim is Bound); a local-path volume's
//	                 directory made under Config.LocalVolumeRoot
//	localvolumes.go  deleted local-path volumes of the node: directory
//	                 removed, then the finalizer skiff.dev/local-path-volume
//	pullsecrets.go   imagePullSecrets as the kubelet's keyring: the CRI
//	                 AuthConfig of a pull
//	status.go        computeStatus, pure: phase, conditions, container states
//	prober.go, probe.go liveness, readiness and startup probes (exec,
//	                 httpGet, tcpSocket), one goroutine per probe
//	logs.go          NodeAgent.Logs: reads the CRI log files (follow, tail,
//	                 since, timestamps, previous)
//	stats.go         the usage of the node and its pods, read afresh from
//	                 the CRI's ListPodSandboxStats and ListContainerStats
//	                 and the machine's cgroup or /proc (parseStats, pure)
//	usage.go         NodeAgent.Usage: CPU rates over two samples at least
//	                 UsageWindow apart (usageOf, pure), working sets
//	metrics.go       the kubelet_* metrics, and the usage metrics
//	                 (container_cpu_usage_seconds_total...) read on scrape
//
// Restart safety comes from reading everything from the runtime: a
// restarted agent finds its pods' sandboxes and containers by their
// labels, leaves the running ones alone (same container, same restart
// count from the container's annotation) and removes those of pods that
// are gone.
//
// Clocks: Config.Clock drives backoffs, requeue delays, timestamps and
// the eviction checks (a fake clock steps them in tests); the other
// periodic loops run on the wall clock.
//
// The package owns no gRPC listener and no flags (see package app), and
// does not manage images' disk usage, pod resizes or ephemeral storage.
package agent
