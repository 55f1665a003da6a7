package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/server"
)

// startAdmission starts an apiserver with the given admission plugins
// (none: the command's defaults).
func startAdmission(t *testing.T, plugins ...string) *apiservertest.Server {
	t.Helper()
	return startAdmissionWith(t, nil, plugins...)
}

// startAdmissionWith is startAdmission with more options (Secure).
func startAdmissionWith(t *testing.T, opts []apiservertest.Option, plugins ...string) *apiservertest.Server {
	t.Helper()
	if len(plugins) == 0 {
		plugins = admission.DefaultPlugins
	}
	return apiservertest.Start(t, append(opts, apiservertest.WithConfig(func(c *apiserver.Config) {
		// No serviceaccounts controller makes the "default" accounts
		// here: ServiceAccount is off unless named (as in Kubernetes'
		// integration tests).
		c.Admission = admission.Options{EnablePlugins: plugins, DisablePlugins: withoutServiceAccount(plugins)}
	}))...)
}

func createNamespace(t *testing.T, s *apiservertest.Server, name string) {
	t.Helper()
	if _, err := client.Namespaces(s.Conn).Create(testContext(t), &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

func wantRefused(t *testing.T, err error, code codes.Code, contains ...string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("want %v, got %v", code, err)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("error %q does not contain %q", err, c)
		}
	}
}

func pod(ns, name string, containers ...*corev1.Container) *corev1.Pod {
	if len(containers) == 0 {
		containers = []*corev1.Container{{Name: "web", Image: "nginx:1.14.2"}}
	}
	return &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: &corev1.PodSpec{Containers: containers}}
}

func TestSystemNamespacesExistWithAdmissionOff(t *testing.T) {
	s := apiservertest.Start(t)
	for _, ns := range apiserver.SystemNamespaces {
		if _, err := client.Namespaces(s.Conn).Get(testContext(t), "", ns); err != nil {
			t.Errorf("namespace %s: %v", ns, err)
		}
	}
}

func TestNamespaceLifecycle(t *testing.T) {
	s := startAdmission(t, admission.NamespaceLifecycleName)
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)
	cm := func(ns, name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name}}
	}

	_, err := cms.Create(ctx, cm("missing", "a"))
	wantRefused(t, err, codes.NotFound, `namespaces "missing" not found`)

	// A namespace created a moment ago is found (the informer may not
	// have it yet: a live read).
	createNamespace(t, s, "fresh")
	if _, err := cms.Create(ctx, cm("fresh", "a")); err != nil {
		t.Fatalf("create in a namespace just created: %v", err)
	}
	// The system namespaces exist.
	for _, ns := range apiserver.SystemNamespaces {
		if _, err := cms.Create(ctx, cm(ns, "a")); err != nil {
			t.Errorf("create in %s: %v", ns, err)
		}
	}

	// Deleting a namespace marks it Terminating with the finalizer of the
	// namespace controller (none runs here: it stays).
	nss := client.Namespaces(s.Conn)
	if _, err := nss.Delete(ctx, &metav1.DeleteRequest{Name: "fresh"}); err != nil {
		t.Fatal(err)
	}
	ns, err := nss.Get(ctx, "", "fresh")
	if err != nil || ns.GetStatus().GetPhase() != "Terminating" || ns.GetMetadata().GetDeletionTimestamp() == nil ||
		!proto.Equal(ns.GetSpec(), &corev1.NamespaceSpec{Finalizers: []string{"kubernetes"}}) {
		t.Fatalf("deleted namespace: %v, %v; want Terminating with spec.finalizers [kubernetes]", ns, err)
	}
	// Creates are refused once the apiserver's namespace informer has seen it.
	var sig await.Signal
	var last error
	n := 0
	sig.Until(t, 10*time.Second, "creates in the terminating namespace to be refused", ctx.Done(), func() (bool, string) {
		n++
		_, last = cms.Create(ctx, cm("fresh", fmt.Sprintf("late-%d", n)))
		return last != nil, fmt.Sprintf("create %d: %v", n, last)
	})
	wantRefused(t, last, codes.PermissionDenied, `configmaps "late-`, "is forbidden: unable to create new content in namespace fresh because it is being terminated")
	// Updates of what is there still work (controllers finish their work).
	got, err := cms.Get(ctx, "fresh", "a")
	if err != nil {
		t.Fatal(err)
	}
	got.Data = map[string]string{"k": "v"}
	if _, err := cms.Update(ctx, got); err != nil {
		t.Errorf("update in a terminating namespace: %v", err)
	}

	for _, immortal := range admission.ImmortalNamespaces {
		_, err := nss.Delete(ctx, &metav1.DeleteRequest{Name: immortal})
		wantRefused(t, err, codes.PermissionDenied, fmt.Sprintf(`namespaces %q is forbidden: this namespace may not be deleted`, immortal))
	}
	// Cluster-scoped kinds are not in a namespace.
	if _, err := client.Nodes(s.Conn).Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n1"}}); err != nil {
		t.Errorf("create a node: %v", err)
	}
}

func TestLimitRanger(t *testing.T) {
	s := startAdmission(t, admission.LimitRangerName)
	ctx := testContext(t)
	createNamespace(t, s, "lr")
	_, err := client.LimitRanges(s.Conn).Create(ctx, &corev1.LimitRange{
		Metadata: &metav1.ObjectMeta{Namespace: "lr", Name: "limits"},
		Spec: &corev1.LimitRangeSpec{Limits: []*corev1.LimitRangeItem{{
			Type:           "Container",
			Default:        map[string]string{"cpu": "500m", "memory": "256Mi"},
			DefaultRequest: map[string]string{"cpu": "100m"},
			Max:            map[string]string{"cpu": "1"},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pods := client.Pods(s.Conn)
	// Created right after the LimitRange: the plugin reads it live when its
	// informer has nothing for the namespace yet.
	p, err := pods.Create(ctx, pod("lr", "plain"))
	if err != nil {
		t.Fatal(err)
	}
	r := p.GetSpec().GetContainers()[0].GetResources()
	if r.GetRequests()["cpu"] != "100m" || r.GetLimits()["cpu"] != "500m" || r.GetLimits()["memory"] != "256Mi" || r.GetRequests()["memory"] != "256Mi" {
		t.Errorf("a pod without requests or limits got %v; want requests cpu=100m memory=256Mi, limits cpu=500m memory=256Mi", r)
	}
	if a := p.GetMetadata().GetAnnotations()[admission.LimitRangerAnnotation]; !strings.Contains(a, "cpu request for container web") {
		t.Errorf("annotation %q", a)
	}

	// A limit without a request: the request is the limit (not the default request).
	p, err = pods.Create(ctx, pod("lr", "limited", &corev1.Container{Name: "web", Image: "nginx",
		Resources: &corev1.ResourceRequirements{Limits: map[string]string{"cpu": "800m"}}}))
	if err != nil {
		t.Fatal(err)
	}
	if r := p.GetSpec().GetContainers()[0].GetResources(); r.GetRequests()["cpu"] != "800m" || r.GetLimits()["memory"] != "256Mi" {
		t.Errorf("a container with a cpu limit got %v; want requests.cpu=800m and the default memory", r)
	}

	_, err = pods.Create(ctx, pod("lr", "greedy", &corev1.Container{Name: "web", Image: "nginx"}, &corev1.Container{Name: "hog", Image: "nginx",
		Resources: &corev1.ResourceRequirements{Limits: map[string]string{"cpu": "2"}, Requests: map[string]string{"cpu": "500m"}}}))
	wantRefused(t, err, codes.PermissionDenied, `pods "greedy" is forbidden: spec.containers[1].resources.limits.cpu: maximum cpu usage per Container is 1, but limit is 2`)

	// Pods elsewhere are untouched.
	p, err = pods.Create(ctx, pod("default", "free"))
	if err != nil || p.GetSpec().GetContainers()[0].GetResources().GetLimits() != nil {
		t.Errorf("a pod in a namespace without LimitRange: %v %v", p.GetSpec().GetContainers()[0].GetResources(), err)
	}
}

func TestDefaultTolerationSeconds(t *testing.T) {
	s := startAdmission(t, admission.DefaultTolerationSecondsName)
	p, err := client.Pods(s.Conn).Create(testContext(t), pod("default", "web"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, tol := range p.GetSpec().GetTolerations() {
		if tol.GetOperator() == "Exists" && tol.GetEffect() == "NoExecute" {
			got[tol.GetKey()] = tol.GetTolerationSeconds()
		}
	}
	if got[admission.TaintNodeNotReady] != 300 || got[admission.TaintNodeUnreachable] != 300 || len(p.GetSpec().GetTolerations()) != 2 {
		t.Errorf("tolerations %v; want not-ready and unreachable NoExecute for 300s", p.GetSpec().GetTolerations())
	}
}

// setQuotaUsed plays the resourcequota controller: status.used as given.
func setQuotaUsed(t *testing.T, s *apiservertest.Server, rq *corev1.ResourceQuota, used map[string]string) *corev1.ResourceQuota {
	t.Helper()
	rq = proto.Clone(rq).(*corev1.ResourceQuota)
	rq.Status = &corev1.ResourceQuotaStatus{Hard: rq.GetSpec().GetHard(), Used: used}
	rq, err := client.ResourceQuotas(s.Conn).UpdateStatus(testContext(t), rq)
	if err != nil {
		t.Fatal(err)
	}
	return rq
}

func TestResourceQuotaExactUnderConcurrency(t *testing.T) {
	s := startAdmission(t)
	ctx := testContext(t)
	createNamespace(t, s, "q")
	quotas := client.ResourceQuotas(s.Conn)
	rq, err := quotas.Create(ctx, &corev1.ResourceQuota{
		Metadata: &metav1.ObjectMeta{Namespace: "q", Name: "q1"},
		Spec:     &corev1.ResourceQuotaSpec{Hard: map[string]string{"pods": "10"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Without a status (no controller computed it), what it covers is refused.
	_, err = client.Pods(s.Conn).Create(ctx, pod("q", "early"))
	wantRefused(t, err, codes.PermissionDenied, "status unknown for quota: q1, resources: pods")
	// A second quota on the same namespace, with room for 12 pods and no
	// more configmaps.
	rq2, err := quotas.Create(ctx, &corev1.ResourceQuota{
		Metadata: &metav1.ObjectMeta{Namespace: "q", Name: "q2"},
		Spec:     &corev1.ResourceQuotaSpec{Hard: map[string]string{"count/pods": "12", "configmaps": "1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	setQuotaUsed(t, s, rq, map[string]string{"pods": "0"})
	setQuotaUsed(t, s, rq2, map[string]string{"count/pods": "0", "configmaps": "1"})
	// Other kinds are charged to the quotas that cover them; this also
	// waits until the apiserver's informer has both quotas (it lags the
	// writes by milliseconds). Probes admitted before are deleted.
	cms := client.ConfigMaps(s.Conn)
	var sig await.Signal
	n := 0
	sig.Until(t, 10*time.Second, "the quota of configmaps to be enforced", ctx.Done(), func() (bool, string) {
		n++
		name := fmt.Sprintf("probe-%d", n)
		_, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "q", Name: name}})
		if err == nil {
			_, err = cms.Delete(ctx, &metav1.DeleteRequest{Namespace: "q", Name: name})
			return false, fmt.Sprintf("probe %d admitted (delete: %v)", n, err)
		}
		return true, ""
	})
	_, err = cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "q", Name: "cm"}})
	wantRefused(t, err, codes.PermissionDenied, `configmaps "cm" is forbidden: exceeded quota: q2, requested: configmaps=1, used: configmaps=1, limited: configmaps=1`)

	// 50 creates at once, on 5 connections.
	var conns []*client.Resource[*corev1.Pod, *corev1.PodList]
	for range 5 {
		conns = append(conns, client.Pods(dial(t, s)))
	}
	var wg sync.WaitGroup
	errs := make([]error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = conns[i%5].Create(ctx, pod("q", fmt.Sprintf("p-%02d", i)))
		}()
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case status.Code(err) == codes.PermissionDenied && strings.Contains(err.Error(), "exceeded quota: q1, requested: pods=1, used: pods=10, limited: pods=10"):
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	list, err := client.Pods(s.Conn).List(ctx, &metav1.ListOptions{Namespace: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if created != 10 || len(list.GetItems()) != 10 {
		t.Fatalf("%d creates succeeded and %d pods exist; want exactly 10", created, len(list.GetItems()))
	}
	for name, want := range map[string]string{"q1": "pods", "q2": "count/pods"} {
		got, err := quotas.Get(ctx, "q", name)
		if err != nil || got.GetStatus().GetUsed()[want] != "10" {
			t.Errorf("quota %s: used %v (%v), want %s=10", name, got.GetStatus().GetUsed(), err, want)
		}
	}
}

func TestResourceQuotaComputeResources(t *testing.T) {
	s := startAdmission(t)
	ctx := testContext(t)
	createNamespace(t, s, "compute")
	rq, err := client.ResourceQuotas(s.Conn).Create(ctx, &corev1.ResourceQuota{
		Metadata: &metav1.ObjectMeta{Namespace: "compute", Name: "compute"},
		Spec:     &corev1.ResourceQuotaSpec{Hard: map[string]string{"requests.cpu": "1", "limits.memory": "1Gi"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	setQuotaUsed(t, s, rq, map[string]string{"requests.cpu": "0", "limits.memory": "0"})
	pods := client.Pods(s.Conn)
	_, err = pods.Create(ctx, pod("compute", "bare"))
	wantRefused(t, err, codes.PermissionDenied, "failed quota: compute: must specify limits.memory for: web; requests.cpu for: web")
	sized := func(name, cpu string) *corev1.Pod {
		return pod("compute", name, &corev1.Container{Name: "web", Image: "nginx", Resources: &corev1.ResourceRequirements{
			Requests: map[string]string{"cpu": cpu}, Limits: map[string]string{"memory": "256Mi"}}})
	}
	if _, err := pods.Create(ctx, sized("a", "600m")); err != nil {
		t.Fatal(err)
	}
	_, err = pods.Create(ctx, sized("b", "600m"))
	wantRefused(t, err, codes.PermissionDenied, "exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1")
	if _, err := pods.Create(ctx, sized("c", "400m")); err != nil {
		t.Fatal(err)
	}
	got, _ := client.ResourceQuotas(s.Conn).Get(ctx, "compute", "compute")
	if u := got.GetStatus().GetUsed(); u["requests.cpu"] != "1" || u["limits.memory"] != "512Mi" {
		t.Errorf("used %v, want requests.cpu=1 limits.memory=512Mi", u)
	}
}

// dial is another client connection to s.
func dial(t *testing.T, s *apiservertest.Server) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// BenchmarkCreate measures ConfigMap creates through the API with
// admission off (nil chain) and with the command's default plugins (none
// of which has work to do for a ConfigMap in a namespace without quota).
func BenchmarkCreate(b *testing.B) {
	for _, bc := range []struct {
		name    string
		plugins []string
	}{{"admission=off", nil}, {"admission=default", admission.DefaultPlugins}} {
		b.Run(bc.name, func(b *testing.B) {
			s := apiservertest.Start(b, apiservertest.WithConfig(func(c *apiserver.Config) {
				c.Admission = admission.Options{EnablePlugins: bc.plugins, DisablePlugins: withoutServiceAccount(bc.plugins)}
			}))
			cms := client.ConfigMaps(s.Conn)
			data := map[string]string{"data": strings.Repeat("x", 1024)}
			ctx := context.Background()
			var seq atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					name := fmt.Sprintf("c-%09d", seq.Add(1))
					if _, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name}, Data: data}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// TestDryRunChargesNoQuota: a dry run is admitted as its write would be
// (the quota checked) but charges nothing.
func TestDryRunChargesNoQuota(t *testing.T) {
	s := startAdmission(t)
	ctx := testContext(t)
	createNamespace(t, s, "q")
	rq, err := client.ResourceQuotas(s.Conn).Create(ctx, &corev1.ResourceQuota{
		Metadata: &metav1.ObjectMeta{Namespace: "q", Name: "q1"},
		Spec:     &corev1.ResourceQuotaSpec{Hard: map[string]string{"configmaps": "1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	setQuotaUsed(t, s, rq, map[string]string{"configmaps": "0"})
	cms := client.ConfigMaps(s.Conn)
	dry := metadata.AppendToOutgoingContext(ctx, server.DryRunHeader, "All")
	var sig await.Signal
	sig.Until(t, 10*time.Second, "the quota to be seen by admission", ctx.Done(), func() (bool, string) {
		_, err := cms.Create(dry, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "q", Name: "dry"}})
		return err == nil, fmt.Sprint(err)
	})
	for i := 0; i < 3; i++ {
		if _, err := cms.Create(dry, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "q", Name: fmt.Sprint("dry-", i)}}); err != nil {
			t.Fatalf("dry-run create %d: %v", i, err)
		}
	}
	if _, err := cms.Get(ctx, "q", "dry-0"); !apierrors.IsNotFound(err) {
		t.Fatalf("a dry-run create was stored: %v", err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "q", Name: "real"}}); err != nil {
		t.Fatalf("the one create the quota allows, after dry runs: %v", err)
	}
	_, err = cms.Create(dry, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "q", Name: "over"}})
	wantRefused(t, err, codes.PermissionDenied, "exceeded quota: q1")
}
