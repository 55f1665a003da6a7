package integration

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// scrape reads the apiserver's /metrics as Prometheus would.
func scrape(t *testing.T, s *apiservertest.Server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return mfs
}

func labelsOf(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// series returns the label sets of a family's series whose labels include want.
func series(mf *dto.MetricFamily, want map[string]string) []map[string]string {
	var out []map[string]string
	for _, m := range mf.GetMetric() {
		l := labelsOf(m)
		ok := true
		for k, v := range want {
			if got, has := l[k]; !has || got != v {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

func describe(mf *dto.MetricFamily) string {
	var lines []string
	for _, m := range mf.GetMetric() {
		lines = append(lines, fmt.Sprint(labelsOf(m)))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// The embedded etcd's metrics keep the names etcd gives them, so etcd's
// own dashboards and alerts (etcd-mixin) work on the apiserver's /metrics.
func TestEtcdMetricsKeepUpstreamNames(t *testing.T) {
	s := apiservertest.Start(t)
	mfs := scrape(t, s)
	for _, c := range []struct {
		name string
		typ  dto.MetricType
	}{
		{"etcd_server_has_leader", dto.MetricType_GAUGE},
		{"etcd_mvcc_db_total_size_in_bytes", dto.MetricType_GAUGE},
		{"etcd_server_quota_backend_bytes", dto.MetricType_GAUGE},
		{"etcd_disk_wal_fsync_duration_seconds", dto.MetricType_HISTOGRAM},
		{"etcd_disk_backend_commit_duration_seconds", dto.MetricType_HISTOGRAM},
		{"etcd_server_leader_changes_seen_total", dto.MetricType_COUNTER},
		// etcd registers these as gauges named *_total; etcd-mixin
		// queries them so.
		{"etcd_server_proposals_committed_total", dto.MetricType_GAUGE},
		{"etcd_server_proposals_applied_total", dto.MetricType_GAUGE},
		{"etcd_server_proposals_failed_total", dto.MetricType_COUNTER},
		{"etcd_debugging_mvcc_keys_total", dto.MetricType_GAUGE},
	} {
		mf, ok := mfs[c.name]
		if !ok {
			t.Errorf("/metrics lacks etcd's %s", c.name)
			continue
		}
		if mf.GetType() != c.typ {
			t.Errorf("%s is a %v, etcd's is a %v", c.name, mf.GetType(), c.typ)
		}
	}
	for _, renamed := range []string{"etcd_server_proposals_committed", "etcd_server_health_failures_total"} {
		if _, ok := mfs[renamed]; ok {
			t.Errorf("/metrics has %s, a name etcd does not use", renamed)
		}
	}
}

// apiserver_request_total and apiserver_request_duration_seconds carry
// Kubernetes' labels, with Kubernetes' values, after real requests.
func TestRequestMetricsKubernetesLabels(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	cms := client.ConfigMaps(s.Conn)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: meta("default", "one")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: meta("default", "one")}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{Metadata: meta("default", "Not_A_Name")}); !apierrors.IsInvalid(err) {
		t.Fatalf("create of a bad name: %v, want Invalid", err)
	}
	if _, err := cms.Get(ctx, "default", "missing"); !apierrors.IsNotFound(err) {
		t.Fatalf("get: %v, want NotFound", err)
	}
	cm, err := cms.Get(ctx, "default", "one")
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"k": "v"}
	if _, err := cms.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.List(ctx, &metav1.ListOptions{Namespace: "default"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.List(ctx, &metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DeploymentsV1beta1(s.Conn).Get(ctx, "default", "missing"); !apierrors.IsNotFound(err) {
		t.Fatalf("get apps/v1beta1 deployment: %v, want NotFound", err)
	}
	if _, err := client.Nodes(s.Conn).Get(ctx, "", "missing"); !apierrors.IsNotFound(err) {
		t.Fatalf("get node: %v, want NotFound", err)
	}
	if _, err := cms.Delete(ctx, &metav1.DeleteRequest{Namespace: "default", Name: "one"}); err != nil {
		t.Fatal(err)
	}

	mfs := scrape(t, s)
	total, duration := mfs["apiserver_request_total"], mfs["apiserver_request_duration_seconds"]
	if total == nil || duration == nil {
		t.Fatalf("/metrics lacks apiserver_request_total or apiserver_request_duration_seconds")
	}
	if total.GetType() != dto.MetricType_COUNTER || duration.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("types: %v and %v, want a counter and a histogram", total.GetType(), duration.GetType())
	}
	core := func(verb, code, resource, scope string) map[string]string {
		l := map[string]string{"verb": verb, "group": "", "version": "v1", "resource": resource,
			"subresource": "", "scope": scope, "component": "apiserver"}
		if code != "" {
			l["code"] = code
		}
		return l
	}
	for _, c := range []struct {
		name string
		want map[string]string
	}{
		{"create", core("POST", "201", "configmaps", "resource")},
		{"create of an existing name", core("POST", "409", "configmaps", "resource")},
		{"create of an invalid object", core("POST", "422", "configmaps", "resource")},
		{"get of a missing object", core("GET", "404", "configmaps", "resource")},
		{"get", core("GET", "200", "configmaps", "resource")},
		{"update", core("PUT", "200", "configmaps", "resource")},
		{"list in a namespace", core("LIST", "200", "configmaps", "namespace")},
		{"list across namespaces", core("LIST", "200", "configmaps", "cluster")},
		{"delete", core("DELETE", "200", "configmaps", "resource")},
		{"get of a cluster-scoped object", core("GET", "404", "nodes", "resource")},
		{"apps/v1beta1", map[string]string{"verb": "GET", "code": "404", "group": "apps", "version": "v1beta1",
			"resource": "deployments", "subresource": "", "scope": "resource", "component": "apiserver"}},
	} {
		got := series(total, c.want)
		if len(got) != 1 {
			t.Errorf("%s: apiserver_request_total has %d series with %v, want 1; it has:\n%s", c.name, len(got), c.want, describe(total))
			continue
		}
		if len(got[0]) != len(c.want) {
			t.Errorf("%s: apiserver_request_total labels %v, want exactly %v", c.name, got[0], c.want)
		}
		delete(c.want, "code") // Kubernetes' histogram has no code label
		got = series(duration, c.want)
		if len(got) != 1 || len(got[0]) != len(c.want) {
			t.Errorf("%s: apiserver_request_duration_seconds series %v, want one labelled exactly %v", c.name, got, c.want)
		}
	}
}

// Skiff's own gRPC API has the grpc_server_* metrics of go-grpc-middleware
// (as etcd's and most Go gRPC servers'), by service, method, type and code.
func TestGRPCServerMetrics(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	if _, err := client.ConfigMaps(s.Conn).Get(ctx, "default", "missing"); !apierrors.IsNotFound(err) {
		t.Fatalf("get: %v, want NotFound", err)
	}
	mfs := scrape(t, s)
	method := map[string]string{"grpc_service": "skiff.core.v1.ConfigMaps", "grpc_method": "Get", "grpc_type": "unary"}
	for _, name := range []string{"grpc_server_started_total", "grpc_server_handled_total", "grpc_server_handling_seconds"} {
		mf := mfs[name]
		if mf == nil {
			t.Errorf("/metrics lacks %s", name)
			continue
		}
		want := method
		if name == "grpc_server_handled_total" {
			want = map[string]string{"grpc_code": "NotFound"}
			for k, v := range method {
				want[k] = v
			}
		}
		if got := series(mf, want); len(got) != 1 {
			t.Errorf("%s: %d series with %v, want 1; it has:\n%s", name, len(got), want, describe(mf))
		}
		// The embedded etcd's gRPC server is not the API: its series would
		// only count the apiserver's maintenance calls (status, defrag).
		for _, m := range mf.GetMetric() {
			if svc := labelsOf(m)["grpc_service"]; strings.HasPrefix(svc, "etcdserverpb.") {
				t.Errorf("%s has a series of etcd's gRPC server: %v", name, labelsOf(m))
				break
			}
		}
	}
}

// TestClientCertificateExpirationMetric: with authentication on, the
// apiserver's /metrics has Kubernetes' apiserver_client_certificate_expiration_seconds,
// one observation per request made with a client certificate (the
// KubeClientCertificateExpiration alert reads it).
func TestClientCertificateExpirationMetric(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure())
	if err := getCM(t, s.Conn); err != nil {
		t.Fatal(err)
	}
	mf, ok := scrape(t, s)["apiserver_client_certificate_expiration_seconds"]
	if !ok || mf.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("/metrics lacks the histogram apiserver_client_certificate_expiration_seconds: %v", mf)
	}
	if n := mf.GetMetric()[0].GetHistogram().GetSampleCount(); n == 0 {
		t.Error("apiserver_client_certificate_expiration_seconds observed nothing after a request with a client certificate")
	}
}
