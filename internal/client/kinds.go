package client

import (
	"google.golang.org/grpc"

	appsv1 "skiff.dev/proto/apps/v1"
	appsv1beta1 "skiff.dev/proto/apps/v1beta1"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
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
