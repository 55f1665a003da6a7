package replicaset

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

func TestClaimPods(t *testing.T) {
	cases := []struct {
		name                   string
		rsDeleting             bool
		pods                   []*corev1.Pod
		owned, adopt, released []string
	}{
		{name: "ours and matching: owned",
			pods:  []*corev1.Pod{testPod("a", ownedBy("rs1", true))},
			owned: []string{"a"}},
		{name: "ours but no longer matching: released",
			pods:     []*corev1.Pod{testPod("a", ownedBy("rs1", true), labeled("app", "db"))},
			released: []string{"a"}},
		{name: "orphan matching: adopted",
			pods:  []*corev1.Pod{testPod("a")},
			adopt: []string{"a"}},
		{name: "orphan with a non-controller reference to us: adopted",
			pods:  []*corev1.Pod{testPod("a", ownedBy("rs1", false))},
			adopt: []string{"a"}},
		{name: "orphan not matching: ignored",
			pods: []*corev1.Pod{testPod("a", labeled("app", "db"))}},
		{name: "orphan being deleted: not adopted",
			pods: []*corev1.Pod{testPod("a", deleting())}},
		{name: "someone else's: ignored even if matching",
			pods: []*corev1.Pod{testPod("a", ownedBy("rs2", true)), testPod("b", ownedBy("rs2", true), labeled("x", "y"))}},
		{name: "being deleted: keeps its own, adopts and releases nothing",
			rsDeleting: true,
			pods:       []*corev1.Pod{testPod("a", ownedBy("rs1", true)), testPod("b", ownedBy("rs1", true), labeled("app", "db")), testPod("c")},
			owned:      []string{"a"}},
		{name: "a mix",
			pods: []*corev1.Pod{
				testPod("a", ownedBy("rs1", true)), testPod("b"), testPod("c", ownedBy("rs1", true), labeled()),
				testPod("d", ownedBy("rs1", true)), testPod("e", labeled("app", "db")), testPod("f"),
			},
			owned: []string{"a", "d"}, adopt: []string{"b", "f"}, released: []string{"c"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := testRS(3, 0)
			if tc.rsDeleting {
				rs.Metadata.DeletionTimestamp = timestamppb.New(epoch)
			}
			sel, err := controllerutil.Selector(rs.Spec.Selector)
			if err != nil {
				t.Fatal(err)
			}
			c := controllerutil.ClaimPods(rs.GetMetadata(), sel, tc.pods)
			for _, x := range []struct {
				what      string
				got, want []string
			}{{"owned", names(c.Owned), tc.owned}, {"adopt", names(c.Adopt), tc.adopt}, {"release", names(c.Release), tc.released}} {
				if !slices.Equal(x.got, x.want) && len(x.got)+len(x.want) > 0 {
					t.Errorf("%s = %q, want %q", x.what, x.got, x.want)
				}
			}
		})
	}
}

func TestAdoptAndReleaseCopies(t *testing.T) {
	p := testPod("a", ownedBy("other", false))
	adopted := controllerutil.WithControllerRef(p, controllerRef(testRS(1, 0)))
	if ref := controllerutil.ControllerOf(adopted.Metadata); ref == nil || ref.GetUid() != "rs1" || !ref.GetBlockOwnerDeletion() || ref.GetKind() != "ReplicaSet" || ref.GetApiVersion() != "apps/v1" {
		t.Errorf("adopted controller ref = %v", ref)
	}
	if len(p.Metadata.OwnerReferences) != 1 {
		t.Errorf("withControllerRef changed its argument")
	}
	released := controllerutil.WithoutOwner(adopted, "rs1")
	if len(released.Metadata.OwnerReferences) != 1 || released.Metadata.OwnerReferences[0].GetUid() != "other" {
		t.Errorf("released owner refs = %v, want only the one to other", released.Metadata.OwnerReferences)
	}
	if len(adopted.Metadata.OwnerReferences) != 2 {
		t.Errorf("withoutOwner changed its argument")
	}
}
