package disruption

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	policyv1 "skiff.dev/proto/policy/v1"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/replicaset"
	"skiff.dev/services/controller-manager/simnode"
)

// A ReplicaSet of 3 on a simulated node under a budget of maxUnavailable
// 1: the budget allows one disruption; an eviction takes it (the next is
// refused); the evicted pod goes, the ReplicaSet replaces it, and once the
// replacement is Ready the budget allows one again.
func TestBudgetFollowsPodsAndEvictions(t *testing.T) {
	env := managertest.Start(t)
	pdbs := informer.For(env.Manager.Informers, client.PodDisruptionBudgets(env.Conn))
	managertest.Watch(env, pdbs)
	rsc := replicaset.New(env.Manager, replicaset.Options{})
	ctrl := New(env.Manager, Options{})
	env.SimNode(simnode.Options{})
	env.StartInformers()
	env.GoErr(rsc.Run)
	env.GoErr(ctrl.Run)

	labels := map[string]string{"app": "web"}
	_, err := client.ReplicaSets(env.Conn).Create(env.Ctx, &appsv1.ReplicaSet{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: &appsv1.ReplicaSetSpec{Replicas: proto.Int32(3), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: &corev1.PodTemplateSpec{Metadata: &metav1.ObjectMeta{Labels: labels},
				Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web", Image: "nginx"}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.PodDisruptionBudgets(env.Conn).Create(env.Ctx, &policyv1.PodDisruptionBudget{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec:     &policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ioi(1), Selector: &metav1.LabelSelector{MatchLabels: labels}},
	})
	if err != nil {
		t.Fatal(err)
	}
	statusIs := func(allowed, current int32, reason string) func() (bool, string) {
		return func() (bool, string) {
			b, ok := pdbs.Store().GetByName("default", "web")
			if !ok {
				return false, "no budget yet"
			}
			st := b.GetStatus()
			c := st.GetConditions()
			ok = st.GetDisruptionsAllowed() == allowed && st.GetCurrentHealthy() == current && st.GetDesiredHealthy() == 2 && st.GetExpectedPods() == 3 &&
				st.GetObservedGeneration() == b.GetMetadata().GetGeneration() && len(c) == 1 && c[0].GetReason() == reason
			return ok, managertest.Explain("status %v", st)
		}
	}
	env.Await(20*time.Second, "budget allows 1 of 3 healthy", statusIs(1, 3, "SufficientPods"))

	pods := env.Pods().Store().ByNamespace("default")
	evict := func(name string) error {
		_, err := corev1.NewPodsClient(env.Conn).Evict(env.Ctx, &corev1.Eviction{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name}})
		return err
	}
	if err := evict(pods[0].GetMetadata().GetName()); err != nil {
		t.Fatal(err)
	}
	if err := evict(pods[1].GetMetadata().GetName()); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("second eviction: %v, want TooManyRequests", err)
	}
	// The evicted pod goes; its replacement becomes Ready.
	env.Await(20*time.Second, "budget allows 1 again with a replacement", func() (bool, string) {
		ok, why := statusIs(1, 3, "SufficientPods")()
		b, _ := pdbs.Store().GetByName("default", "web")
		if _, still := env.Pods().Store().GetByName("default", pods[0].GetMetadata().GetName()); still {
			return false, "the evicted pod is still there; " + why
		}
		return ok && len(b.GetStatus().GetDisruptedPods()) == 0, why
	})
}
