package object

import (
	"testing"

	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
)

func TestFieldFacts(t *testing.T) {
	rq := (&corev1.ResourceQuotaSpec{}).ProtoReflect().Descriptor().Fields()
	if !Quantity(rq.ByName("hard")) {
		t.Error("ResourceQuotaSpec.hard is not a quantity")
	}
	pod := (&corev1.PodSpec{}).ProtoReflect().Descriptor().Fields()
	if Quantity(pod.ByName("node_name")) || MicroTime(pod.ByName("node_name")) || EmitZero(pod.ByName("node_name")) {
		t.Error("PodSpec.node_name has a fact it should not")
	}
	lease := (&coordinationv1.LeaseSpec{}).ProtoReflect().Descriptor().Fields()
	if !MicroTime(lease.ByName("renew_time")) {
		t.Error("LeaseSpec.renew_time is not a MicroTime")
	}
	cs := (&corev1.ContainerStatus{}).ProtoReflect().Descriptor().Fields()
	if !EmitZero(cs.ByName("restart_count")) {
		t.Error("ContainerStatus.restart_count is not emitted at zero")
	}
}
