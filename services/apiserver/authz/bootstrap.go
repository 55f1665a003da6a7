package authz

import (
	"strings"

	"skiff.dev/internal/csr"
	"skiff.dev/internal/kinds"
	"skiff.dev/internal/kinds/decl"
	metav1 "skiff.dev/proto/meta/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/user"
)

// The bootstrap policy: ClusterRoles, each bound by a ClusterRoleBinding
// of the same name to the users and groups of its row. Start creates them,
// or adds what is missing to existing ones (reconcile.go).
//
// Each rule is three space-separated lists: verbs, API groups ("core" is
// the core group "", "*" every group) and resources ("pods/status" a
// subresource, "*" everything). Paths are non-resource gRPC methods,
// granted for "get" ("*" at the end of a path is a prefix wildcard).
//
// There is no system:node ClusterRole: node agents are authorized by the
// node authorizer (node.go), which knows which pods are theirs. Kubernetes
// keeps the role for compatibility only and binds it to nobody.
var bootstrapPolicy = []bootstrapRole{
	{name: "cluster-admin", groups: user.Masters,
		rules: []r{{"*", "*", "*"}},
		paths: "*"},

	// The user-facing roles, as Kubernetes': view reads (no RBAC
	// objects); edit writes workloads; admin also manages RBAC in a
	// namespace. Each aggregates the ClusterRoles labelled for it
	// (rbac.authorization.k8s.io/aggregate-to-<role>: "true"), and view
	// and edit carry the label for the next one up.
	// Which resources each grants is declared with the kinds
	// (internal/kinds/decl: Roles).
	{name: "admin", aggregates: "admin", rules: roleRules(decl.Admin, readWrite)},
	{name: "edit", aggregates: "edit", aggregateTo: "admin", rules: roleRules(decl.Edit, write)},
	{name: "view", aggregates: "view", aggregateTo: "edit", rules: roleRules(decl.View, read)},

	// The resource metrics API (skiffctl top), as metrics-server's
	// ClusterRole of the same name: aggregated into view, so into edit
	// and admin too.
	{name: "system:aggregated-metrics-reader", aggregateTo: "view",
		rules: []r{
			{read, "metrics.k8s.io", "pods nodes"},
		}},

	// Every authenticated user may discover the API (gRPC discovery and
	// reflection; the HTTP API's discovery and OpenAPI documents, as
	// Kubernetes' system:discovery); everyone may ask the version (health
	// checks pass without authorization anyway).
	{name: "system:discovery", groups: user.AllAuthenticated,
		paths: "/skiff.discovery.v1.Discovery/* /grpc.reflection.* /api /api/* /apis /apis/* /openapi /openapi/* /version /version/"},
	// Every authenticated user may ask what it may do and who it is
	// (kubectl auth can-i and auth whoami), as Kubernetes'
	// system:basic-user.
	{name: "system:basic-user", groups: user.AllAuthenticated,
		rules: []r{
			{"create", "authorization.k8s.io", "selfsubjectaccessreviews selfsubjectrulesreviews"},
			{"create", "authentication.k8s.io", "selfsubjectreviews"},
		}},
	{name: "system:public-info-viewer", groups: user.AllAuthenticated + " " + user.AllUnauthenticated,
		paths: "/skiff.discovery.v1.Discovery/Version /grpc.health.v1.Health/* /version /version/ /healthz /livez /readyz"},

	// services/scheduler: pods, nodes and namespaces (InterPodAffinity's
	// namespaceSelector) informers, Pods.Bind, the
	// PodScheduled condition (pods/status), FailedScheduling events, its
	// leader Lease (kube-system/skiff-scheduler by default); preemption
	// reads PodDisruptionBudgets, writes the victims' DisruptionTarget
	// condition and the preemptor's nominatedNodeName (pods/status) and
	// deletes the victims.
	{name: "system:kube-scheduler", users: user.Scheduler,
		rules: []r{
			{read, "core", "pods nodes namespaces persistentvolumeclaims persistentvolumes"},
			{read, "storage.k8s.io", "storageclasses"},
			{read, "policy", "poddisruptionbudgets"},
			{"create", "core", "pods/binding"},
			{"delete", "core", "pods"},
			{"update patch", "core", "persistentvolumeclaims"},
			{"update patch", "core", "pods/status"},
			{"create update patch get", "core", "events"},
			{"create get update", "coordination.k8s.io", "leases"},
		}},

	// services/controller-manager: every controller's needs, generously
	// (as Kubernetes' controller roles together): it reads everything;
	// changes and deletes the kinds its controllers own or clean up
	// (deployments, replicasets and pods with their status and scale;
	// nodes' podCIDR, taints and conditions; node leases; namespaces and
	// everything in them, RBAC included, when a namespace goes; quota
	// status); creates ReplicaSets, Pods, Events, ServiceAccounts (the
	// default ones), ConfigMaps (kube-root-ca.crt), EndpointSlices and
	// its leader Lease; and the workload and storage controllers' objects
	// (Jobs of CronJobs, ControllerRevisions, the claims of StatefulSets,
	// provisioned PersistentVolumes, the default StorageClass); and the
	// disruption controller's PodDisruptionBudget status.
	{name: "system:kube-controller-manager", users: user.ControllerManager,
		rules: append([]r{
			{read, "*", "*"},
			{"update patch delete deletecollection", "core apps batch coordination.k8s.io discovery.k8s.io storage.k8s.io", "*"},
			{"create", "core", "pods events serviceaccounts configmaps persistentvolumeclaims persistentvolumes"},
			{"create", "discovery.k8s.io", "endpointslices"},
			{"create", "apps", "replicasets controllerrevisions"},
			{"create", "batch", "jobs"},
			{"create", "storage.k8s.io", "storageclasses"},
			{"create", "coordination.k8s.io", "leases"},
			{"update patch", "policy", "poddisruptionbudgets/status"},
			// The CSR approver and signer (certificates): their writes,
			// and the approver's SubjectAccessReviews of the requester.
			{"update patch", "certificates.k8s.io", "certificatesigningrequests/approval certificatesigningrequests/status"},
			{"create", "authorization.k8s.io", "subjectaccessreviews"},
		}, namespacedRules("delete deletecollection")...),
		named: []namedRule{
			{"approve", "certificates.k8s.io", "signers", csr.KubeAPIServerClientKubelet + " " + csr.KubeletServing + " " + csr.KubeAPIServerClient},
			{"sign", "certificates.k8s.io", "signers", csr.KubeAPIServerClientKubelet + " " + csr.KubeletServing + " " + csr.KubeAPIServerClient},
		}},

	// Nodes that join (issue 23), as Kubernetes' roles of the same names
	// with the bindings kubeadm makes (Skiff makes them by default): a
	// bootstrap token's user (group system:bootstrappers) may create CSRs
	// and read them to wait for its certificate, and its node client CSRs
	// are approved automatically (the csrapproving controller asks for
	// create on certificatesigningrequests/nodeclient); a node's own
	// renewal (user system:node:<name>, the CN its certificate names) is
	// approved by create on certificatesigningrequests/selfnodeclient.
	// Nodes themselves create and read CSRs through the node authorizer.
	{name: "system:node-bootstrapper", groups: bootstrappersGroup,
		rules: []r{{"create get list watch", "certificates.k8s.io", "certificatesigningrequests"}}},
	{name: "system:certificates.k8s.io:certificatesigningrequests:nodeclient", groups: bootstrappersGroup,
		rules: []r{{"create", "certificates.k8s.io", "certificatesigningrequests/nodeclient"}}},
	{name: "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", groups: user.NodesGroup,
		rules: []r{{"create", "certificates.k8s.io", "certificatesigningrequests/selfnodeclient"}}},
	// Skiff's: the controller-manager and the scheduler renew their own
	// client certificates (--rotate-certificates): they create and watch
	// their CSR, approved by create on certificatesigningrequests/selfclient
	// (signer kubernetes.io/kube-apiserver-client, their own subject).
	{name: "system:certificates.k8s.io:certificatesigningrequests:selfclient", users: user.ControllerManager + " " + user.Scheduler,
		rules: []r{
			{"create get list watch", "certificates.k8s.io", "certificatesigningrequests"},
			{"create", "certificates.k8s.io", "certificatesigningrequests/selfclient"},
		}},
}

// bootstrappersGroup is the group of every bootstrap token's user
// (system:bootstrap:<token-id>).
const bootstrappersGroup = "system:bootstrappers"

// Verb lists of the table.
const (
	read      = "get list watch"
	write     = "create update patch delete deletecollection"
	readWrite = read + " " + write
)

// Annotations and labels of bootstrap objects, as Kubernetes'.
const (
	// AnnotationAutoupdate "false" on a bootstrap object stops the
	// apiserver from adding what is missing to it at start.
	AnnotationAutoupdate = "rbac.authorization.kubernetes.io/autoupdate"
	labelBootstrapping   = "kubernetes.io/bootstrapping"
	labelAggregatePrefix = "rbac.authorization.k8s.io/aggregate-to-"
)

// roleRules are the rules of a user-facing role: verbs on the resources
// the kinds' declarations give it, one rule per API group.
func roleRules(role decl.Roles, verbs string) []r {
	groups, resources := kinds.RoleResources(role)
	var rules []r
	for _, g := range groups {
		group := g
		if group == "" {
			group = "core"
		}
		rules = append(rules, r{verbs, group, strings.Join(resources[g], " ")})
	}
	return rules
}

// namespacedRules grant verbs on every namespaced kind (the namespace
// controller empties a namespace of all of them), group by group.
func namespacedRules(verbs string) []r {
	byGroup := map[string][]string{}
	var groups []string
	for _, k := range decl.All {
		if !k.Namespaced || k.StoredAs != "" {
			continue
		}
		g := k.Group
		if g == "" {
			g = "core"
		}
		if byGroup[g] == nil {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], k.Resource)
	}
	rules := make([]r, 0, len(groups))
	for _, g := range groups {
		rules = append(rules, r{verbs, g, strings.Join(byGroup[g], " ")})
	}
	return rules
}

// r is one rule of the table.
type r struct{ verbs, groups, resources string }

// namedRule is a rule limited to the resource names of its last list.
type namedRule struct{ verbs, groups, resources, names string }

type bootstrapRole struct {
	name        string
	rules       []r
	named       []namedRule
	paths       string // non-resource paths, verb get ("*": every path, every verb)
	aggregates  string // aggregates the ClusterRoles labelled aggregate-to-<this>
	aggregateTo string // labelled aggregate-to-<that>
	users       string // bound to these users...
	groups      string // ...and groups; neither: no binding
}

func (b *bootstrapRole) meta() *metav1.ObjectMeta {
	m := &metav1.ObjectMeta{
		Name:        b.name,
		Labels:      map[string]string{labelBootstrapping: "rbac-defaults"},
		Annotations: map[string]string{AnnotationAutoupdate: "true"},
	}
	if b.aggregateTo != "" {
		m.Labels[labelAggregatePrefix+b.aggregateTo] = "true"
	}
	return m
}

// clusterRole is the row's ClusterRole.
func (b *bootstrapRole) clusterRole() *rbacv1.ClusterRole {
	cr := &rbacv1.ClusterRole{Metadata: b.meta()}
	for _, x := range b.rules {
		cr.Rules = append(cr.Rules, policyRule(namedRule{x.verbs, x.groups, x.resources, ""}))
	}
	for _, x := range b.named {
		cr.Rules = append(cr.Rules, policyRule(x))
	}
	if b.paths != "" {
		verbs := []string{"get"}
		if b.paths == "*" {
			verbs = []string{"*"}
		}
		cr.Rules = append(cr.Rules, &rbacv1.PolicyRule{Verbs: verbs, NonResourceUrls: strings.Fields(b.paths)})
	}
	if b.aggregates != "" {
		cr.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []*metav1.LabelSelector{
			{MatchLabels: map[string]string{labelAggregatePrefix + b.aggregates: "true"}},
		}}
	}
	return cr
}

func policyRule(x namedRule) *rbacv1.PolicyRule {
	groups := strings.Fields(x.groups)
	for i, g := range groups {
		if g == "core" {
			groups[i] = ""
		}
	}
	return &rbacv1.PolicyRule{Verbs: strings.Fields(x.verbs), ApiGroups: groups, Resources: strings.Fields(x.resources), ResourceNames: strings.Fields(x.names)}
}

// binding is the row's ClusterRoleBinding, or nil.
func (b *bootstrapRole) binding() *rbacv1.ClusterRoleBinding {
	if b.users == "" && b.groups == "" {
		return nil
	}
	crb := &rbacv1.ClusterRoleBinding{
		Metadata: b.meta(),
		RoleRef:  &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "ClusterRole", Name: b.name},
	}
	delete(crb.Metadata.Labels, labelAggregatePrefix+b.aggregateTo)
	for _, u := range strings.Fields(b.users) {
		crb.Subjects = append(crb.Subjects, &rbacv1.Subject{Kind: "User", ApiGroup: rbacGroup, Name: u})
	}
	for _, g := range strings.Fields(b.groups) {
		crb.Subjects = append(crb.Subjects, &rbacv1.Subject{Kind: "Group", ApiGroup: rbacGroup, Name: g})
	}
	return crb
}
