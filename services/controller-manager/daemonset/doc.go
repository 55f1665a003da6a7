// Package daemonset is the DaemonSet controller, as Kubernetes'
// pkg/controller/daemon: one pod per node that the template admits, placed
// through the scheduler, rolled to a new template node by node.
//
// The flow of one sync of a DaemonSet (sync.go), each step a file:
//
//	predicates.go  which nodes should run a daemon pod (nodeSelector, required
//	               node affinity, taints against the template's tolerations
//	               plus the ones the controller adds: not-ready and
//	               unreachable NoExecute, the pressure and unschedulable
//	               NoSchedule taints, network-unavailable for hostNetwork) and
//	               which may keep one (only NoExecute taints evict); the pod
//	               made for a node: the template with those tolerations and a
//	               required node affinity matchFields metadata.name In [node],
//	               so that the scheduler binds it there
//	revision.go    the ControllerRevision of the current template (named
//	               <ds>-<template hash>, label controller-revision-hash, data
//	               {"spec":{"template":...}}), renumbered when an old template
//	               comes back; old revisions truncated to revisionHistoryLimit
//	               keeping the ones pods still run
//	manage.go      per node: create the missing pod, delete pods on nodes
//	               that no longer fit, failed pods (with a backoff per node)
//	               and surplus pods (Plan, a pure function)
//	rollout.go     RollingUpdate: which old pods to delete (maxUnavailable) or
//	               which nodes get a new pod first (maxSurge; the old pod goes
//	               once the new one is available) in this round (a pure
//	               function); OnDelete updates nothing
//	status.go      desired/current/ready/available/updated/misscheduled
//	               counts and observedGeneration
//
// Pods are created and deleted under expectations (package expectations)
// so that a sync never acts on a cache that has not seen its own writes.
// What it does not do: bind pods (the scheduler does), delete pods of
// nodes that are gone (the pod GC does, as in Kubernetes).
package daemonset
