package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authz"
)

// TestMountedIdentityListsPods: a pod's mounted identity (a token bound
// to the pod, the cluster CA, the namespace) lists the pods of its
// namespace once RBAC allows it, and is refused before.
func TestMountedIdentityListsPods(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Authz = authz.Options{Modes: []string{authz.ModeNode, authz.ModeRBAC}}
		c.Admission = admission.Options{EnablePlugins: []string{admission.ServiceAccountName}}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const ns = "in-cluster"
	if _, err := client.Namespaces(s.Conn).Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.ServiceAccounts(s.Conn).Create(ctx, &corev1.ServiceAccount{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: "pod-lister"}}); err != nil {
		t.Fatal(err)
	}
	pod, err := client.Pods(s.Conn).Create(ctx, &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: "lister"},
		Spec: &corev1.PodSpec{ServiceAccountName: "pod-lister", Containers: []*corev1.Container{{Name: "lister", Image: "skiff.local/in-cluster:v1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	// The admission plugin mounted the identity.
	if m := pod.GetSpec().GetContainers()[0].GetVolumeMounts(); len(m) != 1 || m[0].GetMountPath() != DefaultDir {
		t.Fatalf("mounts %v", m)
	}
	// What the node agent writes into the volume: a token bound to the
	// pod (requested as the agent does), ca.crt and namespace.
	tr, err := corev1.NewServiceAccountsClient(s.Conn).CreateToken(ctx, &corev1.TokenRequest{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: "pod-lister"},
		Spec: &corev1.TokenRequestSpec{ExpirationSeconds: proto.Int64(3607),
			BoundObjectRef: &corev1.BoundObjectReference{Kind: "Pod", ApiVersion: "v1", Name: "lister", Uid: pod.GetMetadata().GetUid()}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"token": []byte(tr.GetStatus().GetToken()), "ca.crt": s.CA.CertPEM, "namespace": []byte(ns)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	host, port, err := net.SplitHostPort(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	id, err := InCluster(dir, func(k string) string {
		return map[string]string{"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}[k]
	})
	if err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	if err := ListOnce(ctx, id, &out); err == nil {
		t.Fatalf("listed without RBAC: %s", out.String())
	}
	if want := `refused (PermissionDenied): pods is forbidden: User "system:serviceaccount:in-cluster:pod-lister" cannot list resource "pods" in API group "" in the namespace "in-cluster"`; !strings.HasPrefix(out.String(), want) {
		t.Fatalf("output %q, want %q...", out.String(), want)
	}

	// rbac.yaml's Role and RoleBinding.
	if _, err := client.Roles(s.Conn).Create(ctx, &rbacv1.Role{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: "pod-reader"},
		Rules: []*rbacv1.PolicyRule{{ApiGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RoleBindings(s.Conn).Create(ctx, &rbacv1.RoleBinding{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: "pod-lister-reads-pods"},
		Subjects: []*rbacv1.Subject{{Kind: "ServiceAccount", Name: "pod-lister", Namespace: ns}},
		RoleRef:  &rbacv1.RoleRef{ApiGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pod-reader"}}); err != nil {
		t.Fatal(err)
	}
	var sig await.Signal
	sig.Until(t, 20*time.Second, "the pods listed once RBAC allows it", ctx.Done(), func() (bool, string) {
		out.Reset()
		err := ListOnce(ctx, id, &out)
		return err == nil && strings.HasPrefix(out.String(), "1 pods in namespace in-cluster: lister"), out.String()
	})
}
