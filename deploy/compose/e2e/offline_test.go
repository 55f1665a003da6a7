package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The tests of this file need no cluster: make test runs them (make
// test-rules), so that the checks TestCluster makes of the dashboards and
// alerts are themselves checked.

func TestPromQLMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`etcd_server_has_leader == 0`, []string{"etcd_server_has_leader"}},
		{`etcd_mvcc_db_total_size_in_bytes / etcd_server_quota_backend_bytes > 0.8`,
			[]string{"etcd_mvcc_db_total_size_in_bytes", "etcd_server_quota_backend_bytes"}},
		{`sum by (job, instance) (rate(apiserver_request_total{code=~"5.."}[5m]))
  / sum by (job, instance) (rate(apiserver_request_total[5m])) > 0.05`, []string{"apiserver_request_total"}},
		{`histogram_quantile(0.99, sum by (job, verb, le) (rate(apiserver_request_duration_seconds_bucket{verb!~"WATCH|CONNECT", subresource!="log"}[5m]))) > 1`,
			[]string{"apiserver_request_duration_seconds_bucket"}},
		{`histogram_quantile(0.01, sum by (job, le) (rate(x_bucket[5m]))) < 7 * 24 * 3600`, []string{"x_bucket"}},
		{`max by (zone) (node_collector_unhealthy_nodes_in_zone) > 0`, []string{"node_collector_unhealthy_nodes_in_zone"}},
		{`min by (job, name) (min_over_time(workqueue_depth[10m])) > 0
unless on (job, name)
sum by (job, name) (increase(workqueue_work_duration_seconds_count[10m])) > 0`,
			[]string{"workqueue_depth", "workqueue_work_duration_seconds_count"}},
		// Aggregations with the clause after, recording rule names,
		// offsets, bool, strings with quotes and parentheses, comments.
		{`sum(rate(a_total[1m] offset 5m)) without (instance) > bool 1e3`, []string{"a_total"}},
		{`job:requests:rate5m * on (job) group_left (team) team_info`, []string{"job:requests:rate5m", "team_info"}},
		{`label_replace(b, "dst", "$1", "src", "(.*)\")") # c_total`, []string{"b"}},
		{`topk(3, count_values("v", build_info)) or vector(0) and time() > Inf`, []string{"build_info"}},
	} {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// TestRuleFileAlerts: the alerts of the compose rule files are found, one
// name each (KubeClientCertificateExpiration has two severities).
func TestRuleFileAlerts(t *testing.T) {
	names, err := ruleFileAlerts()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"KubeAPIErrorsHigh", "KubeClientCertificateExpiration", "etcdNoLeader", "KubeNodeNotReady", "KubeWorkQueueStuck", "KubeSchedulerPendingPods"} {
		if !slices.Contains(names, want) {
			t.Errorf("alerts of %s: %q, lacking %s", rulesGlob, names, want)
		}
	}
	for i, n := range names {
		if slices.Contains(names[i+1:], n) {
			t.Errorf("alert %s listed twice", n)
		}
	}
}

// TestDashboardsDatasourceVariable: every dashboard lets its user choose
// the Prometheus (a "datasource" variable of type datasource, query
// prometheus), and every panel and query uses it, as Grafana's and
// kubernetes-mixin's dashboards do.
func TestDashboardsDatasourceVariable(t *testing.T) {
	files, err := filepath.Glob("../grafana/dashboards/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards (%v)", err)
	}
	type datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
	want := datasource{Type: "prometheus", UID: "${datasource}"}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Templating struct {
				List []struct {
					Name  string `json:"name"`
					Type  string `json:"type"`
					Query string `json:"query"`
				} `json:"list"`
			} `json:"templating"`
			Panels []struct {
				Title      string      `json:"title"`
				Datasource *datasource `json:"datasource"`
				Targets    []struct {
					Datasource *datasource `json:"datasource"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		found := false
		for _, v := range d.Templating.List {
			if v.Name == "datasource" {
				found = true
				if v.Type != "datasource" || v.Query != "prometheus" {
					t.Errorf("%s: variable datasource has type %q, query %q; want datasource, prometheus", f, v.Type, v.Query)
				}
			}
		}
		if !found {
			t.Errorf("%s: no datasource variable in templating.list", f)
		}
		for _, p := range d.Panels {
			if p.Datasource == nil || *p.Datasource != want {
				t.Errorf("%s: panel %q: datasource %+v, want %+v", f, p.Title, p.Datasource, want)
			}
			for i, tg := range p.Targets {
				if tg.Datasource == nil || *tg.Datasource != want {
					t.Errorf("%s: panel %q, target %d: datasource %+v, want %+v", f, p.Title, i, tg.Datasource, want)
				}
			}
		}
	}
}
