// Package crienv runs a private containerd with its CRI plugin for the node
// agent's integration tests and for the benchmark, so that pods run as real
// containers without touching the machine's own containerd.
//
// Usage, in a test:
//
//	env := crienv.Start(t)           // skips (or, under CI=true, fails) when impossible
//	env.Runtime.RunPodSandbox(ctx, ...)  // CRI clients on env.Endpoint
//	env.DemoImage("v1")              // "skiff.local/demo:v1", already imported
//
// and, outside a test (the benchmark), Launch then Close.
//
// What one Env owns, each stage in its own file:
//
//	prereq.go     root, containerd, runc, ctr, ip, iptables and the CNI
//	              plugins in /usr/lib/cni; missing ones are installed with
//	              apt-get when running as root (ErrUnavailable otherwise)
//	slot.go       a slot n in 1..254, locked across processes
//	              (/run/skiff-crienv/slot-<n>.lock): bridge skiffbr<n>,
//	              subnet 10.88.<n>.0/24, CNI network skiff-crienv-<n>; the
//	              leftovers of a process that died holding the slot are
//	              cleaned when the slot is taken again
//	config.go     containerd's config.toml and the CNI conflist (pure)
//	containerd.go the containerd child process, its root, state, socket
//	              and log in a tmpfs on /tmp/skiff-crienv-XXXX, and the
//	              wait for the CRI to answer
//	images.go     pause, demo:v1 and demo:v2 (plus WithImages) built by
//	              imagebuild and imported with ctr, then seen through CRI
//	              ImageStatus
//	cleanup.go    Close: every pod sandbox stopped and removed through the
//	              CRI (network namespaces and IP allocations released),
//	              containerd stopped, runc leftovers killed, mounts under
//	              the directory unmounted, the bridge and its FORWARD rule
//	              deleted, the directory removed
//	bare.go       the bare CRI loop the benchmark divides by
//	              (node.vs_bare_cri_ratio): BarePodStart and BareP50
//
// The network: a bridge CNI conflist (bridge + host-local + portmap, the
// loopback plugin is added by containerd) with isGateway true and ipMasq
// false, and no default route in the pods, so the host reaches pod IPs
// directly at 10.88.<n>.x and pods reach each other and the host's bridge
// address, nothing else. Where bridged traffic goes through iptables
// (br_netfilter, and Docker's FORWARD policy DROP), an ACCEPT rule for
// traffic within the bridge is inserted and removed with the Env.
//
// containerd runs with restrict_oom_score_adj = true (these machines lack
// CAP_SYS_RESOURCE; see RUNTIME-NOTES.md), the overlayfs snapshotter when an
// overlay mount works in the Env's directory (native otherwise), its
// network namespaces under its state directory, and runc's state under it
// too, so that everything an Env creates lives below Env.Dir except the
// bridge, the iptables rule and the shim sockets containerd 1.6 puts in
// /run/containerd/s.
//
// Image pulls never leave the machine: containerd's registry hosts
// (certs.d) send skiff.local and every other registry to NoRegistry, a
// loopback port that refuses, or to WithRegistry's address. So PullImage of
// an image that was not imported fails at once with ErrImagePull material
// ("dial tcp 127.0.0.1:1: connect: connection refused"), and pods should use
// imagePullPolicy IfNotPresent or Never for the imported images.
//
// It does not run the node agent or the control plane, and never talks to
// a registry: images come from imagebuild.
package crienv
