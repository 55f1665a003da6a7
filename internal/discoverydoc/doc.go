// Package discoverydoc builds the discovery documents of Kubernetes' HTTP
// API from the kinds Skiff serves (internal/kinds, declared once in
// internal/kinds/decl): the bytes kube-apiserver v1.36 would answer on
//
//	/version                 Version
//	/api                     APIVersions
//	/apis                    APIGroupList
//	/apis/<group>            APIGroup
//	/api/v1, /apis/<g>/<v>   APIResourceList
//	/api, /apis with Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList
//	                         Aggregated(Core), Aggregated(Groups)
//
// Each is JSON in Kubernetes' field order, ending in a newline as
// kube-apiserver writes it. The facts are those the gRPC Discovery service
// gives (groups, versions, the preferred one, resources, scope, short
// names, subresources), put in Kubernetes' shapes and completed with what
// Kubernetes says of the same resources: the verbs of each resource and
// subresource (every resource has create, delete, deletecollection, get,
// list, patch, update and watch but namespaces, which have no
// deletecollection), the kind a subresource answers with (pods/eviction is
// policy/v1 Eviction, deployments/scale autoscaling/v1 Scale), the
// categories ("all", "api-extensions"), the storage version hash, and the
// order of the groups (kube-aggregator's group priorities).
//
// The package owns the documents and nothing else: serving them (content
// negotiation, ETags, authorization of the discovery paths) is the HTTP
// layer's. The documents are computed once, on first use; the returned
// slices are shared and must not be modified.
package discoverydoc
