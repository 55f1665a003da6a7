package integration

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	appsv1 "skiff.dev/proto/apps/v1"
	appsv1beta1 "skiff.dev/proto/apps/v1beta1"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// rawCodec sends []byte requests as they are, so the fuzzer reaches the
// server's decoding with arbitrary bytes.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.([]byte); ok {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	return encoding.GetCodecV2("proto").Marshal(v)
}
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return encoding.GetCodecV2("proto").Unmarshal(data, v)
}
func (rawCodec) Name() string { return "proto" }

var (
	fuzzOnce   sync.Once
	fuzzServer *apiservertest.Server
)

// FuzzCreate sends random bytes (seeded with valid objects of every kind)
// as Create and Update requests of every kind: the server must never panic
// nor answer Internal/Unknown; bad input gets a clear client error.
func FuzzCreate(f *testing.F) {
	seeds := []proto.Message{
		&corev1.Pod{Metadata: meta("default", "p"), Spec: podSpec()},
		&corev1.Namespace{Metadata: meta("", "ns")},
		&corev1.Node{Metadata: meta("", "n"), Status: &corev1.NodeStatus{Capacity: map[string]string{"cpu": "4", "memory": "8Gi"}}},
		&corev1.Event{Metadata: meta("default", "e"), InvolvedObject: &corev1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "default"}},
		&corev1.ConfigMap{Metadata: meta("default", "c"), Data: map[string]string{"a": "b"}},
		&appsv1.Deployment{Metadata: meta("default", "d"), Spec: &appsv1.DeploymentSpec{Replicas: proto.Int32(3), Selector: selector(), Template: template(),
			Strategy: &appsv1.DeploymentStrategy{Type: "RollingUpdate", RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: "25%"}}}}}},
		&appsv1beta1.Deployment{Metadata: meta("default", "b"), Spec: &appsv1beta1.DeploymentSpec{Template: template(), RollbackTo: &appsv1beta1.RollbackConfig{Revision: 1}}},
		&appsv1.ReplicaSet{Metadata: meta("default", "r"), Spec: &appsv1.ReplicaSetSpec{Selector: selector(), Template: template()}},
		&coordinationv1.Lease{Metadata: meta("default", "l"), Spec: &coordinationv1.LeaseSpec{HolderIdentity: "x"}},
	}
	for i, m := range seeds {
		b, _ := proto.Marshal(m)
		f.Add(uint8(i), b)
	}
	f.Add(uint8(0), []byte{0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	services := []string{"skiff.core.v1.Pods", "skiff.core.v1.Namespaces", "skiff.core.v1.Nodes", "skiff.core.v1.Events", "skiff.core.v1.ConfigMaps",
		"skiff.apps.v1.Deployments", "skiff.apps.v1beta1.Deployments", "skiff.apps.v1.ReplicaSets", "skiff.coordination.v1.Leases"}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		fuzzOnce.Do(func() {
			s, err := apiservertest.StartConfig(fuzzConfig())
			if err != nil {
				t.Fatal(err)
			}
			fuzzServer = s
		})
		svc := services[int(which)%len(services)]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, method := range []string{"Create", "Update", "UpdateStatus"} {
			var out emptypb.Empty // any answer decodes as unknown fields
			err := fuzzServer.Conn.Invoke(ctx, "/"+svc+"/"+method, data, &out, grpc.ForceCodecV2(rawCodec{}))
			if err == nil {
				continue
			}
			st := status.Convert(err)
			switch st.Code() {
			case codes.InvalidArgument, codes.AlreadyExists, codes.NotFound, codes.Aborted, codes.Unimplemented:
			default: // malformed protobuf too is InvalidArgument (BadRequest)
				t.Fatalf("%s/%s: unexpected %v: %s", svc, method, st.Code(), st.Message())
			}
			if strings.TrimSpace(st.Message()) == "" {
				t.Fatalf("%s/%s: error without a message", svc, method)
			}
		}
	})
}
