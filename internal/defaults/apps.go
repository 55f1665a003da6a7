package defaults

import (
	"maps"

	appsv1 "skiff.dev/proto/apps/v1"
	appsv1beta1 "skiff.dev/proto/apps/v1beta1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Deployment defaults an apps/v1 Deployment: replicas 1, strategy
// RollingUpdate with maxUnavailable and maxSurge 25%, revisionHistoryLimit
// 10, progressDeadlineSeconds 600, the template's pod spec (see PodSpec),
// and metadata.labels from the template's labels when it has none.
func Deployment(d *appsv1.Deployment) {
	if d == nil {
		return
	}
	if d.Spec == nil {
		d.Spec = &appsv1.DeploymentSpec{}
	}
	s := d.Spec
	if s.Replicas == nil {
		s.Replicas = ptr[int32](1)
	}
	s.Template = podTemplate(s.Template)
	d.Metadata = labelsFromTemplate(d.Metadata, s.Template)
	s.Strategy = strategy(s.Strategy, pct("25%"), pct("25%"))
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr[int32](10)
	}
	if s.ProgressDeadlineSeconds == nil {
		s.ProgressDeadlineSeconds = ptr[int32](600)
	}
}

// DeploymentV1beta1 defaults an apps/v1beta1 Deployment, whose defaults
// differ from apps/v1: the selector defaults to the template's labels,
// revisionHistoryLimit to 2, and maxSurge and maxUnavailable to 1. Replicas
// (1), progressDeadlineSeconds (600), metadata.labels and the template are
// defaulted as in apps/v1.
func DeploymentV1beta1(d *appsv1beta1.Deployment) {
	if d == nil {
		return
	}
	if d.Spec == nil {
		d.Spec = &appsv1beta1.DeploymentSpec{}
	}
	s := d.Spec
	if s.Replicas == nil {
		s.Replicas = ptr[int32](1)
	}
	s.Template = podTemplate(s.Template)
	if s.Selector == nil && len(s.Template.Metadata.GetLabels()) > 0 {
		s.Selector = &metav1.LabelSelector{MatchLabels: maps.Clone(s.Template.Metadata.GetLabels())}
	}
	d.Metadata = labelsFromTemplate(d.Metadata, s.Template)
	s.Strategy = strategy(s.Strategy, intVal(1), intVal(1))
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr[int32](2)
	}
	if s.ProgressDeadlineSeconds == nil {
		s.ProgressDeadlineSeconds = ptr[int32](600)
	}
}

// ReplicaSet defaults an apps/v1 ReplicaSet: replicas 1, the template's pod
// spec, and metadata.labels from the template's labels when it has none.
func ReplicaSet(rs *appsv1.ReplicaSet) {
	if rs == nil {
		return
	}
	if rs.Spec == nil {
		rs.Spec = &appsv1.ReplicaSetSpec{}
	}
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = ptr[int32](1)
	}
	rs.Spec.Template = podTemplate(rs.Spec.Template)
	rs.Metadata = labelsFromTemplate(rs.Metadata, rs.Spec.Template)
}

// podTemplate returns t, created if nil (a template is always present in
// Kubernetes, so its spec is always defaulted), with its pod spec defaulted.
func podTemplate(t *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	if t == nil {
		t = &corev1.PodTemplateSpec{}
	}
	if t.Spec == nil {
		t.Spec = &corev1.PodSpec{}
	}
	PodSpec(t.Spec)
	return t
}

// labelsFromTemplate gives an object without labels a copy of its pod
// template's labels, as Kubernetes' extensions/v1beta1 defaulting did.
func labelsFromTemplate(m *metav1.ObjectMeta, t *corev1.PodTemplateSpec) *metav1.ObjectMeta {
	tl := t.GetMetadata().GetLabels()
	if len(tl) == 0 || len(m.GetLabels()) > 0 {
		return m
	}
	if m == nil {
		m = &metav1.ObjectMeta{}
	}
	m.Labels = maps.Clone(tl)
	return m
}

// strategy defaults a deployment strategy to RollingUpdate and, for a
// rolling update, fills the unset bounds with the given values.
func strategy(st *appsv1.DeploymentStrategy, maxUnavailable, maxSurge func() *metav1.IntOrString) *appsv1.DeploymentStrategy {
	if st == nil {
		st = &appsv1.DeploymentStrategy{}
	}
	if st.Type == "" {
		st.Type = "RollingUpdate"
	}
	if st.Type != "RollingUpdate" {
		return st
	}
	if st.RollingUpdate == nil {
		st.RollingUpdate = &appsv1.RollingUpdateDeployment{}
	}
	ru := st.RollingUpdate
	// An IntOrString holding neither variant is as unset as a nil one.
	if ru.MaxUnavailable.GetValue() == nil {
		ru.MaxUnavailable = maxUnavailable()
	}
	if ru.MaxSurge.GetValue() == nil {
		ru.MaxSurge = maxSurge()
	}
	return st
}

func pct(s string) func() *metav1.IntOrString {
	return func() *metav1.IntOrString {
		return &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: s}}
	}
}

func intVal(i int32) func() *metav1.IntOrString {
	return func() *metav1.IntOrString {
		return &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: i}}
	}
}
