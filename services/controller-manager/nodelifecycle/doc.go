// Package nodelifecycle is Skiff's node lifecycle controller with its taint
// manager, after Kubernetes' pkg/controller/nodelifecycle: it notices nodes
// whose agent stopped, marks them and moves their pods away.
//
// The heartbeat. A node agent renews a coordination/v1 Lease named after its
// node in the namespace "kube-node-lease" (NodeLeaseNamespace). The
// controller remembers, by its own clock, when it last saw each Lease's
// spec.renewTime change (heartbeat.go), so that clock skew between nodes and
// the controller does not matter and a restarted controller gives every node
// a full grace period. A node with no Lease ever seen counts from its
// creationTimestamp.
//
// One reconcile per node (keyed by node name), in order:
//
//	monitor.go    Assess: from the node, its last heartbeat and the grace
//	              period, the node's state (Ready, NotReady, Unreachable),
//	              the status conditions to write and the taints it must carry
//	controller.go writes them: Ready (and the pressure conditions) become
//	              "Unknown" through UpdateStatus when the heartbeat is older
//	              than the grace period; node.kubernetes.io/unreachable
//	              (heartbeat stale) or node.kubernetes.io/not-ready (the agent
//	              posts Ready=False) are added with effects NoSchedule and
//	              NoExecute through Update, and removed when the node is well
//	              again; the pods of a node that is not Ready get Ready=False
//	podseen.go    when the controller first saw each pod on the node while
//	              the node carried NoExecute taints (in memory only)
//	eviction.go   EvictionTime: from a pod's tolerations, the node's NoExecute
//	              taints (the controller's and any other, as Kubernetes' taint
//	              manager) and the default toleration, when the pod must go:
//	              now, at a time, or never. tolerationSeconds count from when
//	              the pod was first seen there, or from the taint's timeAdded
//	              if later: a pod bound to a node tainted long ago (a
//	              replacement pinned to it by spec.nodeName) gets its full
//	              toleration, not none
//	controller.go deletes the pods whose time came (uid precondition), and
//	              force-deletes (grace period 0) pods already terminating on an
//	              unreachable node once their deletion deadline passed, as
//	              nobody else will finish them
//
// The reconcile is level-based: it keeps no timers of its own, but returns
// the earliest time anything is due (the heartbeat going stale, an eviction,
// a deletion deadline) as RequeueAfter. A Lease renewed again, a node
// recovering or a pod's toleration changing is simply seen by the next
// reconcile, which then does not evict.
//
// What the controller remembers by its own clock (heartbeats, when it first
// saw each pod on a tainted node) is lost when it stops, as in Kubernetes: a
// controller that starts, or takes over leadership, gives every node a full
// grace period and every pod on a tainted node its full toleration again,
// counted from then. Evictions come later after a restart, never earlier.
//
// The package does not write Leases, does not post node status for agents
// (Ready=True is the agent's to write: when the Lease is fresh again the
// controller only removes its taints), and does not delete pods bound to
// nodes that no longer exist (package podgc does).
package nodelifecycle
