package history

import (
	"testing"
	"time"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/labels"
	appsv1 "skiff.dev/proto/apps/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
)

// TestHistory creates, finds, renumbers and truncates a DaemonSet's
// revisions on a real apiserver, with a hash collision on the way.
func TestHistory(t *testing.T) {
	env := managertest.Start(t)
	crs := informer.For(env.Manager.Informers, client.ControllerRevisions(env.Conn))
	managertest.Watch(env, crs)
	env.StartInformers()
	h := New(client.ControllerRevisions(env.Conn), crs)

	p := parent("web")
	sel, _ := labels.FromProto(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}})
	var cc int32
	r1 := NewControllerRevision(p, dsKind, map[string]string{"app": "web"}, []byte(`{"v":1}`), 1, &cc)
	got1, err := h.Create(env.Ctx, p, r1, &cc)
	if err != nil {
		t.Fatal(err)
	}
	if cc != 0 || got1.GetMetadata().GetName() != r1.GetMetadata().GetName() {
		t.Fatalf("first create: name %q collisions %d", got1.GetMetadata().GetName(), cc)
	}

	// Creating an equal revision again returns the existing one.
	again, err := h.Create(env.Ctx, p, r1, &cc)
	if err != nil || again.GetMetadata().GetUid() != got1.GetMetadata().GetUid() || cc != 0 {
		t.Fatalf("re-create: %v, uid %q (want %q), collisions %d", err, again.GetMetadata().GetUid(), got1.GetMetadata().GetUid(), cc)
	}

	// A revision whose name is taken by one with other data collides.
	r2 := NewControllerRevision(p, dsKind, map[string]string{"app": "web"}, []byte(`{"v":2}`), 2, &cc)
	squatter := NewControllerRevision(p, dsKind, map[string]string{"app": "other"}, []byte(`{"squatter":true}`), 9, &cc)
	squatter.Metadata.Name = r2.GetMetadata().GetName()
	if _, err := client.ControllerRevisions(env.Conn).Create(env.Ctx, squatter); err != nil {
		t.Fatal(err)
	}
	got2, err := h.Create(env.Ctx, p, r2, &cc)
	if err != nil {
		t.Fatal(err)
	}
	if cc != 1 || got2.GetMetadata().GetName() == squatter.GetMetadata().GetName() {
		t.Fatalf("collision: name %q collisions %d, want a new name and 1", got2.GetMetadata().GetName(), cc)
	}

	env.Await(10*time.Second, "the informer holds 3 revisions", func() (bool, string) {
		return len(crs.Store().ByNamespace("default")) == 3, "waiting"
	})
	listed := h.List(p, sel)
	if got := names(listed); len(got) != 2 || got[0] != got1.GetMetadata().GetName() || got[1] != got2.GetMetadata().GetName() {
		t.Fatalf("List = %v, want [%s %s] (the squatter's labels do not match)", got, got1.GetMetadata().GetName(), got2.GetMetadata().GetName())
	}

	up, err := h.UpdateRevision(env.Ctx, listed[0], 3)
	if err != nil || up.GetRevision() != 3 {
		t.Fatalf("UpdateRevision: %v, revision %d", err, up.GetRevision())
	}

	if err := h.Truncate(env.Ctx, []*appsv1.ControllerRevision{got2, up}, map[string]bool{up.GetMetadata().GetName(): true}, 0); err != nil {
		t.Fatal(err)
	}
	env.Await(10*time.Second, "the truncated revision is gone", func() (bool, string) {
		_, ok := crs.Store().GetByName("default", got2.GetMetadata().GetName())
		return !ok, "still there"
	})
	if _, ok := crs.Store().GetByName("default", up.GetMetadata().GetName()); !ok {
		t.Error("the live revision was deleted")
	}
}
