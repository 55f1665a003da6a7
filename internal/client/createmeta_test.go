package client

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// namingPods answers Create as the apiserver does: the whole pod, named
// from its generateName, with a spec and a status the caller may skip.
type namingPods struct {
	corev1.UnimplementedPodsServer
}

func (namingPods) Create(_ context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	if p.GetMetadata().GetGenerateName() == "" {
		return nil, apierrors.NewAlreadyExists("pods", p.GetMetadata().GetName())
	}
	p.Metadata.Name = p.Metadata.GenerateName + "abcde"
	p.Metadata.Uid = "uid-1"
	p.Metadata.ResourceVersion = "42"
	p.Status = &corev1.PodStatus{Phase: "Pending", Message: "a status the caller does not decode"}
	return p, nil
}

func TestCreateForMetaDecodesOnlyTheMetadata(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	corev1.RegisterPodsServer(srv, namingPods{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	pods := Pods(conn)

	pod := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "default", GenerateName: "web-", Labels: map[string]string{"app": "web"}},
		Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web", Image: "skiff.local/demo:v1"}}},
	}
	meta, err := pods.CreateForMeta(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if meta.GetName() != "web-abcde" || meta.GetUid() != "uid-1" || meta.GetResourceVersion() != "42" || meta.GetLabels()["app"] != "web" {
		t.Errorf("CreateForMeta returned metadata %v, want name web-abcde, uid uid-1, resourceVersion 42, label app=web", meta)
	}

	// Errors come back as API errors, as from Create.
	_, err = pods.CreateForMeta(t.Context(), &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "taken"}})
	if !apierrors.IsAlreadyExists(err) {
		t.Errorf("CreateForMeta of an existing name: %v, want AlreadyExists", err)
	}
}
