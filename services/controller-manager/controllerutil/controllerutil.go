// Package controllerutil holds the small facts about objects that several
// controllers share: controller references, pod readiness and availability,
// and label selectors. It holds no state and does no I/O.
package controllerutil

import (
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/labels"
	"skiff.dev/internal/object"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// ControllerOf returns the ownerReference with controller=true, or nil.
func ControllerOf(m *metav1.ObjectMeta) *metav1.OwnerReference {
	for _, r := range m.GetOwnerReferences() {
		if r.GetController() {
			return r
		}
	}
	return nil
}

// NewControllerRef returns an ownerReference to owner with controller=true
// and blockOwnerDeletion=true, as Kubernetes' controllers write them.
func NewControllerRef(owner object.Object) *metav1.OwnerReference {
	m := owner.GetMetadata()
	return &metav1.OwnerReference{
		ApiVersion:         owner.GetApiVersion(),
		Kind:               owner.GetKind(),
		Name:               m.GetName(),
		Uid:                m.GetUid(),
		Controller:         proto.Bool(true),
		BlockOwnerDeletion: proto.Bool(true),
	}
}

// IsPodActive reports whether p counts towards its controller's replicas:
// not being deleted and not finished.
func IsPodActive(p *corev1.Pod) bool {
	switch p.GetStatus().GetPhase() {
	case "Succeeded", "Failed":
		return false
	}
	return p.GetMetadata().GetDeletionTimestamp() == nil
}

// PodReadyCondition returns p's Ready condition, or nil.
func PodReadyCondition(p *corev1.Pod) *corev1.PodCondition {
	for _, c := range p.GetStatus().GetConditions() {
		if c.GetType() == "Ready" {
			return c
		}
	}
	return nil
}

// IsPodReady reports whether p's Ready condition is True.
func IsPodReady(p *corev1.Pod) bool {
	return PodReadyCondition(p).GetStatus() == "True"
}

// IsPodAvailable reports whether p has been ready for at least
// minReadySeconds at now.
func IsPodAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := PodReadyCondition(p)
	if c.GetStatus() != "True" {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	since := c.GetLastTransitionTime()
	if since == nil {
		return false
	}
	return !since.AsTime().Add(time.Duration(minReadySeconds) * time.Second).After(now)
}

// AvailableIn returns how long until a ready pod becomes available (0 when
// it is, or when it is not ready at all), so a controller can look again then.
func AvailableIn(p *corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	c := PodReadyCondition(p)
	if c.GetStatus() != "True" || minReadySeconds == 0 || c.GetLastTransitionTime() == nil {
		return 0
	}
	return max(c.GetLastTransitionTime().AsTime().Add(time.Duration(minReadySeconds)*time.Second).Sub(now), 0)
}

// Selector converts a LabelSelector; an invalid one is an error, a nil one
// selects nothing.
func Selector(s *metav1.LabelSelector) (labels.Selector, error) {
	return labels.FromProto(s)
}

// NamespaceTerminating says whether a namespace is being deleted: nothing
// new is to be made in it.
func NamespaceTerminating(ns *corev1.Namespace) bool {
	return ns.GetMetadata().GetDeletionTimestamp() != nil || ns.GetStatus().GetPhase() == "Terminating"
}
