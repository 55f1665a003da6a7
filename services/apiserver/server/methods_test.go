package server

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// An in-process call hands the request's parts to the handler as they
// are, as gRPC hands it what it decoded: every field, the unknown ones
// too, and no copy of a nested message or map.
func TestInProcessCallHandsTheRequestOver(t *testing.T) {
	immutable := true
	req := &corev1.ConfigMap{
		ApiVersion: "v1",
		Kind:       "ConfigMap",
		Metadata:   &metav1.ObjectMeta{Name: "a", Namespace: "ns", Labels: map[string]string{"app": "x"}},
		Data:       map[string]string{"k": "v"},
		BinaryData: map[string][]byte{"b": {1, 2}},
		Immutable:  &immutable,
	}
	req.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 999, protowire.VarintType), 7))

	got := &corev1.ConfigMap{}
	if err := handOver(req)(got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, req) {
		t.Fatalf("the handler got %v, want %v", got, req)
	}
	if got.Metadata != req.Metadata {
		t.Error("metadata was copied, want the request's own")
	}
	got.Data["k2"] = "v2"
	if req.Data["k2"] != "v2" {
		t.Error("data was copied, want the request's own map")
	}

	err := handOver(req)(&metav1.GetRequest{})
	if status.Code(err) != codes.Internal {
		t.Fatalf("a ConfigMap handed to a method that takes a GetRequest: %v, want Internal", err)
	}
	if err := handOver(req)("not a message"); status.Code(err) != codes.Internal {
		t.Fatalf("a handler decoding into a string: %v, want Internal", err)
	}
}
