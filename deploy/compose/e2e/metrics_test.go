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
	"slices"
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

// promGet GETs path of the cluster's Prometheus (its published port) with
// the query q and decodes the data of its answer into data.
func promGet(path string, q url.Values, data any) error {
	port := os.Getenv("SKIFF_PROMETHEUS_PORT")
	if port == "" {
		port = "9090"
	}
	u := "http://127.0.0.1:" + port + path + "?" + q.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(buf.Bytes(), &r); err != nil {
		return fmt.Errorf("%s: %w", buf.String(), err)
	}
	if r.Status != "success" {
		return fmt.Errorf("prometheus: %s", r.Error)
	}
	if err := json.Unmarshal(r.Data, data); err != nil {
		return fmt.Errorf("%s: %w", r.Data, err)
	}
	return nil
}

// promQuery asks the cluster's Prometheus for an instant vector and
// returns the samples' values.
func promQuery(expr string) ([]float64, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Value [2]json.RawMessage `json:"value"`
		} `json:"result"`
	}
	if err := promGet("/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	var vals []float64
	for _, s := range data.Result {
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

// rulesGlob are the rule files the compose Prometheus loads.
const rulesGlob = "../prometheus/rules/*.yml"

// ruleFileAlerts returns the name of every alert the rule files define
// (their "- alert: Name" lines), once each.
func ruleFileAlerts() ([]string, error) {
	files, err := filepath.Glob(rulesGlob)
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no rule files %s (%v)", rulesGlob, err)
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if name, ok := strings.CutPrefix(strings.TrimSpace(line), "- alert:"); ok && !slices.Contains(names, strings.TrimSpace(name)) {
				names = append(names, strings.TrimSpace(name))
			}
		}
	}
	return names, nil
}

// promRule is a rule as the cluster's Prometheus runs it.
type promRule struct {
	Name      string `json:"name"`
	Query     string `json:"query"`
	Type      string `json:"type"`   // "alerting" or "recording"
	Health    string `json:"health"` // "ok", "err", or "unknown" before its first evaluation
	LastError string `json:"lastError"`
	State     string `json:"state"` // an alert's: "inactive", "pending" or "firing"
}

// promRules returns every rule the cluster's Prometheus loaded.
func promRules() ([]promRule, error) {
	var data struct {
		Groups []struct {
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	if err := promGet("/api/v1/rules", nil, &data); err != nil {
		return nil, err
	}
	var rules []promRule
	for _, g := range data.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules, nil
}

// alertProblems checks the rules the cluster's Prometheus runs: every
// alert of the rule files is loaded, every rule (recording rules too) was
// evaluated without error, every alert expression evaluates as a query
// without error, and every metric an alert expression names has series.
// It returns what is wrong, and the alerts pending or firing.
func alertProblems() (problems, active []string, err error) {
	want, err := ruleFileAlerts()
	if err != nil {
		return nil, nil, err
	}
	rules, err := promRules()
	if err != nil {
		return nil, nil, err
	}
	loaded := map[string]bool{}
	for _, r := range rules {
		if r.Health != "ok" {
			problems = append(problems, fmt.Sprintf("%s rule %s: health %q %s", r.Type, r.Name, r.Health, r.LastError))
		}
		if r.Type != "alerting" {
			continue
		}
		loaded[r.Name] = true
		if r.State != "inactive" {
			active = append(active, r.Name+" "+r.State)
		}
		if _, err := promQuery(r.Query); err != nil {
			problems = append(problems, fmt.Sprintf("alert %s: %s: %v", r.Name, r.Query, err))
		}
		for _, m := range metricNames(r.Query) {
			vals, err := promQuery("count(" + m + ")")
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("alert %s: count(%s): %v", r.Name, m, err))
			case len(vals) == 0:
				problems = append(problems, fmt.Sprintf("alert %s: no series of %s", r.Name, m))
			}
		}
	}
	for _, name := range want {
		if !loaded[name] {
			problems = append(problems, fmt.Sprintf("alert %s of %s is not loaded", name, rulesGlob))
		}
	}
	return problems, active, nil
}

// promQLWords are the words of PromQL that are not metric names where one
// could stand: keywords, aggregation operators, number literals.
var promQLWords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "atan2": true,
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true, "inf": true, "nan": true,
}

// labelListWords are followed by a parenthesised list of label names.
var labelListWords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// metricNames returns the metric names a PromQL expression selects, once
// each, in order: the words outside strings, label matchers ({...}),
// ranges ([...]) and label lists (by (...)) that are neither followed by
// "(" (functions) nor PromQL's own words. (The e2e module has no
// dependencies, so not Prometheus' parser; TestPromQLMetricNames checks it
// on the rules' kinds of expression.)
func metricNames(expr string) []string {
	var names []string
	isWord := func(c byte, first bool) bool {
		return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || !first && '0' <= c && c <= '9'
	}
	skipSpace := func(i int) int {
		for i < len(expr) && strings.IndexByte(" \t\r\n", expr[i]) >= 0 {
			i++
		}
		return i
	}
	nested := 0 // inside {...} or [...]
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i++
			for i < len(expr) && expr[i] != c {
				if expr[i] == '\\' && c != '`' {
					i++
				}
				i++
			}
			i++
		case c == '#': // a comment, to the end of the line
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '{' || c == '[':
			nested++
			i++
		case c == '}' || c == ']':
			nested--
			i++
		case '0' <= c && c <= '9' || c == '.': // a number or a duration: 0.99, 5m, 1e3, 0x1f
			for i < len(expr) && (isWord(expr[i], false) || expr[i] == '.') {
				i++
			}
		case isWord(c, true):
			start := i
			for i < len(expr) && isWord(expr[i], false) {
				i++
			}
			word := expr[start:i]
			if nested > 0 {
				continue // a label name
			}
			next := skipSpace(i)
			if labelListWords[word] && next < len(expr) && expr[next] == '(' {
				if end := strings.IndexByte(expr[next:], ')'); end >= 0 {
					i = next + end + 1
				}
				continue
			}
			if (next < len(expr) && expr[next] == '(') || promQLWords[strings.ToLower(word)] || slices.Contains(names, word) {
				continue
			}
			names = append(names, word)
		default:
			i++
		}
	}
	return names
}
