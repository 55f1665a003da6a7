package statefulset

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	appsv1 "skiff.dev/proto/apps/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/garbagecollector"
	"skiff.dev/services/controller-manager/manager/managertest"
)

// TestRetentionPolicyDelete runs the garbage collector beside the
// controller: with whenScaled and whenDeleted Delete, the claims of a
// scaled-down pod go with it, a scale-up makes them anew, and deleting the
// set deletes the remaining claims.
func TestRetentionPolicyDelete(t *testing.T) {
	c := start(t, garbagecollector.Name)
	set := webSet(3)
	set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: "Delete", WhenScaled: "Delete"}
	set = c.create(set)
	c.awaitReady(set, "web-0", "web-1", "web-2")
	c.awaitClaims("www-web-0", "www-web-1", "www-web-2")
	for _, cl := range c.claims.Store().ByNamespace("default") {
		refs := cl.GetMetadata().GetOwnerReferences()
		if len(refs) != 1 || refs[0].GetKind() != "StatefulSet" || refs[0].GetUid() != set.GetMetadata().GetUid() || !refs[0].GetController() {
			t.Errorf("claim %s owners %v, want the set", cl.GetMetadata().GetName(), refs)
		}
	}
	first, _ := c.claims.Store().GetByName("default", "www-web-2")

	c.change("web", func(s *appsv1.StatefulSet) { s.Spec.Replicas = proto.Int32(1) })
	c.awaitReady(set, "web-0")
	c.awaitClaims("www-web-0")

	c.change("web", func(s *appsv1.StatefulSet) { s.Spec.Replicas = proto.Int32(3) })
	c.awaitReady(set, "web-0", "web-1", "web-2")
	c.awaitClaims("www-web-0", "www-web-1", "www-web-2")
	if again, _ := c.claims.Store().GetByName("default", "www-web-2"); again.GetMetadata().GetUid() == first.GetMetadata().GetUid() {
		t.Errorf("www-web-2 was kept through a scale-down with whenScaled Delete")
	}

	if _, err := client.StatefulSets(c.Conn).Delete(c.Ctx, &metav1.DeleteRequest{Namespace: "default", Name: "web"}); err != nil {
		t.Fatal(err)
	}
	c.awaitClaims()
}

func (c *cluster) awaitClaims(want ...string) {
	c.T.Helper()
	c.Await(patience, fmt.Sprintf("claims %v", want), func() (bool, string) {
		got := claimNames(c.claims.Store().ByNamespace("default"))
		return slices.Equal(got, want), managertest.Explain("claims %v, want %v", got, want)
	})
}
