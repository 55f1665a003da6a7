package integration

import (
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

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
