package defaults

import (
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
)

// StatefulSet defaults an apps/v1 StatefulSet as Kubernetes'
// SetDefaults_StatefulSet does: podManagementPolicy OrderedReady,
// updateStrategy RollingUpdate with partition 0 (an unset maxUnavailable
// stays unset and means 1), persistentVolumeClaimRetentionPolicy
// Retain/Retain, replicas 1, revisionHistoryLimit 10; the template's pod
// spec as a Deployment's (see PodSpec) and the claim templates' volumeMode
// Filesystem. Unlike a Deployment, metadata.labels are not copied from the
// template (apps/v1 never did for StatefulSets).
func StatefulSet(ss *appsv1.StatefulSet) {
	if ss == nil {
		return
	}
	if ss.Spec == nil {
		ss.Spec = &appsv1.StatefulSetSpec{}
	}
	s := ss.Spec
	if s.PodManagementPolicy == "" {
		s.PodManagementPolicy = "OrderedReady"
	}
	if s.UpdateStrategy == nil {
		s.UpdateStrategy = &appsv1.StatefulSetUpdateStrategy{}
	}
	us := s.UpdateStrategy
	if us.Type == "" {
		us.Type = "RollingUpdate"
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if us.Type == "RollingUpdate" && us.RollingUpdate != nil && us.RollingUpdate.Partition == nil {
		us.RollingUpdate.Partition = ptr[int32](0)
	}
	if s.PersistentVolumeClaimRetentionPolicy == nil {
		s.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if rp := s.PersistentVolumeClaimRetentionPolicy; rp.WhenDeleted == "" {
		rp.WhenDeleted = "Retain"
	}
	if rp := s.PersistentVolumeClaimRetentionPolicy; rp.WhenScaled == "" {
		rp.WhenScaled = "Retain"
	}
	if s.Replicas == nil {
		s.Replicas = ptr[int32](1)
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr[int32](10)
	}
	s.Template = podTemplate(s.Template)
	for i, c := range s.VolumeClaimTemplates {
		if c == nil {
			// What the wire makes of it anyway.
			c = &corev1.PersistentVolumeClaim{}
			s.VolumeClaimTemplates[i] = c
		}
		if c.Spec == nil {
			c.Spec = &corev1.PersistentVolumeClaimSpec{}
		}
		if c.Spec.VolumeMode == nil {
			c.Spec.VolumeMode = ptr("Filesystem")
		}
	}
}
