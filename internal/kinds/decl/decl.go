// Package decl declares every kind Skiff serves, once, as data: the one
// place a kind's author writes its names, scope, subresources, selectable
// fields, roles and extra rpcs. Everything else is derived from it:
// internal/kinds/gen generates the per-kind proto boilerplate (List,
// WatchEvent, WatchResponse, the service) and the Go code that needs the
// kind's types (the typed client constructors, the apiserver's install
// calls, the garbage collector's watches); internal/kinds gives the rest
// (discovery, skiffctl's kind table, the RBAC roles' resource lists) at
// run time. See docs/adding-a-kind.md.
//
// The package imports nothing, so that the generator can run before the
// kinds' generated Go types exist.
package decl

// Kind is one kind at one served version.
type Kind struct {
	// Group is the API group ("" for the core group, "apps",
	// "rbac.authorization.k8s.io"); Version its version ("v1").
	Group, Version string
	// Kind is the type's name, as its proto message is named ("Pod").
	Kind string
	// Resource is the plural, lower-case name ("pods").
	Resource string
	// ShortNames are skiffctl's abbreviations ("po").
	ShortNames []string
	// Namespaced: objects live in a namespace; else cluster-scoped.
	Namespaced bool
	// Subresources are the resource's subresources ("status", "scale",
	// "binding", "log"): discovery lists them, RBAC grants them.
	Subresources []string
	// FieldSelectors are the fields List and Watch may select on beyond
	// metadata.name (and metadata.namespace): a path of proto JSON names
	// ("spec.nodeName"), or name=path when the selector's name is not the
	// path ("source=source.component").
	FieldSelectors []string
	// StoredAs is the group/version objects are stored as, when this is a
	// served version other than the storage version ("apps/v1" for
	// apps/v1beta1 Deployments); empty for the storage version.
	StoredAs string
	// Roles are the user-facing ClusterRoles that grant the resource.
	Roles Roles
	// RPCs are the extra rpcs of the kind's service, in proto syntax,
	// after the seven standard ones.
	RPCs []string
}

// Roles is a set of Kubernetes' user-facing ClusterRoles.
type Roles uint8

const (
	// View reads the resource and its subresources (but binding).
	View Roles = 1 << iota
	// Edit also writes it and its scale.
	Edit
	// Admin reads and writes it (RBAC objects, in a namespace).
	Admin
)

// All is every kind, storage versions before the other served versions
// of the same kind; within a group, the first version is the preferred.
var All = []Kind{
	{Version: "v1", Kind: "Namespace", Resource: "namespaces", ShortNames: []string{"ns"},
		Subresources: []string{"status"}, FieldSelectors: []string{"status.phase"}, Roles: View},
	{Version: "v1", Kind: "Pod", Resource: "pods", ShortNames: []string{"po"}, Namespaced: true,
		Subresources:   []string{"status", "binding", "log", "exec", "attach", "portforward", "eviction", "ephemeralcontainers"},
		FieldSelectors: []string{"spec.nodeName", "spec.schedulerName", "spec.restartPolicy", "status.phase", "status.podIP"},
		Roles:          View | Edit,
		RPCs: []string{
			"// Bind sets spec.nodeName of a pod that has none (the scheduler's write).",
			"rpc Bind(Binding) returns (Pod);",
			"// Logs streams a container's log, proxied to the node agent of the pod's node.",
			"rpc Logs(PodLogOptions) returns (stream LogChunk);",
			"// Exec runs a command in a container, streamed through the pod's node agent.",
			"rpc Exec(stream ExecRequest) returns (stream ExecResponse);",
			"// Attach attaches to a running container's stdin, stdout and stderr.",
			"rpc Attach(stream ExecRequest) returns (stream ExecResponse);",
			"// PortForward carries one TCP connection to a port of the pod.",
			"rpc PortForward(stream PortForwardRequest) returns (stream PortForwardResponse);",
			"// Evict deletes the pod (metadata names it) if its PodDisruptionBudgets allow.",
			"rpc Evict(Eviction) returns (skiff.meta.v1.Status);",
			"// UpdateEphemeralContainers adds ephemeral containers to a pod (spec.ephemeralContainers",
			"// only; the others may not change): the ephemeralcontainers subresource.",
			"rpc UpdateEphemeralContainers(Pod) returns (Pod);",
		}},
	{Version: "v1", Kind: "Node", Resource: "nodes", ShortNames: []string{"no"},
		Subresources: []string{"status"}, FieldSelectors: []string{"spec.unschedulable"}},
	{Version: "v1", Kind: "Event", Resource: "events", ShortNames: []string{"ev"}, Namespaced: true,
		FieldSelectors: []string{"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
			"involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
			"reason", "reportingComponent", "source=source.component", "type"},
		Roles: View | Edit},
	{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", ShortNames: []string{"cm"}, Namespaced: true, Roles: View | Edit},
	{Version: "v1", Kind: "Secret", Resource: "secrets", Namespaced: true, FieldSelectors: []string{"type"}, Roles: Edit},
	{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", ShortNames: []string{"deploy"}, Namespaced: true,
		Subresources: []string{"status", "scale"}, Roles: View | Edit,
		RPCs: scaleRPCs},
	{Group: "apps", Version: "v1beta1", Kind: "Deployment", Resource: "deployments", ShortNames: []string{"deploy"}, Namespaced: true,
		Subresources: []string{"status"}, StoredAs: "apps/v1"},
	{Group: "apps", Version: "v1", Kind: "ReplicaSet", Resource: "replicasets", ShortNames: []string{"rs"}, Namespaced: true,
		Subresources: []string{"status", "scale"}, FieldSelectors: []string{"status.replicas"}, Roles: View | Edit,
		RPCs: scaleRPCs},
	{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease", Resource: "leases", Namespaced: true},
	{Version: "v1", Kind: "ServiceAccount", Resource: "serviceaccounts", ShortNames: []string{"sa"}, Namespaced: true,
		Subresources: []string{"token"}, Roles: View | Edit,
		RPCs: []string{
			"// CreateToken issues a token of the service account (metadata names it), bound to an object when asked.",
			"rpc CreateToken(TokenRequest) returns (TokenRequest);",
		}},
	{Version: "v1", Kind: "LimitRange", Resource: "limitranges", ShortNames: []string{"limits"}, Namespaced: true, Roles: View},
	{Version: "v1", Kind: "ResourceQuota", Resource: "resourcequotas", ShortNames: []string{"quota"}, Namespaced: true,
		Subresources: []string{"status"}, Roles: View},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role", Resource: "roles", Namespaced: true, Roles: Admin},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding", Resource: "rolebindings", Namespaced: true, Roles: Admin},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding", Resource: "clusterrolebindings"},
	{Version: "v1", Kind: "Service", Resource: "services", ShortNames: []string{"svc"}, Namespaced: true,
		Subresources: []string{"status"}, Roles: View | Edit},
	{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice", Resource: "endpointslices", Namespaced: true,
		FieldSelectors: []string{"addressType"}, Roles: View},
	{Group: "batch", Version: "v1", Kind: "Job", Resource: "jobs", Namespaced: true,
		Subresources: []string{"status"}, Roles: View | Edit},
	{Group: "batch", Version: "v1", Kind: "CronJob", Resource: "cronjobs", ShortNames: []string{"cj"}, Namespaced: true,
		Subresources: []string{"status"}, Roles: View | Edit},
	{Group: "apps", Version: "v1", Kind: "DaemonSet", Resource: "daemonsets", ShortNames: []string{"ds"}, Namespaced: true,
		Subresources: []string{"status"}, Roles: View | Edit},
	{Group: "apps", Version: "v1", Kind: "StatefulSet", Resource: "statefulsets", ShortNames: []string{"sts"}, Namespaced: true,
		Subresources: []string{"status", "scale"}, Roles: View | Edit,
		RPCs: scaleRPCs},
	{Group: "apps", Version: "v1", Kind: "ControllerRevision", Resource: "controllerrevisions", Namespaced: true, Roles: View},
	{Version: "v1", Kind: "PersistentVolume", Resource: "persistentvolumes", ShortNames: []string{"pv"},
		Subresources: []string{"status"}},
	{Version: "v1", Kind: "PersistentVolumeClaim", Resource: "persistentvolumeclaims", ShortNames: []string{"pvc"}, Namespaced: true,
		Subresources: []string{"status"}, Roles: View | Edit},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget", Resource: "poddisruptionbudgets", ShortNames: []string{"pdb"}, Namespaced: true,
		Subresources: []string{"status"}, Roles: View | Edit},
	{Group: "storage.k8s.io", Version: "v1", Kind: "StorageClass", Resource: "storageclasses", ShortNames: []string{"sc"}},
	{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass", Resource: "priorityclasses", ShortNames: []string{"pc"}},
	{Group: "node.k8s.io", Version: "v1", Kind: "RuntimeClass", Resource: "runtimeclasses"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration", Resource: "mutatingwebhookconfigurations"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration", Resource: "validatingwebhookconfigurations"},
	{Group: "certificates.k8s.io", Version: "v1", Kind: "CertificateSigningRequest", Resource: "certificatesigningrequests", ShortNames: []string{"csr"},
		Subresources: []string{"status", "approval"}, FieldSelectors: []string{"spec.signerName"},
		RPCs: []string{
			"// UpdateApproval changes status.conditions only (Approved, Denied): the approval",
			"// subresource, which also needs the approve verb on the signer (resource signers).",
			"rpc UpdateApproval(CertificateSigningRequest) returns (CertificateSigningRequest);",
		}},
}

// scaleRPCs are the scale subresource's rpcs.
var scaleRPCs = []string{
	"rpc GetScale(skiff.meta.v1.GetRequest) returns (Scale);",
	"// UpdateScale changes spec.replicas only; metadata.resourceVersion, when",
	"// set, is a precondition.",
	"rpc UpdateScale(Scale) returns (Scale);",
}

// ProtoGroup is the group's name in Skiff's proto packages and Go import
// paths: "core" for the core group, else the group's first label
// ("rbac" for rbac.authorization.k8s.io).
func (k *Kind) ProtoGroup() string {
	if k.Group == "" {
		return "core"
	}
	for i := range len(k.Group) {
		if k.Group[i] == '.' {
			return k.Group[:i]
		}
	}
	return k.Group
}

// ProtoPackage is the kind's proto package ("skiff.core.v1").
func (k *Kind) ProtoPackage() string { return "skiff." + k.ProtoGroup() + "." + k.Version }

// ServiceName is the name of the kind's gRPC service: the kind in the
// plural ("Pods", "StorageClasses").
func (k *Kind) ServiceName() string {
	n := k.Kind
	switch {
	case len(n) > 1 && (n[len(n)-1] == 's' || n[len(n)-1] == 'x'):
		return n + "es"
	case len(n) > 1 && n[len(n)-1] == 'y' && !isVowel(n[len(n)-2]):
		return n[:len(n)-1] + "ies"
	}
	return n + "s"
}

func isVowel(b byte) bool { return b == 'a' || b == 'e' || b == 'i' || b == 'o' || b == 'u' }

// Service is the full name of the kind's gRPC service
// ("skiff.core.v1.Pods").
func (k *Kind) Service() string { return k.ProtoPackage() + "." + k.ServiceName() }
