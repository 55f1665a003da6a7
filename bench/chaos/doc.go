// Package chaos is Skiff's chaos suite (make chaos): the real binaries
// (apiserver with its embedded etcd, controller-manager, scheduler, node
// agents over simulated CRI runtimes) as processes on loopback, put
// through faults while a sampler checks invariants every 100 ms.
//
//	cluster.go     build the programs, start, SIGKILL and restart them
//	sampler.go     every 100 ms: the pods, Deployments and Nodes from the
//	               API and the sandboxes of every runtime; checks them
//	invariants.go  check (pure): never more than replicas + maxSurge pods,
//	               never fewer than replicas - maxUnavailable Ready (while
//	               no node is away), no duplicate names, no pod with two
//	               controllers, no pod running twice; converged
//	chaos.go       Config, Run (the phases in order), Report
//	faults.go      the node and write faults
//	jobs.go        the Job whose controller-manager is SIGKILLed
//
// The phases: a Deployment rolled out; a rollout with, in turn, the
// controller-manager, the scheduler, a node agent and the apiserver
// SIGKILLed mid-rollout and restarted; a Job whose controller-manager is
// SIGKILLed a third of the way (completes with exactly its completions
// counted, no pod left tracked); a node agent SIGSTOPped past the
// node grace period and resumed; a node agent killed for good with pods
// pinned to its node (evicted after their own tolerationSeconds, not in a
// loop), then its Node deleted (its pods gone within a minute); etcd
// compacted, then a rollout; the apiserver SIGKILLed during writes (no
// acknowledged write missing). After each fault the Deployment must
// converge within a bound; each time taken is a Figure.
//
// The package does not measure throughput (that is make bench) and does
// not run containers: the node agents are real, their runtimes simulated.
package chaos
