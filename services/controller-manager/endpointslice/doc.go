// Package endpointslice is the EndpointSlice controller: for every Service
// with a selector it keeps discovery.k8s.io/v1 EndpointSlices that list the
// pods the selector matches, as Kubernetes' endpointslice controller does
// (pkg/controller/endpointslice and k8s.io/endpointslice). One file per
// stage:
//
//	controller.go  New and Run: the informers (services, pods, nodes,
//	               endpointslices), Options, and Reconcile: one Service's
//	               sync from the caches, then the writes
//	handlers.go    informer events -> Service keys: a pod maps to the
//	               Services of its namespace whose selectors match its old
//	               and new labels, a slice to the Service its label names, a
//	               node to the Services of its pods
//	desired.go     desiredEndpoints (pure): the endpoints the pods make,
//	               grouped by their resolved port set
//	plan.go        plan (pure): which slices to create, update and delete so
//	               that the existing ones carry the desired endpoints
//	tracker.go     the slices this controller wrote and deleted, so that a
//	               cache that lags behind its own writes is noticed
//	metrics.go     the endpoint_slice_controller_* metrics
//
// A Service's slices are labelled kubernetes.io/service-name=<service> and
// endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io,
// carry the Service's own labels (and service.kubernetes.io/headless for a
// Service with clusterIP None), have a controller owner reference to the
// Service (the garbage collector deletes them with it; this controller
// does not), are named by generateName "<service>-", have addressType IPv4
// and hold at most MaxEndpointsPerSlice endpoints (default 100).
//
// The endpoints are the Service's namespace's pods that match the selector,
// have an IPv4 pod IP and are not Succeeded or Failed; a pod bound to a
// Node the cache does not have is left out (unless the Service publishes
// not-ready addresses) until that Node appears. Each endpoint has the pod's
// address, the conditions ready (the pod is Ready and not terminating; always
// true with publishNotReadyAddresses), serving (the pod is Ready) and
// terminating (the pod has a deletionTimestamp), the pod's node name, the
// zone of its node (label topology.kubernetes.io/zone), a targetRef to the
// pod, and the pod's hostname when its subdomain is the Service's name.
//
// Ports: one EndpointPort per Service port (name, protocol, appProtocol),
// its port the targetPort resolved for each pod: a number, or the name of a
// container port of that pod with the Service port's protocol. Pods whose
// ports resolve differently go to different slices; a port whose name a pod
// does not have is left out of that pod's port set. A Service without
// endpoints keeps one empty placeholder slice, as in Kubernetes.
//
// One sync of a Service, level-based and from the caches only:
//
//  1. if the cache does not yet show every write and deletion this
//     controller made for the Service (tracker.go), the sync ends and the
//     slice event that brings the cache up to date starts the next one (a
//     timer 100 ms later is the fallback): a lagging cache never causes
//     duplicate slices. A write the cache has not shown after a minute is
//     no longer waited for;
//  2. compute the desired endpoints (desired.go) and the plan (plan.go):
//     existing slices keep the endpoints still desired, in their order,
//     changed ones updated in place; slices that lost endpoints are filled
//     first, the new endpoints then go to the existing slice they fit
//     best, and only then to new slices; a slice left empty is deleted, or
//     reused for a slice that would be created; a slice not owned by the
//     Service (an older Service of that name) is deleted. Slices that do not
//     change are not written;
//  3. write: creates (not while the Service is being deleted), updates at
//     the slice's resourceVersion, deletes with the slice's uid as
//     precondition.
//
// Pod changes reach a Service through the queue, which holds a key once:
// a burst of pod changes is a few syncs per Service, each one write per
// changed slice. BatchPeriod (Kubernetes' --endpoint-updates-batch-period,
// default 0) delays the syncs pod changes cause, to batch more of them.
//
// A change someone else makes to a managed slice (or its deletion) syncs
// its Service a second later (Kubernetes' endpointSliceChangeMinSyncDelay);
// the controller's own writes sync nothing. A Node added, deleted or
// changing zone syncs the Services of its pods. A failed write is retried
// with the runner's backoff and recorded as a Warning event
// FailedToUpdateEndpointSlices on the Service.
//
// Metrics: endpoint_slice_controller_endpoints_desired and
// endpoint_slice_controller_num_endpoint_slices (gauges, as of each
// Service's last sync), endpoint_slice_controller_syncs_total{result}
// (success, stale, error) and endpoint_slice_controller_changes_total
// {operation} (create, update, delete), besides the runner's workqueue_*
// and controller_* metrics.
//
// The package does not handle Services without a selector or of type
// ExternalName (their slices, if any, are someone else's), does not write
// the legacy Endpoints kind, topology hints or the
// endpoints.kubernetes.io/last-change-trigger-time annotation, and does not
// delete slices when their Service is deleted (the garbage collector does).
package endpointslice
