package resourcequota_test

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	schedulingv1 "skiff.dev/proto/scheduling/v1"
	"skiff.dev/services/controller-manager/resourcequota"
)

// Scoped quotas, through the admission plugin and the controller: each
// counts only the pods of its scopes, refuses only those, and is given
// back what its deleted pods used.
func TestScopedQuotas(t *testing.T) {
	env := start(t, resourcequota.Options{})
	ctx, ns := env.Ctx, "scoped"
	if _, err := client.Namespaces(env.Conn).Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	// The class exists for an admission plugin that checks it.
	if _, err := client.PriorityClasses(env.Conn).Create(ctx, &schedulingv1.PriorityClass{
		Metadata: &metav1.ObjectMeta{Name: "high"}, Value: 1000}); err != nil {
		t.Fatal(err)
	}
	quotas := client.ResourceQuotas(env.Conn)
	for _, q := range []*corev1.ResourceQuota{
		{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: "besteffort"},
			Spec: &corev1.ResourceQuotaSpec{Hard: map[string]string{"pods": "2"}, Scopes: []string{"BestEffort"}}},
		{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: "sized"},
			Spec: &corev1.ResourceQuotaSpec{Hard: map[string]string{"pods": "5", "requests.cpu": "1"}, Scopes: []string{"NotBestEffort", "NotTerminating"}}},
		{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: "high"},
			Spec: &corev1.ResourceQuotaSpec{Hard: map[string]string{"pods": "1"}, ScopeSelector: &corev1.ScopeSelector{
				MatchExpressions: []*corev1.ScopedResourceSelectorRequirement{{ScopeName: "PriorityClass", Operator: "In", Values: []string{"high"}}}}}},
	} {
		if _, err := quotas.Create(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	awaitUsed(env, ns, "besteffort", map[string]string{"pods": "0"})
	awaitUsed(env, ns, "sized", map[string]string{"pods": "0", "requests.cpu": "0"})
	awaitUsed(env, ns, "high", map[string]string{"pods": "0"})

	pods := client.Pods(env.Conn)
	sized := func(name, cpu string) *corev1.Pod {
		p := pod(ns, name)
		p.Spec.Containers[0].Resources = &corev1.ResourceRequirements{Requests: map[string]string{"cpu": cpu}}
		return p
	}
	mustCreate := func(p *corev1.Pod) {
		t.Helper()
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatalf("creating %s: %v", p.GetMetadata().GetName(), err)
		}
	}
	mustRefuse := func(p *corev1.Pod, msg string) {
		t.Helper()
		_, err := pods.Create(ctx, p)
		if status.Code(err) != codes.PermissionDenied || status.Convert(err).Message() != msg {
			t.Fatalf("creating %s: %v, want PermissionDenied %q", p.GetMetadata().GetName(), err, msg)
		}
	}
	mustCreate(pod(ns, "be-1"))
	mustCreate(pod(ns, "be-2"))
	mustRefuse(pod(ns, "be-3"), `pods "be-3" is forbidden: exceeded quota: besteffort, requested: pods=1, used: pods=2, limited: pods=2`)
	// Not BestEffort: the BestEffort quota neither counts nor refuses it.
	mustCreate(sized("web-1", "600m"))
	mustRefuse(sized("web-2", "600m"), `pods "web-2" is forbidden: exceeded quota: sized, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1`)
	// Terminating (activeDeadlineSeconds) and BestEffort: the sized quota
	// does not cover it, and BestEffort is full.
	job := pod(ns, "job-1")
	deadline := int64(60)
	job.Spec.ActiveDeadlineSeconds = &deadline
	mustRefuse(job, `pods "job-1" is forbidden: exceeded quota: besteffort, requested: pods=1, used: pods=2, limited: pods=2`)
	job = sized("job-2", "100m")
	job.Spec.ActiveDeadlineSeconds = &deadline
	mustCreate(job)
	// The PriorityClass scope: one pod of class high.
	hi := sized("hi-1", "100m")
	hi.Spec.PriorityClassName = "high"
	mustCreate(hi)
	hi = sized("hi-2", "100m")
	hi.Spec.PriorityClassName = "high"
	mustRefuse(hi, `pods "hi-2" is forbidden: exceeded quota: high, requested: pods=1, used: pods=1, limited: pods=1`)

	awaitUsed(env, ns, "besteffort", map[string]string{"pods": "2"})
	awaitUsed(env, ns, "sized", map[string]string{"pods": "2", "requests.cpu": "700m"})
	awaitUsed(env, ns, "high", map[string]string{"pods": "1"})

	// The controller gives back what a deleted pod of the scope used.
	if _, err := pods.Delete(ctx, &metav1.DeleteRequest{Namespace: ns, Name: "be-1", GracePeriodSeconds: &[]int64{0}[0]}); err != nil {
		t.Fatal(err)
	}
	awaitUsed(env, ns, "besteffort", map[string]string{"pods": "1"})
	mustCreate(pod(ns, "be-4"))
}
