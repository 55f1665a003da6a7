package integration

import (
	"testing"

	"google.golang.org/grpc/codes"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// The apiserver fixes a pod's QoS class at create (Kubernetes' pod
// strategy), after admission defaulted its resources, whatever status the
// client sent.
func TestPodQOSClassSetAtCreate(t *testing.T) {
	s := startAdmission(t)
	ctx := testContext(t)
	createNamespace(t, s, "qos")
	full := map[string]string{"cpu": "250m", "memory": "64Mi"}
	sized := func(req, lim map[string]string) *corev1.Container {
		return &corev1.Container{Name: "web", Image: "nginx", Resources: &corev1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	pods := client.Pods(s.Conn)
	for _, tc := range []struct {
		name string
		c    *corev1.Container
		want string
	}{
		{"besteffort", sized(nil, nil), "BestEffort"},
		{"burstable", sized(map[string]string{"cpu": "100m"}, nil), "Burstable"},
		{"guaranteed", sized(full, full), "Guaranteed"},
		// Requests default to the limits first.
		{"limits-only", sized(nil, full), "Guaranteed"},
	} {
		p := pod("qos", tc.name, tc.c)
		p.Status = &corev1.PodStatus{QosClass: "Guaranteed", Phase: "Running"}
		created, err := pods.Create(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := created.GetStatus().GetQosClass(); got != tc.want {
			t.Errorf("%s: status.qosClass %q, want %q", tc.name, got, tc.want)
		}
		if got, _ := pods.Get(ctx, "qos", tc.name); got.GetStatus().GetQosClass() != tc.want || got.GetStatus().GetPhase() != "Pending" {
			t.Errorf("%s: stored status %v, want qosClass %s and phase Pending", tc.name, got.GetStatus(), tc.want)
		}
	}
}

// A quota's scopes are validated in Kubernetes' words.
func TestResourceQuotaScopesValidated(t *testing.T) {
	s := startAdmission(t)
	ctx := testContext(t)
	createNamespace(t, s, "scopes")
	quotas := client.ResourceQuotas(s.Conn)
	_, err := quotas.Create(ctx, &corev1.ResourceQuota{Metadata: &metav1.ObjectMeta{Namespace: "scopes", Name: "q"},
		Spec: &corev1.ResourceQuotaSpec{Hard: map[string]string{"pods": "1", "requests.cpu": "1"}, Scopes: []string{"BestEffort", "NotBestEffort"}}})
	wantRefused(t, err, codes.InvalidArgument, "spec.scopes: Invalid value: [BestEffort NotBestEffort]: unsupported scope applied to resource",
		"spec.scopes: Invalid value: [BestEffort NotBestEffort]: conflicting scopes")
	q, err := quotas.Create(ctx, &corev1.ResourceQuota{Metadata: &metav1.ObjectMeta{Namespace: "scopes", Name: "q"},
		Spec: &corev1.ResourceQuotaSpec{Hard: map[string]string{"pods": "1"}, Scopes: []string{"BestEffort"}}})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Scopes = []string{"NotBestEffort"}
	_, err = quotas.Update(ctx, q)
	wantRefused(t, err, codes.InvalidArgument, "spec.scopes: Invalid value: [NotBestEffort]: field is immutable")
}
