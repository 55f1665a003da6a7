// Package tracing is the OpenTelemetry tracing every Skiff binary shares:
// the --tracing-endpoint and --tracing-sampling-rate-per-million flags
// (Kubernetes' TracingConfiguration: endpoint, samplingRatePerMillion), a
// tracer provider that exports spans over OTLP gRPC to that collector,
// with a resource naming the binary (service.name) and W3C trace context
// propagation, and the gRPC options (otelgrpc stats handlers) that make a
// span of each call a server serves and a client makes.
//
// Use:
//
//	tr, err := tracing.New(ctx, o.Tracing, "skiff-scheduler", log) // nil when the endpoint is empty
//	defer tr.Stop(log)                                              // sends what is left
//	conn, err := client.Dial(cfg, tr.DialOptions()...)
//	srv := grpc.NewServer(append(opts, tr.ServerOptions()...)...)
//
// With the endpoint empty (the default) New returns nil: no tracer
// provider, no exporter, and the nil *Tracing's options are empty, so the
// calls cost nothing. It owns no span of its own: the spans are otelgrpc's.
package tracing

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/version"
)

// MaxSamplingRatePerMillion samples every trace this component starts.
const MaxSamplingRatePerMillion = 1_000_000

// Options are the tracing flags.
type Options struct {
	// Endpoint is the OTLP gRPC collector's host:port; "" is off.
	Endpoint string
	// SamplingRatePerMillion is how many of a million traces this
	// component starts are sampled; a request that comes with a sampled
	// trace context is always traced (parent-based sampling).
	SamplingRatePerMillion int
}

// AddFlags registers --tracing-endpoint and
// --tracing-sampling-rate-per-million (whose default is defaultRate: 0 for
// the daemons, as Kubernetes', which then trace only what their callers
// sampled; MaxSamplingRatePerMillion for skiffctl, whose user asked).
func (o *Options) AddFlags(fs *flag.FlagSet, defaultRate int) {
	fs.StringVar(&o.Endpoint, "tracing-endpoint", "", "host:port of an OpenTelemetry collector's OTLP gRPC receiver (plain text, e.g. localhost:4317) that receives a span of every gRPC call this program serves or makes; empty: no tracing")
	fs.IntVar(&o.SamplingRatePerMillion, "tracing-sampling-rate-per-million", defaultRate, "with --tracing-endpoint: how many of a million traces this program starts are sampled (0 to 1000000); a call that comes with a sampled W3C traceparent is always traced")
}

// Validate names the flag at fault.
func (o Options) Validate() error {
	if o.SamplingRatePerMillion < 0 || o.SamplingRatePerMillion > MaxSamplingRatePerMillion {
		return fmt.Errorf("--tracing-sampling-rate-per-million %d: must be between 0 and %d", o.SamplingRatePerMillion, MaxSamplingRatePerMillion)
	}
	if o.Endpoint == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(o.Endpoint)
	if err == nil && (host == "" || port == "") {
		err = errors.New("host and port are required")
	}
	if err != nil {
		return fmt.Errorf("--tracing-endpoint %q: want the host:port of an OTLP gRPC collector (e.g. localhost:4317): %v", o.Endpoint, err)
	}
	return nil
}

// Tracing is one program's tracer provider and propagation; nil is off.
type Tracing struct {
	provider   *sdktrace.TracerProvider
	propagator propagation.TextMapPropagator
}

// New starts tracing as o says, for the program service ("skiff-apiserver":
// the spans' service.name). It returns nil when o.Endpoint is empty.
// Export failures (a collector away) are logged by log as warnings; spans
// are sent in batches, in the background.
func New(ctx context.Context, o Options, service string, log *zap.Logger) (*Tracing, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Endpoint == "" {
		return nil, nil
	}
	exporter, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(o.Endpoint), otlptracegrpc.WithInsecure())
	if err != nil {
		return nil, fmt.Errorf("--tracing-endpoint %q: %w", o.Endpoint, err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName(service), semconv.ServiceVersion(version.Get().GitVersion)))
	if err != nil {
		_ = exporter.Shutdown(ctx)
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	if log != nil {
		// The SDK reports export failures through OpenTelemetry's one
		// process-wide handler.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			log.Warn("tracing", zap.String("endpoint", o.Endpoint), zap.Error(err))
		}))
	}
	return &Tracing{
		provider: sdktrace.NewTracerProvider(
			sdktrace.WithBatcher(exporter),
			sdktrace.WithResource(res),
			sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(float64(o.SamplingRatePerMillion)/MaxSamplingRatePerMillion))),
		),
		propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}, nil
}

func (t *Tracing) otelgrpcOptions() []otelgrpc.Option {
	return []otelgrpc.Option{
		otelgrpc.WithTracerProvider(t.provider),
		otelgrpc.WithPropagators(t.propagator),
		// Spans only: the metrics are Prometheus' (apiserver_request_*).
		otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()),
	}
}

// DialOptions make a client span of each call on a connection and send
// its trace context; none when t is nil.
func (t *Tracing) DialOptions() []grpc.DialOption {
	if t == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler(t.otelgrpcOptions()...))}
}

// ServerOptions make a server span of each call a server serves, the
// child of the caller's span when the call carries a trace context; none
// when t is nil.
func (t *Tracing) ServerOptions() []grpc.ServerOption {
	if t == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(t.otelgrpcOptions()...))}
}

// Shutdown sends the spans not sent yet and stops the exporter; nothing
// when t is nil.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// StopTimeout bounds Stop: a collector away does not hold a program's exit.
const StopTimeout = 5 * time.Second

// Stop is Shutdown within StopTimeout at a program's end; a failure is
// logged (the spans not sent are lost). Nothing when t is nil.
func (t *Tracing) Stop(log *zap.Logger) {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		log.Warn("tracing: the last spans were not sent", zap.Error(err))
	}
}
