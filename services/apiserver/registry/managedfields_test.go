package registry_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// An update that carries no managedFields keeps the object's (as
// Kubernetes' field manager takes the live object's when the request has
// none): a controller writing over gRPC, which records no field
// manager, must not erase what server-side apply needs to know; one that
// carries managedFields replaces them.
func TestUpdateWithoutManagedFieldsKeepsThem(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	cms := client.ConfigMaps(s.Conn)
	entry := func(manager string) *metav1.ManagedFieldsEntry {
		return &metav1.ManagedFieldsEntry{Manager: manager, Operation: "Apply", ApiVersion: "v1", FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:k":{}}}`)}}
	}
	cm, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "owned",
		ManagedFields: []*metav1.ManagedFieldsEntry{entry("kubectl")}}, Data: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	next := proto.Clone(cm).(*corev1.ConfigMap)
	next.Metadata.ManagedFields = nil
	next.Data["other"] = "x"
	got, err := cms.Update(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if mf := got.GetMetadata().GetManagedFields(); len(mf) != 1 || mf[0].GetManager() != "kubectl" {
		t.Errorf("after an update without managedFields: %v, want kubectl's entry kept", mf)
	}
	next = proto.Clone(got).(*corev1.ConfigMap)
	next.Metadata.ManagedFields = []*metav1.ManagedFieldsEntry{entry("helm")}
	if got, err = cms.Update(ctx, next); err != nil {
		t.Fatal(err)
	}
	if mf := got.GetMetadata().GetManagedFields(); len(mf) != 1 || mf[0].GetManager() != "helm" {
		t.Errorf("after an update with managedFields: %v, want helm's entry only", mf)
	}
}
