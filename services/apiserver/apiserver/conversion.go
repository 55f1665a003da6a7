package apiserver

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/defaults"
	appsv1 "skiff.dev/proto/apps/v1"
	appsv1beta1 "skiff.dev/proto/apps/v1beta1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/scheme"
)

// RollbackToAnnotation carries apps/v1beta1's spec.rollbackTo in the
// apps/v1 storage version, as Kubernetes did.
const RollbackToAnnotation = "deprecated.deployment.rollback.to"

// addDeploymentConversions registers apps/v1beta1 <-> apps/v1 Deployments.
func addDeploymentConversions(s *scheme.Scheme, beta, v1 scheme.GroupVersionKind) {
	s.AddConversion(beta, v1, func(in, out proto.Message) error {
		return deploymentV1beta1ToV1(in.(*appsv1beta1.Deployment), out.(*appsv1.Deployment))
	})
	s.AddConversion(v1, beta, func(in, out proto.Message) error {
		return deploymentV1ToV1beta1(in.(*appsv1.Deployment), out.(*appsv1beta1.Deployment))
	})
}

// deploymentV1beta1ToV1 applies v1beta1's defaults (they differ from v1's)
// and converts. in is not modified.
func deploymentV1beta1ToV1(in *appsv1beta1.Deployment, out *appsv1.Deployment) error {
	in = proto.Clone(in).(*appsv1beta1.Deployment)
	defaults.DeploymentV1beta1(in)
	out.ApiVersion, out.Kind = "apps/v1", "Deployment"
	out.Metadata = in.Metadata
	out.Status = in.Status
	if in.Spec == nil {
		return nil
	}
	sp := in.Spec
	out.Spec = &appsv1.DeploymentSpec{
		Replicas:                sp.Replicas,
		Selector:                sp.Selector,
		Template:                sp.Template,
		Strategy:                sp.Strategy,
		MinReadySeconds:         sp.MinReadySeconds,
		RevisionHistoryLimit:    sp.RevisionHistoryLimit,
		Paused:                  sp.Paused,
		ProgressDeadlineSeconds: sp.ProgressDeadlineSeconds,
	}
	if sp.RollbackTo != nil {
		if out.Metadata == nil {
			out.Metadata = &metav1.ObjectMeta{}
		}
		if out.Metadata.Annotations == nil {
			out.Metadata.Annotations = map[string]string{}
		}
		out.Metadata.Annotations[RollbackToAnnotation] = strconv.FormatInt(sp.RollbackTo.Revision, 10)
	}
	return nil
}

// deploymentV1ToV1beta1 converts; in is not modified (it may be shared).
func deploymentV1ToV1beta1(in *appsv1.Deployment, out *appsv1beta1.Deployment) error {
	out.ApiVersion, out.Kind = "apps/v1beta1", "Deployment"
	out.Metadata = in.Metadata
	out.Status = in.Status
	if rb, ok := in.GetMetadata().GetAnnotations()[RollbackToAnnotation]; ok {
		rev, err := strconv.ParseInt(rb, 10, 64)
		if err != nil {
			return fmt.Errorf("annotation %s=%q: not a revision number", RollbackToAnnotation, rb)
		}
		out.Metadata = proto.Clone(in.Metadata).(*metav1.ObjectMeta)
		delete(out.Metadata.Annotations, RollbackToAnnotation)
		if out.Spec == nil {
			out.Spec = &appsv1beta1.DeploymentSpec{}
		}
		out.Spec.RollbackTo = &appsv1beta1.RollbackConfig{Revision: rev}
	}
	if sp := in.Spec; sp != nil {
		if out.Spec == nil {
			out.Spec = &appsv1beta1.DeploymentSpec{}
		}
		out.Spec.Replicas = sp.Replicas
		out.Spec.Selector = sp.Selector
		out.Spec.Template = sp.Template
		out.Spec.Strategy = sp.Strategy
		out.Spec.MinReadySeconds = sp.MinReadySeconds
		out.Spec.RevisionHistoryLimit = sp.RevisionHistoryLimit
		out.Spec.Paused = sp.Paused
		out.Spec.ProgressDeadlineSeconds = sp.ProgressDeadlineSeconds
	}
	return nil
}
