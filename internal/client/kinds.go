package client

import (
	"google.golang.org/grpc"

	admissionregistrationv1 "skiff.dev/proto/admissionregistration/v1"
	appsv1 "skiff.dev/proto/apps/v1"
	appsv1beta1 "skiff.dev/proto/apps/v1beta1"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
)

// Typed clients of every kind, by service.

func Namespaces(c grpc.ClientConnInterface) *Resource[*corev1.Namespace, *corev1.NamespaceList] {
	return NewResource[*corev1.Namespace, *corev1.NamespaceList](c, "skiff.core.v1.Namespaces")
}

func Pods(c grpc.ClientConnInterface) *Resource[*corev1.Pod, *corev1.PodList] {
	return NewResource[*corev1.Pod, *corev1.PodList](c, "skiff.core.v1.Pods")
}

func Nodes(c grpc.ClientConnInterface) *Resource[*corev1.Node, *corev1.NodeList] {
	return NewResource[*corev1.Node, *corev1.NodeList](c, "skiff.core.v1.Nodes")
}

func Events(c grpc.ClientConnInterface) *Resource[*corev1.Event, *corev1.EventList] {
	return NewResource[*corev1.Event, *corev1.EventList](c, "skiff.core.v1.Events")
}

func ConfigMaps(c grpc.ClientConnInterface) *Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return NewResource[*corev1.ConfigMap, *corev1.ConfigMapList](c, "skiff.core.v1.ConfigMaps")
}

func Deployments(c grpc.ClientConnInterface) *Resource[*appsv1.Deployment, *appsv1.DeploymentList] {
	return NewResource[*appsv1.Deployment, *appsv1.DeploymentList](c, "skiff.apps.v1.Deployments")
}

// DeploymentsV1beta1 is the older served version of Deployments.
func DeploymentsV1beta1(c grpc.ClientConnInterface) *Resource[*appsv1beta1.Deployment, *appsv1beta1.DeploymentList] {
	return NewResource[*appsv1beta1.Deployment, *appsv1beta1.DeploymentList](c, "skiff.apps.v1beta1.Deployments")
}

func ReplicaSets(c grpc.ClientConnInterface) *Resource[*appsv1.ReplicaSet, *appsv1.ReplicaSetList] {
	return NewResource[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](c, "skiff.apps.v1.ReplicaSets")
}

func Leases(c grpc.ClientConnInterface) *Resource[*coordinationv1.Lease, *coordinationv1.LeaseList] {
	return NewResource[*coordinationv1.Lease, *coordinationv1.LeaseList](c, "skiff.coordination.v1.Leases")
}

func ServiceAccounts(c grpc.ClientConnInterface) *Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList] {
	return NewResource[*corev1.ServiceAccount, *corev1.ServiceAccountList](c, "skiff.core.v1.ServiceAccounts")
}

func LimitRanges(c grpc.ClientConnInterface) *Resource[*corev1.LimitRange, *corev1.LimitRangeList] {
	return NewResource[*corev1.LimitRange, *corev1.LimitRangeList](c, "skiff.core.v1.LimitRanges")
}

func ResourceQuotas(c grpc.ClientConnInterface) *Resource[*corev1.ResourceQuota, *corev1.ResourceQuotaList] {
	return NewResource[*corev1.ResourceQuota, *corev1.ResourceQuotaList](c, "skiff.core.v1.ResourceQuotas")
}

func Roles(c grpc.ClientConnInterface) *Resource[*rbacv1.Role, *rbacv1.RoleList] {
	return NewResource[*rbacv1.Role, *rbacv1.RoleList](c, "skiff.rbac.v1.Roles")
}

func ClusterRoles(c grpc.ClientConnInterface) *Resource[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList] {
	return NewResource[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList](c, "skiff.rbac.v1.ClusterRoles")
}

func RoleBindings(c grpc.ClientConnInterface) *Resource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList] {
	return NewResource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList](c, "skiff.rbac.v1.RoleBindings")
}

func ClusterRoleBindings(c grpc.ClientConnInterface) *Resource[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList] {
	return NewResource[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList](c, "skiff.rbac.v1.ClusterRoleBindings")
}

func MutatingWebhookConfigurations(c grpc.ClientConnInterface) *Resource[*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfigurationList] {
	return NewResource[*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfigurationList](c, "skiff.admissionregistration.v1.MutatingWebhookConfigurations")
}

func ValidatingWebhookConfigurations(c grpc.ClientConnInterface) *Resource[*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfigurationList] {
	return NewResource[*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfigurationList](c, "skiff.admissionregistration.v1.ValidatingWebhookConfigurations")
}
