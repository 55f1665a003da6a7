// Package plugins holds the scheduler's built-in plugins, one file each,
// named as in Kubernetes so that a policy file written for kube-scheduler
// reads the same here:
//
//	noderesources.go      NodeResourcesFit: Filter on cpu, memory, ephemeral
//	                      storage, extended resources and pod count (requests
//	                      against allocatable); Score LeastAllocated or
//	                      MostAllocated
//	balancedallocation.go NodeResourcesBalancedAllocation: Score nodes whose
//	                      cpu and memory use stay even
//	nodename.go           NodeName: a pod that names a node goes there
//	nodeunschedulable.go  NodeUnschedulable: spec.unschedulable nodes refuse
//	                      pods that do not tolerate it
//	nodeaffinity.go       NodeAffinity: spec.nodeSelector and required node
//	                      affinity (Filter), preferred node affinity (Score)
//	tainttoleration.go    TaintToleration: NoSchedule/NoExecute taints
//	                      (Filter), PreferNoSchedule taints (Score)
//	podtopologyspread.go  PodTopologySpread: maxSkew over a topology key,
//	                      DoNotSchedule (Filter) and ScheduleAnyway (Score)
//	volumebinding.go      VolumeBinding: a pod's claims exist and are bound
//	                      (or of a WaitForFirstConsumer class), their volumes'
//	                      nodeAffinity admits the node (Filter); PreBind
//	                      writes volume.kubernetes.io/selected-node on the
//	                      unbound WaitForFirstConsumer claims
//	defaultbinder.go      DefaultBinder: Pods.Bind
//	registry.go           the name -> factory registry
//
// Every decision is a pure function of a PodInfo and a NodeInfo (plus what
// the plugin's PreFilter/PreScore put in the CycleState, and VolumeBinding's
// claims, volumes and classes from the Handle's informers); only
// DefaultBinder and VolumeBinding's PreBind talk to the apiserver. The package does not own the framework that
// calls them (package framework) nor their configuration (package config).
package plugins
