package workqueue

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// histogram returns the sample count and sum of a histogram series.
func histogram(t *testing.T, g prometheus.Gatherer, metric, queue string) (uint64, float64) {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == queue {
					h := m.GetHistogram()
					return h.GetSampleCount(), h.GetSampleSum()
				}
			}
		}
	}
	return 0, 0
}

func inFlightText(unfinished, longest string) string {
	return `
# HELP workqueue_longest_running_processor_seconds How long the longest-running worker has held its key.
# TYPE workqueue_longest_running_processor_seconds gauge
workqueue_longest_running_processor_seconds{name="q"} ` + longest + `
# HELP workqueue_unfinished_work_seconds Seconds of work in progress not yet observed by workqueue_work_duration_seconds, summed over keys; a large value with a small rate of Done means a stuck worker.
# TYPE workqueue_unfinished_work_seconds gauge
workqueue_unfinished_work_seconds{name="q"} ` + unfinished + `
`
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	clk := NewFakeClock(epoch)
	q := New(Options[string]{Name: "q", Metrics: m, Clock: clk})
	defer q.ShutDown()

	check := func(step string, depth, adds, retries float64) {
		t.Helper()
		for _, c := range []struct {
			metric    string
			got, want float64
		}{
			{"workqueue_depth", testutil.ToFloat64(m.depth.WithLabelValues("q")), depth},
			{"workqueue_adds_total", testutil.ToFloat64(m.adds.WithLabelValues("q")), adds},
			{"workqueue_retries_total", testutil.ToFloat64(m.retries.WithLabelValues("q")), retries},
		} {
			if c.got != c.want {
				t.Errorf("%s: %s = %v, want %v", step, c.metric, c.got, c.want)
			}
		}
	}
	inFlight := func(step, unfinished, longest string) {
		t.Helper()
		err := testutil.GatherAndCompare(reg, strings.NewReader(inFlightText(unfinished, longest)),
			"workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds")
		if err != nil {
			t.Errorf("%s: %v", step, err)
		}
	}

	q.Add("a")
	q.Add("b")
	q.Add("a") // already waiting: not an add
	check("after adding a, b, a", 2, 2, 0)
	inFlight("nothing processed", "0", "0")

	clk.Step(2 * time.Second)
	k := mustGet(t, q)
	check("after Get", 1, 2, 0)
	if n, sum := histogram(t, reg, "workqueue_queue_duration_seconds", "q"); n != 1 || sum != 2 {
		t.Errorf("queue duration: %d samples, sum %vs; want 1 of 2s", n, sum)
	}

	clk.Step(3 * time.Second)
	inFlight("a held for 3s", "3", "3")
	k2 := mustGet(t, q)
	clk.Step(time.Second)
	inFlight("a held 4s, b 1s", "5", "4")

	q.Done(k)
	q.Done(k2)
	if n, sum := histogram(t, reg, "workqueue_work_duration_seconds", "q"); n != 2 || sum != 5 {
		t.Errorf("work duration: %d samples, sum %vs; want 2 summing to 5s", n, sum)
	}
	inFlight("all done", "0", "0")
	check("after Done", 0, 2, 0)

	q.AddRateLimited("c")
	q.AddRateLimited("c")
	check("after two rate-limited adds", 0, 2, 2)
	clk.Step(time.Hour)
	if k := mustGet(t, q); k != "c" {
		t.Fatalf("Get = %q, want c", k)
	}
	check("after the retry is due", 0, 3, 2)
}

func TestMetricsShared(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m1 := NewMetrics(reg)
	m2 := NewMetrics(reg) // same registry: reuses the collectors, no panic
	clk := NewFakeClock(epoch)
	q1 := New(Options[string]{Name: "q", Metrics: m1, Clock: clk})
	q2 := New(Options[string]{Name: "q", Metrics: m2, Clock: clk})
	other := New(Options[string]{Name: "other", Metrics: m1, Clock: clk})
	defer q1.ShutDown()
	defer q2.ShutDown()
	defer other.ShutDown()

	q1.Add("a")
	q2.Add("a")
	other.Add("a")
	if got := testutil.ToFloat64(m1.adds.WithLabelValues("q")); got != 2 {
		t.Errorf("adds{name=q} = %v, want 2 (two queues named q)", got)
	}
	if got := testutil.ToFloat64(m2.adds.WithLabelValues("other")); got != 1 {
		t.Errorf("adds{name=other} = %v, want 1", got)
	}
	mustGet(t, q1)
	clk.Step(time.Second)
	mustGet(t, q2)
	clk.Step(time.Second)
	// Queues sharing a name are one series: work adds up, longest is the max.
	err := testutil.GatherAndCompare(reg, strings.NewReader(inFlightText("3", "2")+`
workqueue_longest_running_processor_seconds{name="other"} 0
workqueue_unfinished_work_seconds{name="other"} 0
`), "workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds")
	if err != nil {
		t.Error(err)
	}
}

func TestMetricsUnregistered(t *testing.T) {
	for _, m := range []*Metrics{NewMetrics(nil), nil} {
		q := New(Options[string]{Name: "q", Metrics: m})
		q.Add("a")
		q.Done(mustGet(t, q))
		q.AddRateLimited("a")
		q.ShutDown()
	}
}
