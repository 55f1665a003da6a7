package integration

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	appsv1 "skiff.dev/proto/apps/v1"
	appsv1beta1 "skiff.dev/proto/apps/v1beta1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
)

func TestDeploymentServedAtTwoVersionsStoredAsOne(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	beta := client.DeploymentsV1beta1(s.Conn)
	v1 := client.Deployments(s.Conn)

	// v1beta1: no selector (defaults from the template), rollbackTo, beta defaults.
	created, err := beta.Create(ctx, &appsv1beta1.Deployment{Metadata: meta("default", "old"),
		Spec: &appsv1beta1.DeploymentSpec{Template: template(), RollbackTo: &appsv1beta1.RollbackConfig{Revision: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if created.ApiVersion != "apps/v1beta1" || created.Spec.GetRollbackTo().GetRevision() != 3 {
		t.Fatalf("v1beta1 create answered %v", created)
	}
	// Read at v1: the same object, converted.
	got, err := v1.Get(ctx, "default", "old")
	if err != nil {
		t.Fatal(err)
	}
	if got.ApiVersion != "apps/v1" || got.Kind != "Deployment" {
		t.Fatalf("v1 read has apiVersion %q kind %q", got.ApiVersion, got.Kind)
	}
	if got.Spec.GetSelector().GetMatchLabels()["app"] != "web" {
		t.Errorf("v1beta1 default selector from template labels missing: %v", got.Spec.GetSelector())
	}
	if got.Spec.GetRevisionHistoryLimit() != 2 {
		t.Errorf("v1beta1 default revisionHistoryLimit = %d, want 2", got.Spec.GetRevisionHistoryLimit())
	}
	if got.Metadata.Annotations[apiserver.RollbackToAnnotation] != "3" {
		t.Errorf("rollbackTo not stored as annotation: %v", got.Metadata.Annotations)
	}
	if got.Metadata.ResourceVersion != created.Metadata.ResourceVersion || got.Metadata.Uid != created.Metadata.Uid {
		t.Errorf("not the same object: %v vs %v", got.Metadata, created.Metadata)
	}
	// Stored once, as apps/v1.
	resp, err := s.EtcdClient().Get(ctx, "/registry/apps/deployments/default/old")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd key: %v %v", resp, err)
	}
	var stored appsv1.Deployment
	if err := proto.Unmarshal(resp.Kvs[0].Value[4:], &stored); err != nil || stored.ApiVersion != "apps/v1" {
		t.Fatalf("stored as %q (%v), want apps/v1", stored.ApiVersion, err)
	}

	// v1 create, read at v1beta1; v1 defaults stay.
	if _, err := v1.Create(ctx, &appsv1.Deployment{Metadata: meta("default", "new"), Spec: &appsv1.DeploymentSpec{Selector: selector(), Template: template()}}); err != nil {
		t.Fatal(err)
	}
	b, err := beta.Get(ctx, "default", "new")
	if err != nil || b.ApiVersion != "apps/v1beta1" || b.Spec.GetRevisionHistoryLimit() != 10 || b.Spec.RollbackTo != nil {
		t.Fatalf("v1beta1 read of a v1 object: %v %v", b, err)
	}
	// Lists and watches at v1beta1 convert every item.
	l, err := beta.List(ctx, &metav1.ListOptions{Namespace: "default"})
	if err != nil || len(l.Items) != 2 || l.ApiVersion != "apps/v1beta1" || l.Kind != "DeploymentList" {
		t.Fatalf("v1beta1 list: %v %v", l, err)
	}
	w, err := beta.Watch(ctx, &metav1.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := 0; i < 2; i++ {
		ev, err := w.Next()
		if err != nil || ev.Object.ApiVersion != "apps/v1beta1" {
			t.Fatalf("v1beta1 watch event: %v %v", ev, err)
		}
		if ev.Object.Metadata.Name == "old" && ev.Object.Spec.GetRollbackTo().GetRevision() != 3 {
			t.Fatalf("v1beta1 watch lost rollbackTo: %v", ev.Object.Spec)
		}
	}
	// An update through v1beta1 keeps the object and bumps generation.
	created.Spec.Replicas = proto.Int32(4)
	upd, err := beta.Update(ctx, created)
	if err != nil || upd.Metadata.Generation != 2 {
		t.Fatalf("v1beta1 update: %v %v", upd, err)
	}
}

func TestDiscoveryHealthReflection(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	disc := discoveryv1.NewDiscoveryClient(s.Conn)
	groups, err := disc.Groups(ctx, &discoveryv1.GroupsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, g := range groups.Groups {
		var vs []string
		for _, v := range g.Versions {
			vs = append(vs, v.GroupVersion)
		}
		summary = append(summary, g.Name+"="+strings.Join(vs, ",")+" preferred "+g.PreferredVersion.GetGroupVersion())
	}
	want := []string{"=v1 preferred v1", "admissionregistration.k8s.io=admissionregistration.k8s.io/v1 preferred admissionregistration.k8s.io/v1", "apps=apps/v1,apps/v1beta1 preferred apps/v1",
		"batch=batch/v1 preferred batch/v1", "certificates.k8s.io=certificates.k8s.io/v1 preferred certificates.k8s.io/v1", "coordination.k8s.io=coordination.k8s.io/v1 preferred coordination.k8s.io/v1", "discovery.k8s.io=discovery.k8s.io/v1 preferred discovery.k8s.io/v1",
		"node.k8s.io=node.k8s.io/v1 preferred node.k8s.io/v1",
		"policy=policy/v1 preferred policy/v1", "rbac.authorization.k8s.io=rbac.authorization.k8s.io/v1 preferred rbac.authorization.k8s.io/v1",
		"scheduling.k8s.io=scheduling.k8s.io/v1 preferred scheduling.k8s.io/v1", "storage.k8s.io=storage.k8s.io/v1 preferred storage.k8s.io/v1"}
	if strings.Join(summary, ";") != strings.Join(want, ";") {
		t.Fatalf("groups:\n got  %v\n want %v", summary, want)
	}
	res, err := disc.Resources(ctx, &discoveryv1.ResourcesRequest{GroupVersion: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	var pods *discoveryv1.APIResource
	for _, r := range res.Groups[0].Resources {
		if r.Name == "pods" {
			pods = r
		}
	}
	if pods == nil || pods.Kind != "Pod" || !pods.Namespaced || pods.Service != "skiff.core.v1.Pods" || len(pods.FieldSelectors) < 4 {
		t.Fatalf("pods resource: %v", pods)
	}
	all, _ := disc.Resources(ctx, &discoveryv1.ResourcesRequest{})
	if wantGV := len(want) + 1; len(all.Groups) != wantGV { // apps serves two versions
		t.Fatalf("resources of all group versions: %d groups, want %d", len(all.Groups), wantGV)
	}
	if _, err := disc.Resources(ctx, &discoveryv1.ResourcesRequest{GroupVersion: "nope/v9"}); err == nil {
		t.Fatal("unknown group version answered")
	}

	h, err := grpc_health_v1.NewHealthClient(s.Conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{})
	if err != nil || h.Status != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Fatalf("health: %v %v", h, err)
	}

	// Reflection lists every service, so grpcurl needs no .proto.
	rc, err := reflectionpb.NewServerReflectionClient(s.Conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	r, err := rc.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var services []string
	for _, svc := range r.GetListServicesResponse().GetService() {
		services = append(services, svc.Name)
	}
	for _, want := range []string{"skiff.core.v1.Pods", "skiff.apps.v1.Deployments", "skiff.apps.v1beta1.Deployments", "skiff.coordination.v1.Leases", "skiff.discovery.v1.Discovery", "grpc.health.v1.Health"} {
		if !strings.Contains(strings.Join(services, " "), want) {
			t.Errorf("reflection does not list %s: %v", want, services)
		}
	}

	// Metrics over HTTP.
	resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"apiserver_request_total", "apiserver_request_duration_seconds", "apiserver_registered_watchers", "etcd_request_duration_seconds", "apiserver_storage_db_total_size_in_bytes", "apiserver_watch_cache_events_received_total"} {
		if !strings.Contains(string(body), m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
}

func TestRequestIDAndRequestMetrics(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	var header metadata.MD
	ctx = metadata.AppendToOutgoingContext(ctx, "x-request-id", "req-42")
	if _, err := client.ConfigMaps(s.Conn).Get(ctx, "default", "missing", grpc.Header(&header)); !apierrors.IsNotFound(err) {
		t.Fatalf("want NotFound, got %v", err)
	}
	if got := header.Get("x-request-id"); len(got) != 1 || got[0] != "req-42" {
		t.Fatalf("x-request-id not echoed: %v", header)
	}
	mfs, err := s.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["resource"] == "configmaps" && labels["verb"] == "GET" && (labels["code"] == "404" || mf.GetName() == "apiserver_request_duration_seconds") {
				found[mf.GetName()] = true
			}
		}
	}
	for _, name := range []string{"apiserver_request_total", "apiserver_request_duration_seconds"} {
		if !found[name] {
			t.Errorf("%s has no series {resource=configmaps, verb=GET(, code=404)}", name)
		}
	}
}
