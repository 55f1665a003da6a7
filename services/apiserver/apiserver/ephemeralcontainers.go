package apiserver

import (
	"context"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/defaults"
	"skiff.dev/internal/field"
	"skiff.dev/internal/validation"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/registry"
)

// The ephemeralcontainers subresource (Pods.UpdateEphemeralContainers),
// as Kubernetes' EphemeralContainersREST: the request is a whole pod, of
// which only spec.ephemeralContainers counts (the rest is kept as stored,
// as Kubernetes' dropNonEphemeralContainerUpdates); the ephemeral
// containers are defaulted, and the result must keep every ephemeral
// container the pod had, unchanged (validation.PodEphemeralContainersUpdate).
// metadata.uid and metadata.resourceVersion, when set, are preconditions.
// The request is authorized as update on pods/ephemeralcontainers
// (server.Routes), which no bootstrap role grants but the cluster
// administrator's (kinds.RoleResources), and admitted as an update of that
// subresource.

// UpdateEphemeralContainers implements corev1.PodsServer.
func (p *podsServer) UpdateEphemeralContainers(ctx context.Context, req *corev1.Pod) (*corev1.Pod, error) {
	meta := req.GetMetadata()
	if meta.GetName() == "" {
		return nil, apierrors.NewInvalid("Pod", "", field.ErrorList{field.Required(field.NewPath("metadata", "name"), "the pod to add ephemeral containers to")})
	}
	want := make([]*corev1.EphemeralContainer, len(req.GetSpec().GetEphemeralContainers()))
	for i, ec := range req.GetSpec().GetEphemeralContainers() {
		want[i] = proto.Clone(ec).(*corev1.EphemeralContainer)
	}
	defaults.PodSpec(&corev1.PodSpec{EphemeralContainers: want})
	pre := &metav1.Preconditions{Uid: meta.GetUid(), ResourceVersion: meta.GetResourceVersion()}
	sub := registry.Subresource{Name: "ephemeralcontainers", Operation: admission.Update}
	return p.reg.GuaranteedUpdate(ctx, sub, meta.GetNamespace(), meta.GetName(), pre, func(cur *corev1.Pod) (*corev1.Pod, error) {
		if ephemeralEqual(cur.GetSpec().GetEphemeralContainers(), want) {
			return cur, nil
		}
		next := proto.Clone(cur).(*corev1.Pod)
		if next.Spec == nil {
			next.Spec = &corev1.PodSpec{}
		}
		next.Spec.EphemeralContainers = want
		if errs := validation.PodEphemeralContainersUpdate(next, cur); len(errs) > 0 {
			return nil, apierrors.NewInvalid("Pod", cur.GetMetadata().GetName(), errs)
		}
		next.Metadata.Generation++ // the spec changed, as Kubernetes' pod generation
		return next, nil
	})
}

func ephemeralEqual(a, b []*corev1.EphemeralContainer) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
