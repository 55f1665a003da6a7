package validation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/defaults"
	"skiff.dev/internal/validation"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// webStatefulSet is the Kubernetes documentation's StatefulSet "web": a
// headless service's nginx pods, each mounting its own claim "www".
func webStatefulSet() *appsv1.StatefulSet {
	ss := &appsv1.StatefulSet{
		ApiVersion: "apps/v1",
		Kind:       "StatefulSet",
		Metadata:   &metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &appsv1.StatefulSetSpec{
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			ServiceName: "nginx",
			Replicas:    ptr[int32](3),
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "nginx"}},
				Spec: &corev1.PodSpec{Containers: []*corev1.Container{{
					Name: "nginx", Image: "registry.k8s.io/nginx-slim:0.24",
					Ports:        []*corev1.ContainerPort{{ContainerPort: 80, Name: "web"}},
					VolumeMounts: []*corev1.VolumeMount{{Name: "www", MountPath: "/usr/share/nginx/html"}},
				}}},
			},
			VolumeClaimTemplates: []*corev1.PersistentVolumeClaim{{
				Metadata: &metav1.ObjectMeta{Name: "www"},
				Spec: &corev1.PersistentVolumeClaimSpec{
					AccessModes: []string{"ReadWriteOnce"},
					Resources:   &corev1.VolumeResourceRequirements{Requests: map[string]string{"storage": "1Gi"}},
				},
			}},
		},
	}
	defaults.StatefulSet(ss)
	return ss
}

func TestStatefulSetValid(t *testing.T) {
	ss := webStatefulSet()
	before := proto.Clone(ss)
	expectErrors(t, validation.StatefulSet(ss), nil)
	unchanged(t, before, ss)
}

func TestStatefulSetRules(t *testing.T) {
	ru := func(ss *appsv1.StatefulSet) *appsv1.RollingUpdateStatefulSetStrategy {
		return ss.Spec.UpdateStrategy.RollingUpdate
	}
	cases := []struct {
		name   string
		mutate func(ss *appsv1.StatefulSet)
		want   []string
	}{
		{"name not a DNS label", func(ss *appsv1.StatefulSet) { ss.Metadata.Name = "web.v1" }, []string{"metadata.name: Invalid value"}},
		{"replicas negative", func(ss *appsv1.StatefulSet) { ss.Spec.Replicas = ptr[int32](-1) }, []string{"spec.replicas: Invalid value"}},
		{"minReadySeconds negative", func(ss *appsv1.StatefulSet) { ss.Spec.MinReadySeconds = -1 }, []string{"spec.minReadySeconds: Invalid value"}},
		{"ordinals start negative", func(ss *appsv1.StatefulSet) { ss.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: -1} },
			[]string{"spec.ordinals.start: Invalid value"}},
		{"ordinals start 5", func(ss *appsv1.StatefulSet) { ss.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5} }, nil},
		{"revisionHistoryLimit negative", func(ss *appsv1.StatefulSet) { ss.Spec.RevisionHistoryLimit = ptr[int32](-1) },
			[]string{"spec.revisionHistoryLimit: Invalid value"}},
		{"podManagementPolicy missing", func(ss *appsv1.StatefulSet) { ss.Spec.PodManagementPolicy = "" },
			[]string{"spec.podManagementPolicy: Required value"}},
		{"podManagementPolicy unknown", func(ss *appsv1.StatefulSet) { ss.Spec.PodManagementPolicy = "Burst" },
			[]string{"spec.podManagementPolicy: Invalid value"}},
		{"Parallel", func(ss *appsv1.StatefulSet) { ss.Spec.PodManagementPolicy = "Parallel" }, nil},
		{"updateStrategy missing", func(ss *appsv1.StatefulSet) { ss.Spec.UpdateStrategy = nil }, []string{"spec.updateStrategy: Required value"}},
		{"updateStrategy unknown", func(ss *appsv1.StatefulSet) { ss.Spec.UpdateStrategy.Type = "Recreate" }, []string{"spec.updateStrategy: Invalid value"}},
		{"OnDelete with rollingUpdate", func(ss *appsv1.StatefulSet) { ss.Spec.UpdateStrategy.Type = "OnDelete" },
			[]string{"spec.updateStrategy.rollingUpdate: Invalid value"}},
		{"OnDelete", func(ss *appsv1.StatefulSet) {
			ss.Spec.UpdateStrategy = &appsv1.StatefulSetUpdateStrategy{Type: "OnDelete"}
		}, nil},
		{"RollingUpdate without parameters", func(ss *appsv1.StatefulSet) { ss.Spec.UpdateStrategy.RollingUpdate = nil }, nil},
		{"partition negative", func(ss *appsv1.StatefulSet) { ru(ss).Partition = ptr[int32](-2) },
			[]string{"spec.updateStrategy.rollingUpdate.partition: Invalid value"}},
		{"maxUnavailable 0", func(ss *appsv1.StatefulSet) { ru(ss).MaxUnavailable = intOr(0) },
			[]string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value"}},
		{"maxUnavailable 0%", func(ss *appsv1.StatefulSet) { ru(ss).MaxUnavailable = strOr("0%") },
			[]string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value"}},
		{"maxUnavailable 101%", func(ss *appsv1.StatefulSet) { ru(ss).MaxUnavailable = strOr("101%") },
			[]string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value"}},
		{"maxUnavailable negative", func(ss *appsv1.StatefulSet) { ru(ss).MaxUnavailable = intOr(-1) },
			[]string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value"}},
		{"maxUnavailable 50%", func(ss *appsv1.StatefulSet) { ru(ss).MaxUnavailable = strOr("50%") }, nil},
		{"maxUnavailable 2", func(ss *appsv1.StatefulSet) { ru(ss).MaxUnavailable = intOr(2) }, nil},
		{"retention whenDeleted unknown", func(ss *appsv1.StatefulSet) { ss.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted = "Keep" },
			[]string{"spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value"}},
		{"retention whenScaled empty", func(ss *appsv1.StatefulSet) { ss.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "" },
			[]string{"spec.persistentVolumeClaimRetentionPolicy.whenScaled: Unsupported value"}},
		{"retention Delete/Delete", func(ss *appsv1.StatefulSet) {
			ss.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: "Delete", WhenScaled: "Delete"}
		}, nil},
		{"selector missing", func(ss *appsv1.StatefulSet) { ss.Spec.Selector = nil }, []string{"spec.selector: Required value"}},
		{"selector empty", func(ss *appsv1.StatefulSet) { ss.Spec.Selector = &metav1.LabelSelector{} }, []string{"spec.selector: Invalid value"}},
		{"selector does not match template labels", func(ss *appsv1.StatefulSet) { ss.Spec.Selector.MatchLabels["app"] = "db" },
			[]string{"spec.template.metadata.labels: Invalid value"}},
		{"template restartPolicy must be Always", func(ss *appsv1.StatefulSet) { ss.Spec.Template.Spec.RestartPolicy = "Never" },
			[]string{"spec.template.spec.restartPolicy: Unsupported value"}},
		{"template activeDeadlineSeconds", func(ss *appsv1.StatefulSet) { ss.Spec.Template.Spec.ActiveDeadlineSeconds = ptr[int64](5) },
			[]string{"spec.template.spec.activeDeadlineSeconds: Forbidden"}},
		{"mount of a volume that is neither in the template nor a claim", func(ss *appsv1.StatefulSet) {
			ss.Spec.Template.Spec.Containers[0].VolumeMounts[0].Name = "data"
		}, []string{"spec.template.spec.containers[0].volumeMounts[0].name: Invalid value"}},
		{"template volume named as a claim is replaced by it", func(ss *appsv1.StatefulSet) {
			ss.Spec.Template.Spec.Volumes = []*corev1.Volume{{Name: "www", EmptyDir: &corev1.EmptyDirVolumeSource{}}}
		}, nil},
		{"claim template without a name", func(ss *appsv1.StatefulSet) { ss.Spec.VolumeClaimTemplates[0].Metadata.Name = "" },
			[]string{"spec.volumeClaimTemplates[0].metadata.name: Required value", "spec.template.spec.containers[0].volumeMounts[0].name: Invalid value"}},
		{"claim template name not a label", func(ss *appsv1.StatefulSet) {
			ss.Spec.VolumeClaimTemplates = append(ss.Spec.VolumeClaimTemplates, &corev1.PersistentVolumeClaim{Metadata: &metav1.ObjectMeta{Name: "Data"}})
		}, []string{"spec.volumeClaimTemplates[1].metadata.name: Invalid value"}},
		{"claim templates of one name", func(ss *appsv1.StatefulSet) {
			ss.Spec.VolumeClaimTemplates = append(ss.Spec.VolumeClaimTemplates, proto.Clone(ss.Spec.VolumeClaimTemplates[0]).(*corev1.PersistentVolumeClaim))
		}, []string{"spec.volumeClaimTemplates[1].metadata.name: Duplicate value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ss := webStatefulSet()
			c.mutate(ss)
			expectErrors(t, validation.StatefulSet(ss), c.want)
		})
	}
}

func TestStatefulSetMessages(t *testing.T) {
	ss := webStatefulSet()
	ss.Spec.PodManagementPolicy = "Burst"
	expectDetail(t, validation.StatefulSet(ss), "spec.podManagementPolicy", "must be 'OrderedReady' or 'Parallel'")
	ss = webStatefulSet()
	ss.Spec.Selector = &metav1.LabelSelector{}
	expectDetail(t, validation.StatefulSet(ss), "spec.selector", "empty selector is invalid for statefulset")
	ss = webStatefulSet()
	ss.Spec.UpdateStrategy.Type = "Recreate"
	expectDetail(t, validation.StatefulSet(ss), "spec.updateStrategy", "must be 'RollingUpdate' or 'OnDelete'")
}

func TestStatefulSetUpdate(t *testing.T) {
	forbidden := []string{"spec: Forbidden"}
	cases := []struct {
		name   string
		mutate func(ss *appsv1.StatefulSet)
		want   []string
	}{
		{"scale", func(ss *appsv1.StatefulSet) { ss.Spec.Replicas = ptr[int32](10) }, nil},
		{"new image", func(ss *appsv1.StatefulSet) { ss.Spec.Template.Spec.Containers[0].Image = "nginx:1.27" }, nil},
		{"partition", func(ss *appsv1.StatefulSet) { ss.Spec.UpdateStrategy.RollingUpdate.Partition = ptr[int32](2) }, nil},
		{"ordinals", func(ss *appsv1.StatefulSet) { ss.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 3} }, nil},
		{"minReadySeconds", func(ss *appsv1.StatefulSet) { ss.Spec.MinReadySeconds = 10 }, nil},
		{"revisionHistoryLimit", func(ss *appsv1.StatefulSet) { ss.Spec.RevisionHistoryLimit = ptr[int32](2) }, nil},
		{"retention policy", func(ss *appsv1.StatefulSet) { ss.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Delete" }, nil},
		{"serviceName", func(ss *appsv1.StatefulSet) { ss.Spec.ServiceName = "other" }, forbidden},
		{"podManagementPolicy", func(ss *appsv1.StatefulSet) { ss.Spec.PodManagementPolicy = "Parallel" }, forbidden},
		{"selector", func(ss *appsv1.StatefulSet) {
			ss.Spec.Selector.MatchLabels["tier"] = "web"
			ss.Spec.Template.Metadata.Labels["tier"] = "web"
		}, forbidden},
		{"claim templates", func(ss *appsv1.StatefulSet) {
			ss.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests["storage"] = "2Gi"
		}, forbidden},
		{"namespace", func(ss *appsv1.StatefulSet) { ss.Metadata.Namespace = "prod" }, []string{"metadata.namespace: Invalid value"}},
		{"new object invalid", func(ss *appsv1.StatefulSet) { ss.Spec.Replicas = ptr[int32](-1) }, []string{"spec.replicas: Invalid value"}},
		{"new label invalid", func(ss *appsv1.StatefulSet) { ss.Metadata.Labels = map[string]string{"-x": "y"} }, []string{"metadata.labels[-x]: Invalid value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			oldSS := webStatefulSet()
			newSS := proto.Clone(oldSS).(*appsv1.StatefulSet)
			c.mutate(newSS)
			expectErrors(t, validation.StatefulSetUpdate(newSS, oldSS), c.want)
		})
	}
}

func TestPersistentVolumeClaimVolumeSource(t *testing.T) {
	spec := &corev1.PodSpec{
		Volumes:    []*corev1.Volume{{Name: "data", PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}},
		Containers: []*corev1.Container{{Name: "c", Image: "busybox"}},
	}
	p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "db-0", Namespace: "default"}, Spec: spec}
	defaults.Pod(p)
	expectErrors(t, validation.Pod(p), nil)
	p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = ""
	expectErrors(t, validation.Pod(p), []string{"spec.volumes[0].persistentVolumeClaim.claimName: Required value"})
	p.Spec.Volumes[0].EmptyDir = &corev1.EmptyDirVolumeSource{}
	p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = "x"
	expectErrors(t, validation.Pod(p), []string{"spec.volumes[0].persistentVolumeClaim: Forbidden"})
}
