package scenarios

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestNameOf(t *testing.T) {
	obj, err := proto.Marshal(&corev1.ConfigMap{
		Metadata: &metav1.ObjectMeta{Name: "w-42", Namespace: watchNamespace, Uid: "u", Labels: map[string]string{"name": "x"}},
		Data:     map[string]string{"k": "v"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// What the watch cache appends: a second metadata holding only the
	// resourceVersion. Merged, the name stays.
	rv, err := proto.Marshal(&metav1.ObjectMeta{ResourceVersion: "7"})
	if err != nil {
		t.Fatal(err)
	}
	withRV := protowire.AppendBytes(protowire.AppendTag(append([]byte(nil), obj...), 3, protowire.BytesType), rv)
	renamed, err := proto.Marshal(&metav1.ObjectMeta{Name: "end"})
	if err != nil {
		t.Fatal(err)
	}
	withRename := protowire.AppendBytes(protowire.AppendTag(append([]byte(nil), withRV...), 3, protowire.BytesType), renamed)

	for _, tc := range []struct {
		name, want string
		obj        []byte
	}{
		{"one metadata", "w-42", obj},
		{"merged metadata without a name", "w-42", withRV},
		{"the last name wins", "end", withRename},
		{"no metadata", "", nil},
	} {
		got, err := nameOf(tc.obj)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: nameOf = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if rv, err := resourceVersionOf(withRename); err != nil || string(rv) != "7" {
		t.Errorf("resourceVersionOf = %q, %v; want 7 (from the metadata the server appends)", rv, err)
	}
	if _, err := nameOf(obj[:len(obj)-1]); err == nil {
		t.Error("nameOf(truncated object) succeeded, want an error")
	}
}

func TestWriteIndex(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int
		ok   bool
	}{
		{"w-0", 0, true},
		{"w-9999", 9999, true},
		{"w-10000", 0, false}, // not below the 10,000 writes
		{"w-", 0, false},
		{"w-1x", 0, false},
		{"w--1", 0, false},
		{"end", 0, false},
		{"w-1234567890123", 0, false},
	} {
		got, ok := writeIndex([]byte(tc.name), 10000)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("writeIndex(%q) = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
