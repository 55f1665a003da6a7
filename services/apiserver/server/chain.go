package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"skiff.dev/internal/apierrors"
)

// RequestIDHeader carries a client's request id; the server echoes it in
// the response header and logs it. Without one the server makes an id for
// its logs only (sending a unique header on every response costs CPU).
const RequestIDHeader = "x-request-id"

// RequestInfo is what the chain learns about a request from its method.
type RequestInfo struct {
	ID          string
	Resource    string // "pods"; "" for non-resource services (discovery, health)
	Subresource string // "status", "binding", "scale"
	Verb        string // create, get, list, update, delete, watch
	echo        bool   // the client sent the id: send it back
}

type requestInfoKey struct{}

// RequestInfoFrom returns the request info the chain attached to ctx.
func RequestInfoFrom(ctx context.Context) (*RequestInfo, bool) {
	ri, ok := ctx.Value(requestInfoKey{}).(*RequestInfo)
	return ri, ok
}

// route maps a gRPC method to its resource and verb.
type route struct{ resource, subresource, verb string }

// Routes knows every method of every resource service.
type Routes map[string]route

// Add records the methods of one resource service.
func (rs Routes) Add(service, resource string) {
	for method, r := range map[string]route{
		"Create":       {resource, "", "create"},
		"Get":          {resource, "", "get"},
		"List":         {resource, "", "list"},
		"Update":       {resource, "", "update"},
		"UpdateStatus": {resource, "status", "update"},
		"Delete":       {resource, "", "delete"},
		"Watch":        {resource, "", "watch"},
		"Bind":         {resource, "binding", "create"},
		"GetScale":     {resource, "scale", "get"},
		"UpdateScale":  {resource, "scale", "update"},
	} {
		rs["/"+service+"/"+method] = r
	}
}

func (rs Routes) info(fullMethod string) route {
	if r, ok := rs[fullMethod]; ok {
		return r
	}
	// Discovery, health, reflection: name the service and method.
	svc, method, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	return route{resource: "", subresource: svc, verb: strings.ToLower(method)}
}

// Metrics of the request chain.
type Metrics struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	longRunning *prometheus.GaugeVec
}

// NewMetrics registers the request metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Requests by resource, subresource, verb and gRPC code.",
		}, []string{"resource", "subresource", "verb", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Request latency by resource, subresource, verb and gRPC code (watches excluded).",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"resource", "subresource", "verb", "code"}),
		longRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_longrunning_requests",
			Help: "Open long-running requests (watches) by resource.",
		}, []string{"resource", "verb"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.longRunning)
	}
	return m
}

// Chain is the request chain every call passes: request info -> (later:
// authentication, rate limiting, authorization, admission) -> handler;
// then metrics, logs and the one mapping of errors to gRPC statuses.
type Chain struct {
	Routes   Routes
	Metrics  *Metrics
	Log      *zap.Logger
	idBase   string
	seq      atomic.Uint64
	byMethod sync.Map // full method -> *methodStats
}

// NewChain returns a chain.
func NewChain(routes Routes, m *Metrics, log *zap.Logger) *Chain {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &Chain{Routes: routes, Metrics: m, Log: log, idBase: hex.EncodeToString(b[:])}
}

func (c *Chain) begin(ctx context.Context, fullMethod string) (context.Context, *RequestInfo) {
	r := c.Routes.info(fullMethod)
	ri := &RequestInfo{Resource: r.resource, Subresource: r.subresource, Verb: r.verb}
	if ids := metadata.ValueFromIncomingContext(ctx, RequestIDHeader); len(ids) > 0 && len(ids[0]) <= 128 {
		ri.ID = ids[0]
		ri.echo = true
	} else {
		ri.ID = c.idBase + "-" + strconvU(c.seq.Add(1))
	}
	return context.WithValue(ctx, requestInfoKey{}, ri), ri
}

func strconvU(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return string(b[i:])
}

// toStatus is the one place errors become gRPC statuses.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return status.Error(codes.Canceled, "request canceled by the client")
	}
	if _, ok := status.FromError(err); ok {
		var se *apierrors.StatusError
		if !errors.As(err, &se) {
			return err // already a gRPC status (e.g. from grpc itself)
		}
	}
	return apierrors.FromError(err).GRPCStatus().Err()
}

func (c *Chain) finish(ri *RequestInfo, fullMethod string, start time.Time, err error, longRunning bool) {
	code := status.Code(err)
	if c.Metrics != nil {
		series := c.stats(ri, fullMethod).forCode(c.Metrics, code)
		series.requests.Inc()
		if !longRunning {
			series.duration.Observe(time.Since(start).Seconds())
		}
	}
	if code == codes.Internal || code == codes.Unknown {
		c.Log.Error("request failed", zap.String("request_id", ri.ID), zap.String("method", fullMethod), zap.Error(err))
	} else if ce := c.Log.Check(zap.DebugLevel, "request"); ce != nil {
		ce.Write(zap.String("request_id", ri.ID), zap.String("method", fullMethod),
			zap.String("code", code.String()), zap.Duration("took", time.Since(start)))
	}
}

// methodStats holds one method's metric series, resolved once per code
// instead of hashing label values on every request.
type methodStats struct {
	ri    RequestInfo
	codes [codes.Unauthenticated + 1]atomic.Pointer[codeSeries]
}

type codeSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func (st *methodStats) forCode(m *Metrics, code codes.Code) *codeSeries {
	resolve := func() *codeSeries {
		labels := []string{st.ri.Resource, st.ri.Subresource, st.ri.Verb, code.String()}
		return &codeSeries{requests: m.requests.WithLabelValues(labels...), duration: m.duration.WithLabelValues(labels...)}
	}
	if int(code) >= len(st.codes) {
		return resolve()
	}
	if p := st.codes[code].Load(); p != nil {
		return p
	}
	cs := resolve()
	st.codes[code].Store(cs)
	return cs
}

func (c *Chain) stats(ri *RequestInfo, fullMethod string) *methodStats {
	if st, ok := c.byMethod.Load(fullMethod); ok {
		return st.(*methodStats)
	}
	st := &methodStats{ri: *ri}
	actual, _ := c.byMethod.LoadOrStore(fullMethod, st)
	return actual.(*methodStats)
}

// Unary is the chain for unary calls.
func (c *Chain) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	ctx, ri := c.begin(ctx, info.FullMethod)
	if ri.echo {
		_ = grpc.SetHeader(ctx, metadata.Pairs(RequestIDHeader, ri.ID))
	}
	resp, err := handler(ctx, req)
	err = toStatus(err)
	c.finish(ri, info.FullMethod, start, err, false)
	return resp, err
}

type wrappedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (w *wrappedStream) Context() context.Context { return w.ctx }

// Stream is the chain for streaming calls (watches).
func (c *Chain) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	ctx, ri := c.begin(ss.Context(), info.FullMethod)
	if ri.echo {
		_ = ss.SetHeader(metadata.Pairs(RequestIDHeader, ri.ID))
	}
	if c.Metrics != nil {
		g := c.Metrics.longRunning.WithLabelValues(ri.Resource, ri.Verb)
		g.Inc()
		defer g.Dec()
	}
	err := toStatus(handler(srv, &wrappedStream{ServerStream: ss, ctx: ctx}))
	c.finish(ri, info.FullMethod, start, err, true)
	return err
}
