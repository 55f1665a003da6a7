package statefulset

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func owners(c *corev1.PersistentVolumeClaim) []string {
	var out []string
	for _, o := range c.GetMetadata().GetOwnerReferences() {
		out = append(out, fmt.Sprintf("%s/%s:%s", o.GetKind(), o.GetName(), map[bool]string{true: "controller", false: "owner"}[o.GetController()]))
	}
	slices.Sort(out)
	return out
}

func TestRetentionPolicyOwners(t *testing.T) {
	cases := []struct {
		whenDeleted, whenScaled string
		ordinal                 string // the pod's ordinal: 0 in range, 5 scaled down
		want                    []string
	}{
		{"Retain", "Retain", "0", nil},
		{"Retain", "Retain", "5", nil},
		{"Delete", "Retain", "0", []string{"StatefulSet/web:controller"}},
		{"Delete", "Retain", "5", []string{"StatefulSet/web:controller"}},
		{"Retain", "Delete", "0", nil},
		{"Retain", "Delete", "5", []string{"Pod/web-5:controller"}},
		{"Delete", "Delete", "0", []string{"StatefulSet/web:controller"}},
		{"Delete", "Delete", "5", []string{"Pod/web-5:controller"}},
	}
	for _, c := range cases {
		t.Run(c.whenDeleted+"/"+c.whenScaled+"/"+c.ordinal, func(t *testing.T) {
			set := testSet(2)
			set.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted = c.whenDeleted
			set.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = c.whenScaled
			p := pod(c.ordinal)
			// A claim the set owned as a plain owner, with an unrelated owner.
			claim := &corev1.PersistentVolumeClaim{Metadata: &metav1.ObjectMeta{Name: "data-web-" + c.ordinal, OwnerReferences: []*metav1.OwnerReference{
				{ApiVersion: "apps/v1", Kind: "StatefulSet", Name: "web", Uid: "set1"},
				{ApiVersion: "v1", Kind: "ConfigMap", Name: "x", Uid: "cm"},
			}}}
			if claimOwnersUpToDate(claim, set, p) {
				t.Fatalf("a non-controller reference from the set is up to date")
			}
			got := withClaimOwners(claim, set, p)
			want := append(slices.Clone(c.want), "ConfigMap/x:owner")
			slices.Sort(want)
			if !slices.Equal(owners(got), want) {
				t.Fatalf("owners %v, want %v", owners(got), want)
			}
			if !claimOwnersUpToDate(got, set, p) {
				t.Fatalf("owners %v are not up to date", owners(got))
			}
		})
	}
}

func TestRetentionLeavesOtherControllersAlone(t *testing.T) {
	set := testSet(2)
	set.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted = "Delete"
	claim := &corev1.PersistentVolumeClaim{Metadata: &metav1.ObjectMeta{Name: "data-web-0", OwnerReferences: []*metav1.OwnerReference{
		{ApiVersion: "example.com/v1", Kind: "Backup", Name: "b", Uid: "b1", Controller: proto.Bool(true)},
	}}}
	if !claimOwnersUpToDate(claim, set, pod("0")) {
		t.Fatalf("a claim controlled by someone else is to be changed")
	}
	stale := &corev1.PersistentVolumeClaim{Metadata: &metav1.ObjectMeta{Name: "data-web-0", OwnerReferences: []*metav1.OwnerReference{
		{ApiVersion: "apps/v1", Kind: "StatefulSet", Name: "web", Uid: "an-earlier-web", Controller: proto.Bool(true)},
	}}}
	if !claimOwnersUpToDate(stale, set, pod("0")) {
		t.Fatalf("a claim of an earlier set of the name is to be changed")
	}
}
