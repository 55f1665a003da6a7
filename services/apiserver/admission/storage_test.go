package admission

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	storagev1 "skiff.dev/proto/storage/v1"
	"skiff.dev/services/apiserver/scheme"
)

func class(name string, created time.Time, annotations map[string]string) *storagev1.StorageClass {
	return &storagev1.StorageClass{Metadata: &metav1.ObjectMeta{Name: name, Annotations: annotations,
		CreationTimestamp: timestamppb.New(created)}, Provisioner: "skiff.dev/local-path"}
}

func TestDefaultClass(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	def := map[string]string{IsDefaultStorageClassAnnotation: "true"}
	beta := map[string]string{BetaIsDefaultStorageClassAnnotation: "true"}
	cases := []struct {
		name    string
		classes []*storagev1.StorageClass
		want    string
	}{
		{"none", nil, ""},
		{"no class marked", []*storagev1.StorageClass{class("a", t0, nil), class("b", t0, map[string]string{IsDefaultStorageClassAnnotation: "false"})}, ""},
		{"one marked", []*storagev1.StorageClass{class("a", t0, nil), class("b", t0, def)}, "b"},
		{"beta annotation", []*storagev1.StorageClass{class("a", t0, beta)}, "a"},
		{"two marked: the newest", []*storagev1.StorageClass{class("new", t0.Add(time.Hour), def), class("old", t0, def)}, "new"},
		{"two marked at once: the first by name", []*storagev1.StorageClass{class("zeta", t0, def), class("alpha", t0, beta)}, "alpha"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := DefaultClass(c.classes)
			if got.GetMetadata().GetName() != c.want {
				t.Errorf("DefaultClass = %q, want %q", got.GetMetadata().GetName(), c.want)
			}
		})
	}
}

var (
	pvcKind = &scheme.Kind{GVK: scheme.GroupVersionKind{GroupVersion: scheme.GroupVersion{Version: "v1"}, Kind: "PersistentVolumeClaim"}, Resource: "persistentvolumeclaims", Namespaced: true}
	pvKind  = &scheme.Kind{GVK: scheme.GroupVersionKind{GroupVersion: scheme.GroupVersion{Version: "v1"}, Kind: "PersistentVolume"}, Resource: "persistentvolumes"}
)

func TestStorageObjectInUseProtection(t *testing.T) {
	p, _ := newStorageObjectInUseProtection(nil)
	plugin := p.(MutationInterface)
	ctx := context.Background()

	pvc := &corev1.PersistentVolumeClaim{Metadata: &metav1.ObjectMeta{Name: "data", Finalizers: []string{"example.com/keep"}}}
	if err := plugin.Admit(ctx, &Attributes{Operation: Create, Kind: pvcKind, Object: pvc}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"example.com/keep", PVCProtectionFinalizer}; !slices.Equal(pvc.Metadata.Finalizers, want) {
		t.Errorf("claim finalizers %v, want %v", pvc.Metadata.Finalizers, want)
	}
	// Once: a claim that has it keeps one.
	_ = plugin.Admit(ctx, &Attributes{Operation: Create, Kind: pvcKind, Object: pvc})
	if len(pvc.Metadata.Finalizers) != 2 {
		t.Errorf("added twice: %v", pvc.Metadata.Finalizers)
	}

	pv := &corev1.PersistentVolume{}
	if err := plugin.Admit(ctx, &Attributes{Operation: Create, Kind: pvKind, Object: pv}); err != nil {
		t.Fatal(err)
	}
	if want := []string{PVProtectionFinalizer}; !slices.Equal(pv.GetMetadata().GetFinalizers(), want) {
		t.Errorf("volume finalizers %v, want %v", pv.GetMetadata().GetFinalizers(), want)
	}

	// Updates are left alone: the controllers remove the finalizer, and
	// an update must not put it back.
	pv = &corev1.PersistentVolume{Metadata: &metav1.ObjectMeta{Name: "v"}}
	_ = plugin.Admit(ctx, &Attributes{Operation: Update, Kind: pvKind, Object: pv})
	pod := &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "p"}}
	_ = plugin.Admit(ctx, &Attributes{Operation: Create, Kind: podKind, Object: pod})
	if len(pv.Metadata.Finalizers)+len(pod.Metadata.Finalizers) != 0 {
		t.Errorf("finalizers added on an update or to a pod: %v %v", pv.Metadata.Finalizers, pod.Metadata.Finalizers)
	}
}
