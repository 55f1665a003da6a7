package deployment

import (
	"maps"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	appsv1 "skiff.dev/proto/apps/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// replicaSet builds a ReplicaSet of Deployment "web" (uid d-1) for the
// tables; revision "" leaves the annotation out.
func replicaSet(name, revision, image string, age int, spec, status int32) *appsv1.ReplicaSet {
	tmpl := webTemplate(image)
	tmpl.Metadata.Labels[PodTemplateHashLabel] = name
	r := &appsv1.ReplicaSet{
		Metadata: &metav1.ObjectMeta{
			Name: name, Namespace: "ns", Uid: "rs-" + name, Generation: 1,
			CreationTimestamp: timestamppb.New(t0.Add(time.Duration(age) * time.Minute)),
			Annotations:       map[string]string{},
			OwnerReferences:   []*metav1.OwnerReference{{Kind: "Deployment", Name: "web", Uid: "d-1", Controller: proto.Bool(true)}},
		},
		Spec:   &appsv1.ReplicaSetSpec{Replicas: &spec, Template: tmpl},
		Status: &appsv1.ReplicaSetStatus{Replicas: status, ObservedGeneration: 1},
	}
	if revision != "" {
		r.Metadata.Annotations[RevisionAnnotation] = revision
	}
	return r
}

func names(rses []*appsv1.ReplicaSet) []string {
	var out []string
	for _, r := range rses {
		out = append(out, r.GetMetadata().GetName())
	}
	return out
}

func TestRevisions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		revisions []string
		wantMax   int64
	}{
		{"none", nil, 0},
		{"one", []string{"1"}, 1},
		{"in order", []string{"1", "2", "3"}, 3},
		{"out of order with gaps", []string{"7", "2", "4"}, 7},
		{"missing and malformed ones are skipped", []string{"", "x", "5", "3"}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rses []*appsv1.ReplicaSet
			for i, r := range tc.revisions {
				rses = append(rses, replicaSet(string(rune('a'+i)), r, "nginx", i, 0, 0))
			}
			if got := maxRevision(rses); got != tc.wantMax {
				t.Errorf("maxRevision = %d, want %d", got, tc.wantMax)
			}
		})
	}
}

func TestSetNewRSAnnotations(t *testing.T) {
	d := &appsv1.Deployment{Metadata: &metav1.ObjectMeta{Annotations: map[string]string{
		"team":                    "web",
		RevisionAnnotation:        "3",
		RollbackToAnnotation:      "0",
		lastAppliedAnnotation:     "{}",
		RevisionHistoryAnnotation: "1",
	}}}
	b := bounds{Replicas: 4, MaxSurge: 1}
	for _, tc := range []struct {
		name        string
		have        map[string]string
		newRevision int64
		creating    bool
		want        map[string]string
		wantChanged bool
	}{
		{
			name: "a ReplicaSet being created", have: map[string]string{}, newRevision: 4, creating: true,
			want:        map[string]string{"team": "web", RevisionAnnotation: "4", DesiredReplicasAnnotation: "4", MaxReplicasAnnotation: "5"},
			wantChanged: true,
		},
		{
			name: "up to date", newRevision: 4,
			have:        map[string]string{"team": "web", RevisionAnnotation: "4"},
			want:        map[string]string{"team": "web", RevisionAnnotation: "4"},
			wantChanged: false,
		},
		{
			name: "an old template back: next revision, the old one in the history", newRevision: 6,
			have:        map[string]string{"team": "web", RevisionAnnotation: "2", RevisionHistoryAnnotation: "1"},
			want:        map[string]string{"team": "web", RevisionAnnotation: "6", RevisionHistoryAnnotation: "1,2"},
			wantChanged: true,
		},
		{
			name: "a revision above the next is kept (old ReplicaSets were deleted)", newRevision: 2,
			have:        map[string]string{"team": "web", RevisionAnnotation: "5"},
			want:        map[string]string{"team": "web", RevisionAnnotation: "5"},
			wantChanged: false,
		},
		{
			name: "the Deployment's annotations are copied", newRevision: 1,
			have:        map[string]string{"team": "db", RevisionAnnotation: "1"},
			want:        map[string]string{"team": "web", RevisionAnnotation: "1"},
			wantChanged: true,
		},
		{
			name: "a malformed revision is left alone", newRevision: 3,
			have:        map[string]string{"team": "web", RevisionAnnotation: "x"},
			want:        map[string]string{"team": "web", RevisionAnnotation: "x"},
			wantChanged: false,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ann := maps.Clone(tc.have)
			changed := setNewRSAnnotations(ann, d, tc.newRevision, b, tc.creating)
			if changed != tc.wantChanged || !maps.Equal(ann, tc.want) {
				t.Errorf("setNewRSAnnotations = %v, %v; want %v, %v", changed, ann, tc.wantChanged, tc.want)
			}
		})
	}
}

func TestAppendHistory(t *testing.T) {
	long := ""
	for range 600 {
		long += "123,"
	}
	long += "123"
	if got := appendHistory("", "1"); got != "1" {
		t.Errorf("appendHistory(\"\", 1) = %q", got)
	}
	if got := appendHistory("1,2", "4"); got != "1,2,4" {
		t.Errorf("appendHistory(1,2, 4) = %q", got)
	}
	if got := appendHistory(long, "999"); len(got) > maxRevisionHistoryChars || got[len(got)-4:] != ",999" {
		t.Errorf("appendHistory of a long history: %d chars ending %q", len(got), got[len(got)-4:])
	}
}

func TestRollbackTo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		rev     int64
		ok, err bool
	}{
		{"absent", nil, 0, false, false},
		{"previous", map[string]string{RollbackToAnnotation: "0"}, 0, true, false},
		{"a revision", map[string]string{RollbackToAnnotation: "4"}, 4, true, false},
		{"not a number", map[string]string{RollbackToAnnotation: "four"}, 0, true, true},
		{"negative", map[string]string{RollbackToAnnotation: "-1"}, 0, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rev, ok, err := rollbackTo(&appsv1.Deployment{Metadata: &metav1.ObjectMeta{Annotations: tc.ann}})
			if rev != tc.rev || ok != tc.ok || (err != nil) != tc.err {
				t.Errorf("rollbackTo = %d, %v, %v; want %d, %v, error %v", rev, ok, err, tc.rev, tc.ok, tc.err)
			}
		})
	}
}

func TestAnnotationsFromRS(t *testing.T) {
	d := &appsv1.Deployment{Metadata: &metav1.ObjectMeta{Annotations: map[string]string{
		"team": "web", "note": "current", RevisionAnnotation: "5", RollbackToAnnotation: "2",
	}}}
	r := replicaSet("v2", "2", "nginx", 2, 0, 0)
	r.Metadata.Annotations["note"] = "old"
	r.Metadata.Annotations[DesiredReplicasAnnotation] = "3"
	got := annotationsFromRS(d, r)
	want := map[string]string{"note": "old", RevisionAnnotation: "5", RollbackToAnnotation: "2"}
	if !maps.Equal(got, want) {
		t.Errorf("annotationsFromRS = %v, want %v", got, want)
	}
}

func TestHistoryToDelete(t *testing.T) {
	deleting := replicaSet("deleting", "1", "nginx", 1, 0, 0)
	deleting.Metadata.DeletionTimestamp = timestamppb.New(t0)
	behind := replicaSet("behind", "2", "nginx", 2, 0, 0)
	behind.Metadata.Generation = 2 // scaled to 0, not yet observed
	for _, tc := range []struct {
		name  string
		old   []*appsv1.ReplicaSet
		limit int32
		want  []string
	}{
		{
			name:  "within the limit",
			old:   []*appsv1.ReplicaSet{replicaSet("v1", "1", "a", 1, 0, 0), replicaSet("v2", "2", "b", 2, 0, 0)},
			limit: 2,
		},
		{
			name:  "the lowest revisions beyond the limit",
			old:   []*appsv1.ReplicaSet{replicaSet("v3", "3", "c", 3, 0, 0), replicaSet("v1", "1", "a", 1, 0, 0), replicaSet("v2", "2", "b", 2, 0, 0)},
			limit: 1,
			want:  []string{"v1", "v2"},
		},
		{
			name:  "limit 0 deletes every old one",
			old:   []*appsv1.ReplicaSet{replicaSet("v1", "1", "a", 1, 0, 0), replicaSet("v2", "2", "b", 2, 0, 0)},
			limit: 0,
			want:  []string{"v1", "v2"},
		},
		{
			name:  "ones with replicas are kept, and count",
			old:   []*appsv1.ReplicaSet{replicaSet("scaled", "1", "a", 1, 2, 2), replicaSet("pods-left", "2", "b", 2, 0, 1), replicaSet("v3", "3", "c", 3, 0, 0)},
			limit: 1,
		},
		{
			name:  "ones being deleted do not count; ones not yet observed stay",
			old:   []*appsv1.ReplicaSet{deleting, behind, replicaSet("v3", "3", "c", 3, 0, 0), replicaSet("v4", "4", "d", 4, 0, 0)},
			limit: 1,
			want:  []string{"v3"},
		},
		{
			name:  "equal revisions: the older first",
			old:   []*appsv1.ReplicaSet{replicaSet("young", "", "a", 5, 0, 0), replicaSet("aged", "", "b", 1, 0, 0)},
			limit: 1,
			want:  []string{"aged"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(historyToDelete(tc.old, tc.limit)); !slices.Equal(got, tc.want) {
				t.Errorf("historyToDelete = %q, want %q", got, tc.want)
			}
		})
	}
}
