// Package tracingtest is an in-process OTLP trace collector for tests: a
// gRPC server of the OTLP TraceService on a loopback port, whose spans a
// test reads by service and span name. It owns nothing else.
package tracingtest

import (
	"context"
	"encoding/hex"
	"net"
	"sync"
	"testing"
	"time"

	collectortracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// Span is a received span with the service.name of its resource.
type Span struct {
	Service string
	*tracepb.Span
}

// TraceID is the span's trace id in hex.
func (s Span) TraceID() string { return hex.EncodeToString(s.GetTraceId()) }

// SpanID is the span's id in hex.
func (s Span) SpanID() string { return hex.EncodeToString(s.GetSpanId()) }

// ParentSpanID is the span's parent's id in hex ("" for a root span).
func (s Span) ParentSpanID() string { return hex.EncodeToString(s.GetParentSpanId()) }

// Collector receives spans over OTLP gRPC.
type Collector struct {
	collectortracepb.UnimplementedTraceServiceServer
	addr string
	srv  *grpc.Server

	mu      sync.Mutex
	spans   []Span
	changed chan struct{} // closed and replaced on each export
}

// Start starts a collector for tb and stops it when tb ends.
func Start(tb testing.TB) *Collector {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	c := &Collector{addr: l.Addr().String(), srv: grpc.NewServer(), changed: make(chan struct{})}
	collectortracepb.RegisterTraceServiceServer(c.srv, c)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.srv.Serve(l) }()
	tb.Cleanup(func() { c.srv.Stop(); <-done })
	return c
}

// Endpoint is the collector's host:port (for --tracing-endpoint).
func (c *Collector) Endpoint() string { return c.addr }

// Export implements the OTLP TraceService.
func (c *Collector) Export(_ context.Context, req *collectortracepb.ExportTraceServiceRequest) (*collectortracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		var service string
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, Span{Service: service, Span: s})
			}
		}
	}
	close(c.changed)
	c.changed = make(chan struct{})
	return &collectortracepb.ExportTraceServiceResponse{}, nil
}

// Spans are the spans received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// WaitFor waits until the collector has a span of service named name and
// returns the first such one; it fails tb after timeout.
func (c *Collector) WaitFor(tb testing.TB, service, name string, timeout time.Duration) Span {
	tb.Helper()
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		for _, s := range c.spans {
			if s.Service == service && s.GetName() == name {
				c.mu.Unlock()
				return s
			}
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			tb.Fatalf("no span %q of service %q within %v; received: %v", name, service, timeout, c.names())
			return Span{}
		}
	}
}

func (c *Collector) names() []string {
	var out []string
	for _, s := range c.Spans() {
		out = append(out, s.Service+": "+s.GetName())
	}
	return out
}
