package printers

import (
	"bytes"
	"testing"
	"time"

	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
	schedulingv1 "skiff.dev/proto/scheduling/v1"
)

func TestPriorityClassTable(t *testing.T) {
	never := "Never"
	objs := []object.Object{
		&schedulingv1.PriorityClass{Metadata: &metav1.ObjectMeta{Name: "system-node-critical", CreationTimestamp: ago(3 * 24 * time.Hour)}, Value: 2000001000},
		&schedulingv1.PriorityClass{Metadata: &metav1.ObjectMeta{Name: "batch", CreationTimestamp: ago(5 * time.Minute)}, Value: -10, GlobalDefault: true, PreemptionPolicy: &never},
	}
	var b bytes.Buffer
	if err := PrintTable(&b, MakeTable(objs, Options{Now: now}), false); err != nil {
		t.Fatal(err)
	}
	want := "NAME                   VALUE        GLOBAL-DEFAULT   AGE   PREEMPTIONPOLICY\n" +
		"system-node-critical   2000001000   false            3d    PreemptLowerPriority\n" +
		"batch                  -10          true             5m    Never\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
