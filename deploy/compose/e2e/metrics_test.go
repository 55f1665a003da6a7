package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// metricsEndpoints are every component's /metrics, read from inside its
// own container (skiff-probe -body).
var metricsEndpoints = []struct{ service, url string }{
	{"apiserver", "http://127.0.0.1:6444/metrics"},
	{"controller-manager", "http://127.0.0.1:10257/metrics"},
	{"scheduler", "http://127.0.0.1:10259/metrics"},
	{"node1", "http://127.0.0.1:10248/metrics"},
	{"node2", "http://127.0.0.1:10248/metrics"},
}

// lintMetrics runs `promtool check metrics` (in the Prometheus container)
// over the service's /metrics and returns its complaints. The embedded
// etcd's metrics are exempt: the apiserver serves them under etcd's own
// names, which etcd's dashboards query, though a few break promtool's
// conventions (gauges named *_total, counters without it).
func (c *cluster) lintMetrics(service, metricsURL string) (string, error) {
	body, err := c.docker("exec", c.container(service), "skiff-probe", "-body", "-timeout", "10s", metricsURL)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", "exec", "-i", c.container("prometheus"), "promtool", "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return "", nil
	}
	// One complaint a line: "<metric name> <problem>".
	var problems []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasPrefix(line, "etcd_") {
			problems = append(problems, line)
		}
	}
	if len(problems) == 0 {
		return "", nil
	}
	return strings.Join(problems, "\n"), fmt.Errorf("promtool check metrics: %w", err)
}

// dashboardExprs returns every query of the Grafana dashboards, by
// "file: panel".
func dashboardExprs() (map[string][]string, error) {
	files, err := filepath.Glob("../grafana/dashboards/*.json")
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no dashboards in ../grafana/dashboards (%v)", err)
	}
	exprs := map[string][]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var d struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, p := range d.Panels {
			for _, t := range p.Targets {
				k := filepath.Base(f) + ": " + p.Title
				exprs[k] = append(exprs[k], t.Expr)
			}
		}
	}
	return exprs, nil
}

// promQuery asks the cluster's Prometheus (its published port) for an
// instant vector and returns the samples' values.
func promQuery(expr string) ([]float64, error) {
	port := os.Getenv("SKIFF_PROMETHEUS_PORT")
	if port == "" {
		port = "9090"
	}
	u := "http://127.0.0.1:" + port + "/api/v1/query?" + url.Values{"query": {expr}}.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Value [2]json.RawMessage `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(buf.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("%s: %w", buf.String(), err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("prometheus: %s", r.Error)
	}
	var vals []float64
	for _, s := range r.Data.Result {
		var v string
		if err := json.Unmarshal(s.Value[1], &v); err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, err
		}
		vals = append(vals, f)
	}
	return vals, nil
}

// hasNumber: at least one sample is a number (histogram quantiles are NaN
// over a window without observations).
func hasNumber(vals []float64) bool {
	for _, v := range vals {
		if !math.IsNaN(v) {
			return true
		}
	}
	return false
}
