package storage

import (
	"testing"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// TestRawDecodesWithItsResourceVersion checks the merge trick: stored
// bytes plus an appended metadata{resource_version} decode as the object
// with that resourceVersion, and a later one wins.
func TestRawDecodesWithItsResourceVersion(t *testing.T) {
	s := New[*corev1.ConfigMap](nil, ClientWatcher{}, "", "configmaps", func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, nil)
	obj := &corev1.ConfigMap{ApiVersion: "v1", Kind: "ConfigMap",
		Metadata: &metav1.ObjectMeta{Name: "a", Namespace: "ns", Uid: "u", Labels: map[string]string{"x": "y"}},
		Data:     map[string]string{"k": "v"}}
	stored, err := Encode(obj)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.Raw("/registry/core/configmaps/ns/a", stored, 42)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.DecodeRaw(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := proto.Clone(obj).(*corev1.ConfigMap)
	want.Metadata.ResourceVersion = "42"
	if !proto.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	again, _ := s.DecodeRaw(WithResourceVersion(raw, 43))
	if again.Metadata.ResourceVersion != "43" || again.Metadata.Uid != "u" {
		t.Fatalf("second resourceVersion: %v", again.Metadata)
	}
	if ns, name := s.SplitKey("/registry/core/configmaps/ns/a"); ns != "ns" || name != "a" {
		t.Fatalf("SplitKey: %q %q", ns, name)
	}
	if ns, name := s.SplitKey("/registry/core/configmaps/a"); ns != "" || name != "a" {
		t.Fatalf("SplitKey cluster-scoped: %q %q", ns, name)
	}
	if _, err := s.Raw("k", []byte("not ours"), 1); err == nil {
		t.Fatal("Raw accepted a value without the magic")
	}
}
