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
