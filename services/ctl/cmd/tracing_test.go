package cmd

import (
	"strings"
	"testing"
	"time"

	"skiff.dev/internal/tracing/tracingtest"
)

// TestTracingFlag: with --tracing-endpoint skiffctl sends a span of each
// call it makes (sampled: its default rate is every trace), named after
// the gRPC method, with service.name skiffctl; a bad value is refused
// before anything is sent.
func TestTracingFlag(t *testing.T) {
	col := tracingtest.Start(t)
	c := newCLI(t)
	c.ok("get", "pods", "--tracing-endpoint", col.Endpoint())
	// Execute returned: its spans were sent when it closed.
	span := col.WaitFor(t, "skiffctl", "skiff.core.v1.Pods/List", 10*time.Second)
	if len(span.GetTraceId()) != 16 || len(span.GetParentSpanId()) != 0 {
		t.Errorf("span %v: want a root span with a trace id", span)
	}
	for _, tc := range []struct{ args, want string }{
		{"--tracing-endpoint localhost", `--tracing-endpoint "localhost": want the host:port of an OTLP gRPC collector`},
		{"--tracing-sampling-rate-per-million 2000000", "--tracing-sampling-rate-per-million 2000000: must be between 0 and 1000000"},
	} {
		if got := c.fails(append([]string{"get", "pods"}, strings.Fields(tc.args)...)...); !strings.Contains(got, tc.want) {
			t.Errorf("skiffctl get pods %s: %q, want %q", tc.args, got, tc.want)
		}
	}
}
