package deployment

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/labels"
	appsv1 "skiff.dev/proto/apps/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestClaim(t *testing.T) {
	sel := labels.SelectorFromSet(map[string]string{"app": "web"})
	mk := func(lbls map[string]string, owner string, deleting bool) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{Metadata: &metav1.ObjectMeta{Name: "rs", Labels: lbls}}
		if owner != "" {
			r.Metadata.OwnerReferences = []*metav1.OwnerReference{
				{Kind: "Other", Uid: "not-a-controller"},
				{Kind: "Deployment", Uid: owner, Controller: proto.Bool(true)},
			}
		}
		if deleting {
			r.Metadata.DeletionTimestamp = timestamppb.New(t0)
		}
		return r
	}
	web := map[string]string{"app": "web", PodTemplateHashLabel: "abc"}
	db := map[string]string{"app": "db"}
	for _, tc := range []struct {
		name     string
		rs       *appsv1.ReplicaSet
		deleting bool
		want     claimAction
	}{
		{"ours and selected", mk(web, "d-1", false), false, keep},
		{"ours, selected, being deleted", mk(web, "d-1", true), false, keep},
		{"ours, no longer selected", mk(db, "d-1", false), false, release},
		{"ours, no longer selected, while we are deleted", mk(db, "d-1", false), true, ignore},
		{"another controller's", mk(web, "d-2", false), false, ignore},
		{"an orphan we select", mk(web, "", false), false, adopt},
		{"an orphan while we are deleted", mk(web, "", false), true, ignore},
		{"an orphan being deleted", mk(web, "", true), false, ignore},
		{"an orphan we do not select", mk(db, "", false), false, ignore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := claim("d-1", tc.deleting, sel, tc.rs); got != tc.want {
				t.Errorf("claim = %v, want %v", got, tc.want)
			}
		})
	}
}
