package registry_test

import (
	"context"
	"strings"
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/registry"
	"skiff.dev/services/apiserver/scheme"
	"skiff.dev/services/apiserver/storage"
)

// PrepareForCreate runs once the name is chosen, before validation; when
// a generated name is taken, the next try starts again from the object as
// it was before PrepareForCreate (Kubernetes' store retries a generated
// name on a fresh copy), so nothing of the taken name stays.
func TestPrepareForCreateAfterGeneratedName(t *testing.T) {
	s := apiservertest.Start(t)
	newCM := func() *corev1.ConfigMap { return &corev1.ConfigMap{} }
	kind := &scheme.Kind{
		GVK:        scheme.GroupVersionKind{GroupVersion: scheme.GroupVersion{Group: "test.skiff.dev", Version: "v1"}, Kind: "ConfigMap"},
		Resource:   "configmaps",
		Namespaced: true,
	}
	store := storage.New(s.EtcdClient(), storage.ClientWatcher{Client: s.EtcdClient()}, kind.GVK.Group, kind.Resource, newCM, nil)
	ctx := context.Background()
	var seen []string // the names PrepareForCreate saw, and the label each try found
	strategy := &registry.Strategy[*corev1.ConfigMap]{Kind: kind}
	strategy.PrepareForCreate = func(cm *corev1.ConfigMap) {
		name := cm.GetMetadata().GetName()
		seen = append(seen, name+" found:"+cm.GetMetadata().GetLabels()["named"])
		if cm.Metadata.Labels == nil {
			cm.Metadata.Labels = map[string]string{}
		}
		cm.Metadata.Labels["named"] = name
		if len(seen) == 1 {
			// Someone takes the first generated name before the write.
			taken := &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name}}
			if _, err := store.Create(ctx, store.Key("default", name), taken); err != nil {
				t.Errorf("taking %s: %v", name, err)
			}
		}
	}
	strategy.Validate = nil
	reg := registry.New(strategy, store, nil, nil)

	got, err := reg.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", GenerateName: "gen-"}})
	if err != nil {
		t.Fatalf("create: %v (PrepareForCreate saw %v)", err, seen)
	}
	name := got.GetMetadata().GetName()
	if len(seen) != 2 || !strings.HasPrefix(name, "gen-") || seen[1] != name+" found:" {
		t.Fatalf("PrepareForCreate saw %v, stored %s: want two tries, the second on a fresh copy", seen, name)
	}
	if l := got.GetMetadata().GetLabels()["named"]; l != name {
		t.Errorf("label named=%q, want the stored name %q", l, name)
	}

	seen = nil
	strategy.PrepareForCreate = func(cm *corev1.ConfigMap) { seen = append(seen, cm.GetMetadata().GetName()) }
	if _, err := reg.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "plain"}}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != "plain" {
		t.Errorf("PrepareForCreate saw %v on a named create, want [plain]", seen)
	}
}
