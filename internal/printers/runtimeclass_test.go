package printers

import (
	"bytes"
	"testing"
	"time"

	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
	nodev1 "skiff.dev/proto/node/v1"
)

func TestRuntimeClassTable(t *testing.T) {
	objs := []object.Object{
		&nodev1.RuntimeClass{Metadata: &metav1.ObjectMeta{Name: "gvisor", CreationTimestamp: ago(2 * time.Hour)}, Handler: "runsc"},
		&nodev1.RuntimeClass{Metadata: &metav1.ObjectMeta{Name: "runc", CreationTimestamp: ago(3 * 24 * time.Hour)}, Handler: "runc"},
	}
	var b bytes.Buffer
	if err := PrintTable(&b, MakeTable(objs, Options{Now: now}), false); err != nil {
		t.Fatal(err)
	}
	want := "NAME     HANDLER   AGE\n" +
		"gvisor   runsc     120m\n" +
		"runc     runc      3d\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
