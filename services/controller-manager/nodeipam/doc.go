// Package nodeipam is Skiff's node IPAM controller, after Kubernetes'
// pkg/controller/nodeipam with its range allocator: it gives every Node a
// pod subnet of its own, spec.podCIDR (and spec.podCIDRs), cut from the
// cluster CIDR (--cluster-cidr, default 10.244.0.0/16) in subnets of
// --node-cidr-mask-size bits (default /24). Each node agent then writes its
// CNI configuration for that subnet and routes the other nodes' subnets to
// them (services/node-agent/network).
//
//	cidrset.go    CIDRSet, pure: the subnets of the cluster CIDR, which are
//	              taken; allocation starts one past the last one handed out,
//	              so a subnet just freed is the last to be reused
//	controller.go Run marks every podCIDR already on a Node as taken once the
//	              nodes informer has synced, before the first allocation (a
//	              restarted controller never hands out a subnet twice); then
//	              one reconcile per node name:
//	              - a node without podCIDR gets the next free subnet through
//	                Update (its resourceVersion; on a conflict the node is read
//	                again and, if someone set a podCIDR meanwhile, that one is
//	                kept). An Update that failed keeps its subnet reserved for
//	                the retry, since it may have landed;
//	              - a node with a podCIDR is accounted for; one outside the
//	                cluster CIDR (Warning InvalidPodCIDR) or overlapping
//	                another node's (Warning PodCIDRConflict) is left alone:
//	                validation forbids changing a podCIDR once set;
//	              - a node gone frees its subnet, and the nodes still waiting
//	                for one (or in conflict) are looked at again;
//	              - no subnet left: Warning CIDRNotAvailable and a requeue
//	                with backoff.
//	metrics.go    nodeipam_cidrs_capacity, nodeipam_cidrs_allocated,
//	              nodeipam_cidr_allocations_total, nodeipam_cidr_releases_total,
//	              nodeipam_errors_total{reason}
package nodeipam
