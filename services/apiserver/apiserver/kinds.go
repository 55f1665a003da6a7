package apiserver

import (
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/defaults"
	"skiff.dev/internal/field"
	"skiff.dev/internal/object"
	"skiff.dev/internal/validation"
	admissionregistrationv1 "skiff.dev/proto/admissionregistration/v1"
	appsv1 "skiff.dev/proto/apps/v1"
	appsv1beta1 "skiff.dev/proto/apps/v1beta1"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/registry"
	"skiff.dev/services/apiserver/scheme"
	"skiff.dev/services/apiserver/server"
)

var (
	coreV1         = scheme.GroupVersion{Group: "", Version: "v1"}
	appsV1         = scheme.GroupVersion{Group: "apps", Version: "v1"}
	appsV1beta1    = scheme.GroupVersion{Group: "apps", Version: "v1beta1"}
	coordinationV1 = scheme.GroupVersion{Group: "coordination.k8s.io", Version: "v1"}
	rbacV1         = scheme.GroupVersion{Group: "rbac.authorization.k8s.io", Version: "v1"}
	admissionRegV1 = scheme.GroupVersion{Group: "admissionregistration.k8s.io", Version: "v1"}
)

var standardVerbs = []string{"create", "get", "list", "update", "delete", "watch"}

// kind builds a scheme.Kind for a storage-version kind.
func kind[T proto.Message](gv scheme.GroupVersion, name, resource, singular, service string, namespaced bool, short []string, subresources []string, fieldSelectors ...string) *scheme.Kind {
	fs := []string{"metadata.name"}
	if namespaced {
		fs = append(fs, "metadata.namespace")
	}
	fs = append(fs, fieldSelectors...)
	return &scheme.Kind{
		GVK:            scheme.GroupVersionKind{GroupVersion: gv, Kind: name},
		Resource:       resource,
		Singular:       singular,
		ShortNames:     short,
		Namespaced:     namespaced,
		Storage:        gv,
		Service:        service,
		Verbs:          standardVerbs,
		Subresources:   subresources,
		FieldSelectors: fs,
		New:            func() proto.Message { return object.New[T]() },
	}
}

// install wires one kind at its storage version: storage, watch cache,
// registry, scheme entry and the endpoint that serves it.
func install[S object.Object, L proto.Message, W any](s *Server, k *scheme.Kind, strategy *registry.Strategy[S]) *server.Endpoint[S, S, L, W] {
	strategy.Kind = k
	s.scheme.AddKind(k)
	s.routes.Add(k.Service, k.GVK.Group, k.Resource, k.Namespaced)
	reg := newRegistry(s, strategy, object.New[S])
	return server.NewEndpoint[S, S, L, W](reg, server.StorageVersion[S](k), object.New[S], object.New[L])
}

// served adds another served version of an installed kind.
func served(s *Server, k *scheme.Kind) {
	s.scheme.AddKind(k)
	s.routes.Add(k.Service, k.GVK.Group, k.Resource, k.Namespaced)
}

// install registers every kind and its gRPC service on srv, their Lists
// sent as the endpoints encode them (server.EncodedLists).
func (s *Server) install(srv *grpc.Server) {
	g := server.EncodedLists(srv)
	// core/v1 Namespaces
	nsKind := kind[*corev1.Namespace](coreV1, "Namespace", "namespaces", "namespace", "skiff.core.v1.Namespaces", false,
		[]string{"ns"}, []string{"status"}, "status.phase")
	nsEP := install[*corev1.Namespace, *corev1.NamespaceList, corev1.NamespaceWatchResponse](s, nsKind, &registry.Strategy[*corev1.Namespace]{
		Default:  defaults.Namespace,
		Validate: validation.Namespace,
		Fields: func(n *corev1.Namespace) map[string]string {
			return map[string]string{"status.phase": n.GetStatus().GetPhase()}
		},
		PrepareForDeletion: namespaceTerminating,
		PendingFinalizers:  namespaceSpecFinalizers,
	})
	corev1.RegisterNamespacesServer(g, nsEP)

	// core/v1 Pods
	podKind := kind[*corev1.Pod](coreV1, "Pod", "pods", "pod", "skiff.core.v1.Pods", true,
		[]string{"po"}, []string{"status", "binding"},
		"spec.nodeName", "spec.schedulerName", "spec.restartPolicy", "status.phase", "status.podIP")
	podEP := install[*corev1.Pod, *corev1.PodList, corev1.PodWatchResponse](s, podKind, &registry.Strategy[*corev1.Pod]{
		Default:        defaults.Pod,
		Validate:       validation.Pod,
		ValidateUpdate: validation.PodUpdate,
		Fields: func(p *corev1.Pod) map[string]string {
			return map[string]string{
				"spec.nodeName":      p.GetSpec().GetNodeName(),
				"spec.schedulerName": p.GetSpec().GetSchedulerName(),
				"spec.restartPolicy": p.GetSpec().GetRestartPolicy(),
				"status.phase":       p.GetStatus().GetPhase(),
				"status.podIP":       p.GetStatus().GetPodIp(),
			}
		},
		GracefulDelete: podGracefulDelete,
	})
	pods := &podsServer{
		Endpoint: podEP,
		reg:      podEP.Registry(),
		now:      s.now,
	}
	corev1.RegisterPodsServer(g, pods)

	// core/v1 Nodes
	nodeKind := kind[*corev1.Node](coreV1, "Node", "nodes", "node", "skiff.core.v1.Nodes", false,
		[]string{"no"}, []string{"status"}, "spec.unschedulable")
	nodeEP := install[*corev1.Node, *corev1.NodeList, corev1.NodeWatchResponse](s, nodeKind, &registry.Strategy[*corev1.Node]{
		Default:            defaults.Node,
		Validate:           validation.Node,
		KeepStatusOnCreate: true,
		Fields: func(n *corev1.Node) map[string]string {
			return map[string]string{"spec.unschedulable": strconv.FormatBool(n.GetSpec().GetUnschedulable())}
		},
	})
	corev1.RegisterNodesServer(g, nodeEP)
	s.logs = newLogProxy(podEP.Registry(), nodeEP.Registry())
	pods.logs = s.logs
	s.installMetricsAPI(g)

	// core/v1 Events
	eventKind := kind[*corev1.Event](coreV1, "Event", "events", "event", "skiff.core.v1.Events", true,
		[]string{"ev"}, nil,
		"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
		"involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
		"reason", "reportingComponent", "source", "type")
	eventEP := install[*corev1.Event, *corev1.EventList, corev1.EventWatchResponse](s, eventKind, &registry.Strategy[*corev1.Event]{
		Default:  defaults.Event,
		Validate: validation.Event,
		Fields: func(e *corev1.Event) map[string]string {
			io := e.GetInvolvedObject()
			return map[string]string{
				"involvedObject.kind":            io.GetKind(),
				"involvedObject.namespace":       io.GetNamespace(),
				"involvedObject.name":            io.GetName(),
				"involvedObject.uid":             io.GetUid(),
				"involvedObject.apiVersion":      io.GetApiVersion(),
				"involvedObject.resourceVersion": io.GetResourceVersion(),
				"involvedObject.fieldPath":       io.GetFieldPath(),
				"reason":                         e.GetReason(),
				"reportingComponent":             e.GetReportingComponent(),
				"source":                         e.GetSource().GetComponent(),
				"type":                           e.GetType(),
			}
		},
	})
	corev1.RegisterEventsServer(g, eventEP)

	// core/v1 ConfigMaps
	cmKind := kind[*corev1.ConfigMap](coreV1, "ConfigMap", "configmaps", "configmap", "skiff.core.v1.ConfigMaps", true,
		[]string{"cm"}, nil)
	cmEP := install[*corev1.ConfigMap, *corev1.ConfigMapList, corev1.ConfigMapWatchResponse](s, cmKind, &registry.Strategy[*corev1.ConfigMap]{
		Default:        defaults.ConfigMap,
		Validate:       validation.ConfigMap,
		ValidateUpdate: validation.ConfigMapUpdate,
	})
	corev1.RegisterConfigMapsServer(g, cmEP)

	// apps/v1 Deployments, also served as apps/v1beta1
	depKind := kind[*appsv1.Deployment](appsV1, "Deployment", "deployments", "deployment", "skiff.apps.v1.Deployments", true,
		[]string{"deploy"}, []string{"status", "scale"})
	depEP := install[*appsv1.Deployment, *appsv1.DeploymentList, appsv1.DeploymentWatchResponse](s, depKind, &registry.Strategy[*appsv1.Deployment]{
		Default:        defaults.Deployment,
		Validate:       validation.Deployment,
		ValidateUpdate: validation.DeploymentUpdate,
	})
	appsv1.RegisterDeploymentsServer(g, &deploymentsServer{
		Endpoint:         depEP,
		scaleSubresource: deploymentScale(depEP.Registry()),
	})
	depBetaKind := kind[*appsv1beta1.Deployment](appsV1beta1, "Deployment", "deployments", "deployment", "skiff.apps.v1beta1.Deployments", true,
		[]string{"deploy"}, []string{"status"})
	depBetaKind.Storage = appsV1
	served(s, depBetaKind)
	addDeploymentConversions(s.scheme, depBetaKind.GVK, depKind.GVK)
	appsv1beta1.RegisterDeploymentsServer(g, server.NewEndpoint[*appsv1beta1.Deployment, *appsv1.Deployment, *appsv1beta1.DeploymentList, appsv1beta1.DeploymentWatchResponse](
		depEP.Registry(), server.Converted[*appsv1beta1.Deployment, *appsv1.Deployment](s.scheme, 1, depBetaKind, depKind),
		object.New[*appsv1beta1.Deployment], object.New[*appsv1beta1.DeploymentList]))

	// apps/v1 ReplicaSets
	rsKind := kind[*appsv1.ReplicaSet](appsV1, "ReplicaSet", "replicasets", "replicaset", "skiff.apps.v1.ReplicaSets", true,
		[]string{"rs"}, []string{"status", "scale"}, "status.replicas")
	rsEP := install[*appsv1.ReplicaSet, *appsv1.ReplicaSetList, appsv1.ReplicaSetWatchResponse](s, rsKind, &registry.Strategy[*appsv1.ReplicaSet]{
		Default:        defaults.ReplicaSet,
		Validate:       validation.ReplicaSet,
		ValidateUpdate: validation.ReplicaSetUpdate,
		Fields: func(rs *appsv1.ReplicaSet) map[string]string {
			return map[string]string{"status.replicas": strconv.Itoa(int(rs.GetStatus().GetReplicas()))}
		},
	})
	appsv1.RegisterReplicaSetsServer(g, &replicaSetsServer{
		Endpoint:         rsEP,
		scaleSubresource: replicaSetScale(rsEP.Registry()),
	})

	// coordination.k8s.io/v1 Leases
	leaseKind := kind[*coordinationv1.Lease](coordinationV1, "Lease", "leases", "lease", "skiff.coordination.v1.Leases", true,
		nil, nil)
	leaseEP := install[*coordinationv1.Lease, *coordinationv1.LeaseList, coordinationv1.LeaseWatchResponse](s, leaseKind, &registry.Strategy[*coordinationv1.Lease]{
		Default:  defaults.Lease,
		Validate: validation.Lease,
	})
	coordinationv1.RegisterLeasesServer(g, leaseEP)

	// core/v1 ServiceAccounts, LimitRanges, ResourceQuotas
	simple(s, kind[*corev1.ServiceAccount](coreV1, "ServiceAccount", "serviceaccounts", "serviceaccount", "skiff.core.v1.ServiceAccounts", true, []string{"sa"}, nil),
		defaults.ServiceAccount, validation.ServiceAccount, validation.ServiceAccountUpdate,
		func(ep *server.Endpoint[*corev1.ServiceAccount, *corev1.ServiceAccount, *corev1.ServiceAccountList, corev1.ServiceAccountWatchResponse]) {
			corev1.RegisterServiceAccountsServer(g, ep)
		})
	simple(s, kind[*corev1.LimitRange](coreV1, "LimitRange", "limitranges", "limitrange", "skiff.core.v1.LimitRanges", true, []string{"limits"}, nil),
		defaults.LimitRange, validation.LimitRange, validation.LimitRangeUpdate,
		func(ep *server.Endpoint[*corev1.LimitRange, *corev1.LimitRange, *corev1.LimitRangeList, corev1.LimitRangeWatchResponse]) {
			corev1.RegisterLimitRangesServer(g, ep)
		})
	simple(s, kind[*corev1.ResourceQuota](coreV1, "ResourceQuota", "resourcequotas", "resourcequota", "skiff.core.v1.ResourceQuotas", true, []string{"quota"}, []string{"status"}),
		defaults.ResourceQuota, validation.ResourceQuota, validation.ResourceQuotaUpdate,
		func(ep *server.Endpoint[*corev1.ResourceQuota, *corev1.ResourceQuota, *corev1.ResourceQuotaList, corev1.ResourceQuotaWatchResponse]) {
			corev1.RegisterResourceQuotasServer(g, ep)
		})

	// rbac.authorization.k8s.io/v1
	simple(s, kind[*rbacv1.Role](rbacV1, "Role", "roles", "role", "skiff.rbac.v1.Roles", true, nil, nil),
		defaults.Role, validation.Role, validation.RoleUpdate,
		func(ep *server.Endpoint[*rbacv1.Role, *rbacv1.Role, *rbacv1.RoleList, rbacv1.RoleWatchResponse]) {
			rbacv1.RegisterRolesServer(g, ep)
		})
	simple(s, kind[*rbacv1.ClusterRole](rbacV1, "ClusterRole", "clusterroles", "clusterrole", "skiff.rbac.v1.ClusterRoles", false, nil, nil),
		defaults.ClusterRole, validation.ClusterRole, validation.ClusterRoleUpdate,
		func(ep *server.Endpoint[*rbacv1.ClusterRole, *rbacv1.ClusterRole, *rbacv1.ClusterRoleList, rbacv1.ClusterRoleWatchResponse]) {
			rbacv1.RegisterClusterRolesServer(g, ep)
		})
	simple(s, kind[*rbacv1.RoleBinding](rbacV1, "RoleBinding", "rolebindings", "rolebinding", "skiff.rbac.v1.RoleBindings", true, nil, nil),
		defaults.RoleBinding, validation.RoleBinding, validation.RoleBindingUpdate,
		func(ep *server.Endpoint[*rbacv1.RoleBinding, *rbacv1.RoleBinding, *rbacv1.RoleBindingList, rbacv1.RoleBindingWatchResponse]) {
			rbacv1.RegisterRoleBindingsServer(g, ep)
		})
	simple(s, kind[*rbacv1.ClusterRoleBinding](rbacV1, "ClusterRoleBinding", "clusterrolebindings", "clusterrolebinding", "skiff.rbac.v1.ClusterRoleBindings", false, nil, nil),
		defaults.ClusterRoleBinding, validation.ClusterRoleBinding, validation.ClusterRoleBindingUpdate,
		func(ep *server.Endpoint[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList, rbacv1.ClusterRoleBindingWatchResponse]) {
			rbacv1.RegisterClusterRoleBindingsServer(g, ep)
		})

	// admissionregistration.k8s.io/v1
	simple(s, kind[*admissionregistrationv1.MutatingWebhookConfiguration](admissionRegV1, "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", "mutatingwebhookconfiguration",
		"skiff.admissionregistration.v1.MutatingWebhookConfigurations", false, nil, nil),
		defaults.MutatingWebhookConfiguration, validation.MutatingWebhookConfiguration, validation.MutatingWebhookConfigurationUpdate,
		func(ep *server.Endpoint[*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfigurationList, admissionregistrationv1.MutatingWebhookConfigurationWatchResponse]) {
			admissionregistrationv1.RegisterMutatingWebhookConfigurationsServer(g, ep)
		})
	simple(s, kind[*admissionregistrationv1.ValidatingWebhookConfiguration](admissionRegV1, "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", "validatingwebhookconfiguration",
		"skiff.admissionregistration.v1.ValidatingWebhookConfigurations", false, nil, nil),
		defaults.ValidatingWebhookConfiguration, validation.ValidatingWebhookConfiguration, validation.ValidatingWebhookConfigurationUpdate,
		func(ep *server.Endpoint[*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfigurationList, admissionregistrationv1.ValidatingWebhookConfigurationWatchResponse]) {
			admissionregistrationv1.RegisterValidatingWebhookConfigurationsServer(g, ep)
		})
}

// simple installs a kind whose strategy is defaults and validation only,
// and registers its endpoint through register.
func simple[S object.Object, L proto.Message, W any](s *Server, k *scheme.Kind, def func(S), validate func(S) field.ErrorList,
	validateUpdate func(newObj, oldObj S) field.ErrorList, register func(*server.Endpoint[S, S, L, W])) {
	register(install[S, L, W](s, k, &registry.Strategy[S]{Default: def, Validate: validate, ValidateUpdate: validateUpdate}))
}
