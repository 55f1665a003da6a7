// Package framework is the scheduler's plugin framework, the equivalent of
// Kubernetes' pkg/scheduler/framework: the types every plugin sees and the
// runtime that calls them at each extension point of a scheduling cycle.
//
// A scheduling cycle for one pod runs, in order:
//
//	PreFilter   once per pod: precompute (CycleState), or narrow the nodes
//	            (PreFilterResult), or reject the pod outright, or Skip the
//	            plugin's Filter for this pod
//	Filter      per node, in parallel over nodes (filter.go): a node that any
//	            plugin rejects is infeasible; for large clusters the search
//	            stops once enough feasible nodes are found
//	            (NumFeasibleNodesToFind, Kubernetes' percentageOfNodesToScore)
//	PostFilter  only when no node fits (e.g. preemption, DefaultPreemption)
//	PreScore    once per pod over the feasible nodes (or Skip)
//	Score       per plugin per feasible node, 0..MaxNodeScore (score.go)
//	NormalizeScore per plugin over all its node scores, then the weighted sum
//	Reserve     after the scheduler chose a node and assumed the pod there
//	Bind        asynchronously, the first bind plugin that does not Skip
//
// A PreFilter plugin whose state counts the other pods (InterPodAffinity,
// PodTopologySpread) has PreFilterExtensions, AddPod and RemovePod, which
// update that state for a node with one pod more or less: Filter runs them
// on a clone of the cycle's state (CycleState.Clone) for the pods
// nominated to a node, and preemption's dry run for each victim it
// removes and each pod it gives back, as Kubernetes does.
//
// Glossary. NodeInfo: a node and the pods on it (bound or assumed) with
// their summed requests; the scheduler reads them from a Snapshot taken
// once per cycle, never from the live cache. PodInfo: a pod with its
// requests parsed once. Status: a plugin's verdict (nil is Success);
// Unschedulable may be helped by a change in the cluster,
// UnschedulableAndUnresolvable may not (on that node). Diagnosis: why each
// rejected node was rejected, turned into the FailedScheduling message by
// FitError.
//
// The package owns these types, the plugin interfaces, the Registry of
// plugin factories and the per-profile Framework that runs plugins. It does
// not own the plugins themselves (package plugins), the queue, the cache,
// or the loop that pops a pod and binds it (package scheduler).
package framework
