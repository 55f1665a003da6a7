package defaults

import (
	appsv1 "skiff.dev/proto/apps/v1"
)

// DaemonSet defaults an apps/v1 DaemonSet as Kubernetes' SetDefaults_DaemonSet:
// updateStrategy RollingUpdate with maxUnavailable 1 and maxSurge 0,
// revisionHistoryLimit 10, and the template's pod spec (see PodSpec).
func DaemonSet(ds *appsv1.DaemonSet) {
	if ds == nil {
		return
	}
	if ds.Spec == nil {
		ds.Spec = &appsv1.DaemonSetSpec{}
	}
	s := ds.Spec
	s.Template = podTemplate(s.Template)
	if s.UpdateStrategy == nil {
		s.UpdateStrategy = &appsv1.DaemonSetUpdateStrategy{}
	}
	st := s.UpdateStrategy
	if st.Type == "" {
		st.Type = "RollingUpdate"
	}
	if st.Type == "RollingUpdate" {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		ru := st.RollingUpdate
		if ru.MaxUnavailable.GetValue() == nil {
			ru.MaxUnavailable = intVal(1)()
		}
		if ru.MaxSurge.GetValue() == nil {
			ru.MaxSurge = intVal(0)()
		}
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = ptr[int32](10)
	}
}
