package statefulset

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testSet is "ns/web" (uid set1) with one claim template "data".
func testSet(replicas int32, opts ...func(*appsv1.StatefulSetSpec)) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "ns", Uid: "set1", Generation: 2},
		Spec: &appsv1.StatefulSetSpec{
			Replicas:            proto.Int32(replicas),
			ServiceName:         "web",
			PodManagementPolicy: "OrderedReady",
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "c", Image: "v2"}}},
			},
			UpdateStrategy: &appsv1.StatefulSetUpdateStrategy{Type: "RollingUpdate",
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: proto.Int32(0)}},
			VolumeClaimTemplates:                 []*corev1.PersistentVolumeClaim{{Metadata: &metav1.ObjectMeta{Name: "data"}}},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: "Retain", WhenScaled: "Retain"},
		},
	}
	for _, o := range opts {
		o(s.Spec)
	}
	return s
}

func parallel(s *appsv1.StatefulSetSpec) { s.PodManagementPolicy = "Parallel" }
func partition(n int32) func(*appsv1.StatefulSetSpec) {
	return func(s *appsv1.StatefulSetSpec) { s.UpdateStrategy.RollingUpdate.Partition = proto.Int32(n) }
}
func maxUnavailable(v *metav1.IntOrString) func(*appsv1.StatefulSetSpec) {
	return func(s *appsv1.StatefulSetSpec) { s.UpdateStrategy.RollingUpdate.MaxUnavailable = v }
}
func onDelete(s *appsv1.StatefulSetSpec) {
	s.UpdateStrategy = &appsv1.StatefulSetUpdateStrategy{Type: "OnDelete"}
}
func startAt(n int32) func(*appsv1.StatefulSetSpec) {
	return func(s *appsv1.StatefulSetSpec) { s.Ordinals = &appsv1.StatefulSetOrdinals{Start: n} }
}
func minReady(n int32) func(*appsv1.StatefulSetSpec) {
	return func(s *appsv1.StatefulSetSpec) { s.MinReadySeconds = n }
}

// pod parses "<ordinal>[:state][:revision]": state ready (default),
// pending, failed, terminating, fresh (ready 5s ago); revision r1 (the
// current, default) or r2 (the update).
func pod(spec string) *corev1.Pod {
	parts := strings.Split(spec, ":")
	state, rev := "ready", "r1"
	if len(parts) > 1 && parts[1] != "" {
		state = parts[1]
	}
	if len(parts) > 2 {
		rev = parts[2]
	}
	name := "web-" + parts[0]
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: name, Namespace: "ns", Uid: "uid-" + name,
			Labels: map[string]string{"app": "web", PodNameLabel: name, PodIndexLabel: parts[0], RevisionLabel: rev}},
		Spec:   &corev1.PodSpec{},
		Status: &corev1.PodStatus{Phase: "Pending"},
	}
	readySince := epoch.Add(-time.Hour)
	switch state {
	case "ready", "terminating":
		p.Status.Phase = "Running"
		p.Status.Conditions = []*corev1.PodCondition{{Type: "Ready", Status: "True", LastTransitionTime: timestamppb.New(readySince)}}
		if state == "terminating" {
			p.Metadata.DeletionTimestamp = timestamppb.New(epoch)
		}
	case "fresh":
		p.Status.Phase = "Running"
		p.Status.Conditions = []*corev1.PodCondition{{Type: "Ready", Status: "True", LastTransitionTime: timestamppb.New(epoch.Add(-5 * time.Second))}}
	case "failed":
		p.Status.Phase = "Failed"
	case "pending":
	default:
		panic("unknown state " + state)
	}
	return p
}

func pods(specs ...string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, s := range specs {
		out = append(out, pod(s))
	}
	return out
}

func testInput(set *appsv1.StatefulSet, ps []*corev1.Pod, claims ...*corev1.PersistentVolumeClaim) input {
	current := proto.Clone(set).(*appsv1.StatefulSet)
	current.Spec.Template.Spec.Containers[0].Image = "v1"
	byName := map[string]*corev1.PersistentVolumeClaim{}
	for _, c := range claims {
		byName[c.GetMetadata().GetName()] = c
	}
	return input{
		set: set, currentSet: current, updateSet: set,
		currentRevision: "r1", updateRevision: "r2",
		pods: ps, claims: func(n string) *corev1.PersistentVolumeClaim { return byName[n] }, now: epoch,
	}
}

func describe(pl plan) []string {
	var out []string
	for _, a := range pl.actions {
		s := a.String()
		if a.kind == createPod {
			s += " at " + podRevision(a.pod)
		}
		out = append(out, s)
	}
	return out
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name    string
		set     *appsv1.StatefulSet
		pods    []*corev1.Pod
		want    []string
		waiting string // a substring of plan.waiting ("" : not waiting)
	}{
		{"OrderedReady creates the lowest missing ordinal only", testSet(3), nil,
			[]string{"create web-0 at r2"}, ""},
		{"OrderedReady creates the next once the previous is ready", testSet(3), pods("0:ready:r2"),
			[]string{"create web-1 at r2"}, ""},
		{"OrderedReady waits for a pending pod", testSet(3), pods("0:ready:r2", "1:pending:r2"),
			nil, "web-1 to be Running and Ready"},
		{"OrderedReady waits for minReadySeconds", testSet(3, minReady(10)), pods("0:fresh:r2"),
			nil, "web-0 to be available"},
		{"OrderedReady fills a hole before anything else", testSet(3), pods("0:ready:r2", "2:ready:r2"),
			[]string{"create web-1 at r2"}, ""},
		{"Parallel creates every missing ordinal", testSet(3, parallel), pods("1:pending:r2"),
			[]string{"create web-0 at r2", "create web-2 at r2"}, ""},
		{"ordinals start at 5", testSet(2, startAt(5)), nil,
			[]string{"create web-5 at r2"}, ""},
		{"pods outside the ordinals are condemned", testSet(2, startAt(5)), pods("5:ready:r2", "6:ready:r2", "0:ready:r2"),
			[]string{"delete web-0 (scale down)"}, ""},
		{"OrderedReady scales down from the highest ordinal, one at a time", testSet(2), pods("0:ready:r2", "1:ready:r2", "2:ready:r2", "3:ready:r2"),
			[]string{"delete web-3 (scale down)"}, ""},
		{"OrderedReady waits for a terminating pod before the next", testSet(2), pods("0:ready:r2", "1:ready:r2", "2:ready:r2", "3:terminating:r2"),
			nil, "web-3 to terminate"},
		{"OrderedReady does not scale down while a replica is unhealthy", testSet(2), pods("0:ready:r2", "1:pending:r2", "2:ready:r2"),
			nil, "web-1 to be Running and Ready"},
		{"the first unhealthy pod may go", testSet(1), pods("0:ready:r2", "1:ready:r2", "2:pending:r2"),
			[]string{"delete web-2 (scale down)"}, ""},
		{"an unhealthy condemned pod waits for the first unhealthy one", testSet(1), pods("0:ready:r2", "1:pending:r2", "2:pending:r2"),
			nil, "web-1 to be Running and Ready before scaling down"},
		{"Parallel scales down every condemned pod", testSet(1, parallel), pods("0:ready:r2", "1:pending:r2", "2:ready:r2"),
			[]string{"delete web-2 (scale down)", "delete web-1 (scale down)"}, ""},
		{"a failed pod is deleted and made again", testSet(2), pods("0:ready:r2", "1:failed:r2"),
			[]string{"delete web-1 (failed)", "create web-1 at r2"}, ""},
		{"rolling update: the highest ordinal first", testSet(3), pods("0", "1", "2"),
			[]string{"delete web-2 (update)"}, ""},
		{"rolling update: the next once the updated pod is ready", testSet(3), pods("0", "1", "2:ready:r2"),
			[]string{"delete web-1 (update)"}, ""},
		{"rolling update: a deleted pod comes back at the update revision", testSet(3), pods("0", "1"),
			[]string{"create web-2 at r2"}, ""},
		{"rolling update: waits while a pod is unavailable", testSet(3, parallel), pods("0", "1:pending", "2:ready:r2"),
			nil, "1 unavailable pods (maxUnavailable 1)"},
		{"partition 2: only ordinals 2 and up", testSet(4, partition(2)), pods("0", "1", "2:ready:r2", "3:ready:r2"),
			nil, ""},
		{"partition 2: below it pods are made at the current revision", testSet(3, partition(2)), pods("1", "2:ready:r2"),
			[]string{"create web-0 at r1"}, ""},
		{"maxUnavailable 2", testSet(4, maxUnavailable(&metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 2}})), pods("0", "1", "2", "3"),
			[]string{"delete web-3 (update)", "delete web-2 (update)"}, ""},
		{"maxUnavailable 50% of 4 with one unavailable", testSet(4, parallel, maxUnavailable(&metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: "50%"}})), pods("0", "1", "2", "3:pending:r2"),
			[]string{"delete web-2 (update)"}, ""},
		{"OnDelete: no deletions for the update", testSet(3, onDelete), pods("0", "1", "2"),
			nil, ""},
		{"OnDelete: a deleted pod comes back at the update revision", testSet(3, onDelete), pods("0", "2"),
			[]string{"create web-1 at r2"}, ""},
		{"identity labels fixed", testSet(1), func() []*corev1.Pod {
			p := pod("0:ready:r2")
			delete(p.Metadata.Labels, PodIndexLabel)
			return []*corev1.Pod{p}
		}(), []string{"fix identity of web-0"}, ""},
		{"a set being deleted does nothing", func() *appsv1.StatefulSet {
			s := testSet(3)
			s.Metadata.DeletionTimestamp = timestamppb.New(epoch)
			return s
		}(), nil, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pl := decide(testInput(c.set, c.pods))
			if got := describe(pl); !slices.Equal(got, c.want) {
				t.Errorf("actions %q, want %q (waiting: %q)", got, c.want, pl.waiting)
			}
			if c.waiting == "" && pl.waiting != "" && len(c.want) > 0 {
				t.Errorf("waiting %q", pl.waiting)
			}
			if c.waiting != "" && !strings.Contains(pl.waiting, c.waiting) {
				t.Errorf("waiting %q, want it to say %q", pl.waiting, c.waiting)
			}
		})
	}
}

func TestDecideWaitsForAStaleClaim(t *testing.T) {
	set := testSet(2)
	set.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Delete"
	claim := &corev1.PersistentVolumeClaim{Metadata: &metav1.ObjectMeta{Name: "data-web-1", Namespace: "ns",
		OwnerReferences: []*metav1.OwnerReference{{ApiVersion: "v1", Kind: "Pod", Name: "web-1", Uid: "old-pod", Controller: proto.Bool(true)}}}}
	pl := decide(testInput(set, pods("0:ready:r2"), claim))
	if len(pl.actions) != 0 || !strings.Contains(pl.waiting, "earlier pod") {
		t.Fatalf("actions %v waiting %q", describe(pl), pl.waiting)
	}
}

func TestNewPod(t *testing.T) {
	set := testSet(3, startAt(2))
	set.Spec.Template.Spec.Volumes = []*corev1.Volume{
		{Name: "data", EmptyDir: &corev1.EmptyDirVolumeSource{}},
		{Name: "cfg", ConfigMap: &corev1.ConfigMapVolumeSource{Name: "cfg"}},
	}
	p := newPod(set, 3, "web-abc")
	m := p.GetMetadata()
	if m.GetName() != "web-3" || m.GetNamespace() != "ns" || p.GetSpec().GetHostname() != "web-3" || p.GetSpec().GetSubdomain() != "web" {
		t.Errorf("identity: %v %v", m, p.GetSpec())
	}
	want := map[string]string{"app": "web", PodNameLabel: "web-3", PodIndexLabel: "3", RevisionLabel: "web-abc"}
	for k, v := range want {
		if m.GetLabels()[k] != v {
			t.Errorf("label %s = %q, want %q", k, m.GetLabels()[k], v)
		}
	}
	vols := p.GetSpec().GetVolumes()
	if len(vols) != 2 || vols[0].GetPersistentVolumeClaim().GetClaimName() != "data-web-3" || vols[1].GetName() != "cfg" {
		t.Errorf("volumes %v", vols)
	}
	ref := m.GetOwnerReferences()
	if len(ref) != 1 || ref[0].GetKind() != "StatefulSet" || ref[0].GetApiVersion() != "apps/v1" || !ref[0].GetController() || ref[0].GetUid() != "set1" {
		t.Errorf("owner references %v", ref)
	}
	if set.Spec.Template.Spec.Volumes[0].EmptyDir == nil || set.Spec.Template.Metadata.Labels[PodNameLabel] != "" {
		t.Errorf("newPod changed the set's template")
	}
	claims := newClaims(set, 3)
	if len(claims) != 1 || claims[0].GetMetadata().GetName() != "data-web-3" || claims[0].GetMetadata().GetLabels()["app"] != "web" {
		t.Errorf("claims %v", claims)
	}
}

func TestParentAndOrdinal(t *testing.T) {
	for name, want := range map[string]string{
		"web-0": "web 0", "web-12": "web 12", "my-db-3": "my-db 3", "web": " -1", "web-x": " -1", "web-99999999999": "web -1",
	} {
		p, o := parentAndOrdinal(name)
		if got := fmt.Sprintf("%s %d", p, o); got != want {
			t.Errorf("parentAndOrdinal(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestMaxUnavailableOf(t *testing.T) {
	iv := func(i int32) *metav1.IntOrString {
		return &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: i}}
	}
	sv := func(s string) *metav1.IntOrString {
		return &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: s}}
	}
	for _, c := range []struct {
		v        *metav1.IntOrString
		replicas int
		want     int
	}{{nil, 5, 1}, {iv(3), 5, 3}, {sv("50%"), 5, 2}, {sv("10%"), 5, 1}, {sv("100%"), 4, 4}} {
		if got := maxUnavailableOf(c.v, c.replicas); got != c.want {
			t.Errorf("maxUnavailableOf(%v, %d) = %d, want %d", c.v, c.replicas, got, c.want)
		}
	}
}

func TestComputeStatus(t *testing.T) {
	set := testSet(3, minReady(10))
	ps := pods("0:ready:r1", "1:fresh:r2", "2:terminating:r2", "3:pending:r2")
	st, next := computeStatus(set, ps, "r1", "r2", 1, epoch)
	if st.GetReplicas() != 4 || st.GetReadyReplicas() != 3 || st.GetAvailableReplicas() != 2 ||
		st.GetCurrentReplicas() != 1 || st.GetUpdatedReplicas() != 2 || st.GetCollisionCount() != 1 ||
		st.GetObservedGeneration() != 2 || st.GetCurrentRevision() != "r1" || st.GetUpdateRevision() != "r2" {
		t.Errorf("status %v", st)
	}
	if next != 5*time.Second {
		t.Errorf("next available in %v, want 5s", next)
	}
	// Every replica updated and ready: the update is complete.
	st, _ = computeStatus(testSet(2), pods("0:ready:r2", "1:ready:r2"), "r1", "r2", 0, epoch)
	if st.GetCurrentRevision() != "r2" || st.GetCurrentReplicas() != 2 || st.GetUpdatedReplicas() != 2 {
		t.Errorf("completed update: %v", st)
	}
}
