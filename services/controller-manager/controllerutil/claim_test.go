package controllerutil

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/labels"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestClaimPods(t *testing.T) {
	ref := func(uid string, controller bool) *metav1.OwnerReference {
		return &metav1.OwnerReference{Kind: "ReplicaSet", Name: uid, Uid: uid, Controller: proto.Bool(controller)}
	}
	pod := func(name, app string, refs ...*metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}, OwnerReferences: refs}}
	}
	gone := pod("orphan-deleting", "web")
	gone.Metadata.DeletionTimestamp = timestamppb.Now()
	pods := []*corev1.Pod{
		pod("mine", "web", ref("rs1", true)),
		pod("mine-unmatched", "db", ref("rs1", true)),
		pod("orphan", "web"),
		pod("orphan-with-ref", "web", ref("rs1", false)),
		pod("orphan-unmatched", "db"),
		gone,
		pod("others", "web", ref("rs2", true)),
	}
	sel, err := labels.FromProto(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}})
	if err != nil {
		t.Fatal(err)
	}
	names := func(ps []*corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.GetMetadata().GetName())
		}
		return out
	}
	cases := []struct {
		name                  string
		owner                 *metav1.ObjectMeta
		owned, adopt, release []string
	}{
		{"an owner", &metav1.ObjectMeta{Uid: "rs1"}, []string{"mine"}, []string{"orphan", "orphan-with-ref"}, []string{"mine-unmatched"}},
		{"an owner being deleted keeps its own only", &metav1.ObjectMeta{Uid: "rs1", DeletionTimestamp: timestamppb.Now()}, []string{"mine"}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ClaimPods(tc.owner, sel, pods)
			if got := names(c.Owned); !slices.Equal(got, tc.owned) {
				t.Errorf("Owned = %q, want %q", got, tc.owned)
			}
			if got := names(c.Adopt); !slices.Equal(got, tc.adopt) {
				t.Errorf("Adopt = %q, want %q", got, tc.adopt)
			}
			if got := names(c.Release); !slices.Equal(got, tc.release) {
				t.Errorf("Release = %q, want %q", got, tc.release)
			}
		})
	}
	p := pod("a", "web", ref("other", false))
	adopted := WithControllerRef(p, ref("rs1", true))
	if r := ControllerOf(adopted.Metadata); r.GetUid() != "rs1" || len(p.Metadata.OwnerReferences) != 1 {
		t.Errorf("WithControllerRef: controller %v, argument's refs %v", r, p.Metadata.OwnerReferences)
	}
	released := WithoutOwner(adopted, "rs1")
	if len(released.Metadata.OwnerReferences) != 1 || len(adopted.Metadata.OwnerReferences) != 2 {
		t.Errorf("WithoutOwner: refs %v, argument's refs %v", released.Metadata.OwnerReferences, adopted.Metadata.OwnerReferences)
	}
}
