package resourcequota_test

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/resourcequota"
)

// patience bounds each wait; every step takes milliseconds.
const patience = 20 * time.Second

func start(t *testing.T, o resourcequota.Options) *managertest.Env {
	t.Helper()
	env := managertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) {
		// ServiceAccount off: no serviceaccounts controller runs here.
		c.Admission = admission.Options{EnablePlugins: admission.DefaultPlugins, DisablePlugins: []string{admission.ServiceAccountName}}
	}))
	c := resourcequota.New(env.Manager, o)
	managertest.Watch(env, informer.For(env.Manager.Informers, client.ResourceQuotas(env.Conn)))
	env.StartInformers()
	env.GoErr(c.Run)
	return env
}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web", Image: "nginx"}}}}
}

// awaitUsed waits until the quota reports used.
func awaitUsed(env *managertest.Env, ns, name string, used map[string]string) {
	env.T.Helper()
	env.Await(patience, fmt.Sprintf("quota %s/%s used %v", ns, name, used), func() (bool, string) {
		rq, err := client.ResourceQuotas(env.Conn).Get(env.Ctx, ns, name)
		return err == nil && maps.Equal(rq.GetStatus().GetUsed(), used) && maps.Equal(rq.GetStatus().GetHard(), rq.GetSpec().GetHard()),
			managertest.Explain("status %v (%v)", rq.GetStatus(), err)
	})
}

// createMany creates n pods named prefix-i at once and returns how many
// were created; every failure must be the quota's refusal.
func createMany(t *testing.T, env *managertest.Env, ns, prefix string, n int) int {
	t.Helper()
	pods := client.Pods(env.Conn)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = pods.Create(env.Ctx, pod(ns, fmt.Sprintf("%s-%02d", prefix, i)))
		}()
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "exceeded quota: q1, requested: pods=1, used: pods=10, limited: pods=10"):
			t.Errorf("create: %v", err)
		}
	}
	return created
}

func countPods(t *testing.T, env *managertest.Env, ns string) int {
	t.Helper()
	list, err := client.Pods(env.Conn).List(env.Ctx, &metav1.ListOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.GetItems())
}

func TestQuotaExactAndReplenished(t *testing.T) {
	env := start(t, resourcequota.Options{SyncPeriod: time.Hour})
	ctx := env.Ctx
	if _, err := client.Namespaces(env.Conn).Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: "q"}}); err != nil {
		t.Fatal(err)
	}
	// Objects that exist before the quota are counted when it is made.
	if _, err := client.Pods(env.Conn).Create(ctx, pod("q", "before")); err != nil {
		t.Fatal(err)
	}
	if _, err := client.ConfigMaps(env.Conn).Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "q", Name: "cm"}}); err != nil {
		t.Fatal(err)
	}
	_, err := client.ResourceQuotas(env.Conn).Create(ctx, &corev1.ResourceQuota{
		Metadata: &metav1.ObjectMeta{Namespace: "q", Name: "q1"},
		Spec:     &corev1.ResourceQuotaSpec{Hard: map[string]string{"pods": "10", "count/configmaps": "1", "count/deployments.apps": "2"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	awaitUsed(env, "q", "q1", map[string]string{"pods": "1", "count/configmaps": "1", "count/deployments.apps": "0"})
	awaitEnforced(t, env, "q")

	// 50 creates at once against the 9 pods left: exactly 9 land.
	if n := createMany(t, env, "q", "burst", 50); n != 9 {
		t.Fatalf("%d of 50 creates succeeded, want 9", n)
	}
	if n := countPods(t, env, "q"); n != 10 {
		t.Fatalf("%d pods in the namespace, want exactly 10", n)
	}
	awaitUsed(env, "q", "q1", map[string]string{"pods": "10", "count/configmaps": "1", "count/deployments.apps": "0"})

	// Deleting pods gives their share back (the controller recomputes).
	for _, name := range []string{"before", "burst-00", "burst-01"} {
		if _, err := client.Pods(env.Conn).Delete(ctx, &metav1.DeleteRequest{Namespace: "q", Name: name}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	// (burst-00 or -01 may be among the refused: count what is there.)
	left := countPods(t, env, "q")
	awaitUsed(env, "q", "q1", map[string]string{"pods": fmt.Sprint(left), "count/configmaps": "1", "count/deployments.apps": "0"})
	if n := createMany(t, env, "q", "again", 50); n != 10-left {
		t.Fatalf("%d creates succeeded after the deletes, want %d", n, 10-left)
	}
	if n := countPods(t, env, "q"); n != 10 {
		t.Fatalf("%d pods, want 10", n)
	}

	// A finished pod no longer counts.
	p, err := client.Pods(env.Conn).Get(ctx, "q", "again-"+firstCreated(t, env, "again"))
	if err != nil {
		t.Fatal(err)
	}
	p.Status = &corev1.PodStatus{Phase: "Succeeded"}
	if _, err := client.Pods(env.Conn).UpdateStatus(ctx, p); err != nil {
		t.Fatal(err)
	}
	awaitUsed(env, "q", "q1", map[string]string{"pods": "9", "count/configmaps": "1", "count/deployments.apps": "0"})
}

// awaitEnforced waits until the apiserver's admission has the quota of ns
// (its informer lags the write by milliseconds; the namespace was seen
// without quota before): until a ConfigMap beyond count/configmaps=1 is
// refused. Probes created before that are deleted.
func awaitEnforced(t *testing.T, env *managertest.Env, ns string) {
	t.Helper()
	cms := client.ConfigMaps(env.Conn)
	n := 0
	env.Await(patience, "the apiserver to enforce the quota", func() (bool, string) {
		n++
		name := fmt.Sprintf("probe-%d", n)
		_, err := cms.Create(env.Ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name}})
		if err == nil {
			if _, err := cms.Delete(env.Ctx, &metav1.DeleteRequest{Namespace: ns, Name: name}); err != nil {
				t.Fatal(err)
			}
			return false, "a ConfigMap beyond the quota was admitted"
		}
		if !strings.Contains(err.Error(), "exceeded quota: q1, requested: count/configmaps=1") {
			t.Fatalf("probe: %v", err)
		}
		return true, ""
	})
}

// firstCreated is the suffix of a pod named prefix-NN that exists.
func firstCreated(t *testing.T, env *managertest.Env, prefix string) string {
	t.Helper()
	list, err := client.Pods(env.Conn).List(env.Ctx, &metav1.ListOptions{Namespace: "q"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.GetItems() {
		if s, ok := strings.CutPrefix(p.GetMetadata().GetName(), prefix+"-"); ok {
			return s
		}
	}
	t.Fatalf("no pod %s-*", prefix)
	return ""
}

// A charge whose object is then not stored is given back by the periodic
// recompute.
func TestOvercountCorrectedBySync(t *testing.T) {
	env := start(t, resourcequota.Options{SyncPeriod: 300 * time.Millisecond})
	ctx := env.Ctx
	if _, err := client.Namespaces(env.Conn).Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: "q"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.ResourceQuotas(env.Conn).Create(ctx, &corev1.ResourceQuota{
		Metadata: &metav1.ObjectMeta{Namespace: "q", Name: "q1"},
		Spec:     &corev1.ResourceQuotaSpec{Hard: map[string]string{"pods": "2"}},
	}); err != nil {
		t.Fatal(err)
	}
	awaitUsed(env, "q", "q1", map[string]string{"pods": "0"})
	if _, err := client.Pods(env.Conn).Create(ctx, pod("q", "web")); err != nil {
		t.Fatal(err)
	}
	// The same name again: charged by admission, then refused by etcd.
	if _, err := client.Pods(env.Conn).Create(ctx, pod("q", "web")); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("want AlreadyExists, got %v", err)
	}
	awaitUsed(env, "q", "q1", map[string]string{"pods": "1"})
	if _, err := client.Pods(env.Conn).Create(ctx, pod("q", "second")); err != nil {
		t.Fatalf("after the recompute there is room for a second pod: %v", err)
	}
}
