package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
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
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/grpcmetrics"
	"skiff.dev/services/apiserver/registry"
	"skiff.dev/services/apiserver/user"
)

// RequestIDHeader carries a client's request id; the server echoes it in
// the response header and logs it. Without one the server makes an id for
// its logs only (sending a unique header on every response costs CPU).
const RequestIDHeader = "x-request-id"

// RequestInfo is what the chain learns about a request: from its method
// (resource and verb), from its message (namespace, name, selectors) and
// from authentication (the user). Authorization, fairness, admission and
// audit all read it.
type RequestInfo struct {
	ID          string
	Path        string // the full gRPC method, "/skiff.core.v1.Pods/List"
	APIGroup    string // "" (core), "apps"...
	Resource    string // "pods"; "" for non-resource services (discovery, health)
	Subresource string // "status", "binding", "scale", "log"
	Verb        string // create, get, list, update, delete, watch
	Namespaced  bool   // the resource is namespaced
	// From the request message: the namespace ("" for cluster-scoped
	// kinds, and for a list or watch across all namespaces), the object's
	// name ("" for lists, watches and creates by generateName) and the
	// selectors of a list or watch.
	Namespace     string
	Name          string
	LabelSelector string
	FieldSelector string
	User          *user.Info // nil until authentication ran
	// Impersonator is the authenticated user when the request acts as
	// User by impersonation (impersonate.go), else nil.
	Impersonator *user.Info
	// Object is the request message (a stream's first one): the object of
	// a create or update, the options of a get, list or watch. Read only.
	Object any
	Start  time.Time
	echo   bool // the client sent the id: send it back
}

// IsResource says whether the request is about a resource (not discovery,
// health or reflection).
func (ri *RequestInfo) IsResource() bool { return ri.Resource != "" }

// ResponseCode is the HTTP status Kubernetes would have answered the
// request with, err its result: 201 for a create that succeeded, else
// apierrors.HTTPStatusCode (200, 404, 409, 422, 429, 499...).
func (ri *RequestInfo) ResponseCode(err error) int {
	if err == nil && ri.Verb == "create" {
		return http.StatusCreated
	}
	return apierrors.HTTPStatusCode(err)
}

// Authenticator says who sent a request. An error (or a nil user) refuses
// it as Unauthenticated.
type Authenticator interface {
	Authenticate(ctx context.Context, ri *RequestInfo) (*user.Info, error)
}

// Limiter is fairness: Acquire waits for the request's turn to execute (or
// refuses it with TooManyRequests) and returns the release to call when it
// is done. Long-running requests (watches, logs) release once established.
type Limiter interface {
	Acquire(ctx context.Context, ri *RequestInfo) (release func(), err error)
}

// Authorizer allows a request or refuses it (a Forbidden error that names
// who was denied what).
type Authorizer interface {
	Authorize(ctx context.Context, ri *RequestInfo) error
}

// Auditor records a finished request: req is the request message as the
// client sent it (for a stream, the first one), resp the response (nil for
// streams), err its final status. RecordsRequests says whether it keeps
// request bodies: the chain then hands it a copy taken before the handler
// ran, as handlers default and complete the message they receive.
type Auditor interface {
	Audit(ri *RequestInfo, req, resp any, err error)
	RecordsRequests() bool
}

// publicMethod: health checks pass without authentication, as /healthz does
// in Kubernetes, so probes need no credentials.
func publicMethod(fullMethod string) bool {
	return strings.HasPrefix(fullMethod, "/grpc.health.v1.Health/")
}

type requestInfoKey struct{}

// RequestInfoFrom returns the request info the chain attached to ctx.
func RequestInfoFrom(ctx context.Context) (*RequestInfo, bool) {
	ri, ok := ctx.Value(requestInfoKey{}).(*RequestInfo)
	return ri, ok
}

// route maps a gRPC method to its resource and verb.
type route struct {
	group, version, resource, subresource string
	verb                                  string // the authorization verb: create, get, list...
	// metricVerb is the verb of apiserver_request_*, as Kubernetes'
	// (k8s.io/apiserver/pkg/endpoints/metrics) reports the REST call the
	// method stands for: POST, GET, LIST, PUT, DELETE, WATCH, CONNECT
	// (the log subresource). "" for non-resource methods.
	metricVerb string
	namespaced bool
}

// Routes knows every method of every resource service.
type Routes map[string]route

// Add records the methods of one resource service. The service's name
// ends in its version and kinds, "skiff.apps.v1beta1.Deployments".
func (rs Routes) Add(service, group, resource string, namespaced bool) {
	version := service[:max(strings.LastIndexByte(service, '.'), 0)]
	version = version[strings.LastIndexByte(version, '.')+1:]
	for method, r := range map[string]route{
		"Create":       {resource: resource, verb: "create", metricVerb: "POST"},
		"Get":          {resource: resource, verb: "get", metricVerb: "GET"},
		"List":         {resource: resource, verb: "list", metricVerb: "LIST"},
		"Update":       {resource: resource, verb: "update", metricVerb: "PUT"},
		"UpdateStatus": {resource: resource, subresource: "status", verb: "update", metricVerb: "PUT"},
		"Delete":       {resource: resource, verb: "delete", metricVerb: "DELETE"},
		"Watch":        {resource: resource, verb: "watch", metricVerb: "WATCH"},
		// The HTTP API's verbs that are no one method (Methods.Admit): a
		// PATCH (a get and an update) and a DELETECOLLECTION (a list and
		// deletes), each authorized once under its own verb, as Kubernetes'.
		"Patch":            {resource: resource, verb: "patch", metricVerb: "PATCH"},
		"PatchStatus":      {resource: resource, subresource: "status", verb: "patch", metricVerb: "PATCH"},
		"PatchScale":       {resource: resource, subresource: "scale", verb: "patch", metricVerb: "PATCH"},
		"PatchApproval":    {resource: resource, subresource: "approval", verb: "patch", metricVerb: "PATCH"},
		"DeleteCollection": {resource: resource, verb: "deletecollection", metricVerb: "DELETE"},
		"Bind":             {resource: resource, subresource: "binding", verb: "create", metricVerb: "POST"},
		"GetScale":         {resource: resource, subresource: "scale", verb: "get", metricVerb: "GET"},
		"UpdateScale":      {resource: resource, subresource: "scale", verb: "update", metricVerb: "PUT"},
		"Logs":             {resource: resource, subresource: "log", verb: "get", metricVerb: "CONNECT"},
		"CreateToken":      {resource: resource, subresource: "token", verb: "create", metricVerb: "POST"},
		"Evict":            {resource: resource, subresource: "eviction", verb: "create", metricVerb: "POST"},
		// Kubernetes' PUT (and PATCH, also authorized as update) of a pod's ephemeral containers.
		"UpdateEphemeralContainers": {resource: resource, subresource: "ephemeralcontainers", verb: "update", metricVerb: "PUT"},
		// Kubernetes' PUT of a CertificateSigningRequest's approval conditions.
		"UpdateApproval": {resource: resource, subresource: "approval", verb: "update", metricVerb: "PUT"},
		// The acting subresources, create on each as Kubernetes' POST.
		"Exec":        {resource: resource, subresource: "exec", verb: "create", metricVerb: "CONNECT"},
		"Attach":      {resource: resource, subresource: "attach", verb: "create", metricVerb: "CONNECT"},
		"PortForward": {resource: resource, subresource: "portforward", verb: "create", metricVerb: "CONNECT"},
	} {
		r.group, r.version, r.namespaced = group, version, namespaced
		rs["/"+service+"/"+method] = r
	}
}

func (rs Routes) info(fullMethod string) route {
	if r, ok := rs[fullMethod]; ok {
		return r
	}
	if r, ok := reviewRoutes[fullMethod]; ok {
		return r
	}
	// Discovery, health, reflection: name the service and method.
	svc, method, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	return route{resource: "", subresource: svc, verb: strings.ToLower(method)}
}

// Metrics of the request chain. apiserver_request_total and
// apiserver_request_duration_seconds have the labels of Kubernetes' (and
// its values), which kubernetes-mixin's dashboards, SLO rules and alerts
// query: verb, group, version, resource, subresource, scope, component,
// and the total's code, the HTTP status the request would have had
// (apierrors.HTTPStatusCode). A non-resource call (discovery, health,
// reflection) has its method as subresource, as Kubernetes has the path of
// /healthz; its verb is GET, or CONNECT for a stream.
type Metrics struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	longRunning *prometheus.GaugeVec
}

// requestLabels are Kubernetes' labels of apiserver_request_* (but for
// dry_run: dry runs are the client's).
var requestLabels = []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}

// requestBuckets are the latency buckets of requests (0.5 ms to 30 s), as
// the gRPC server's.
var requestBuckets = grpcmetrics.Buckets

// NewMetrics registers the request metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, API resource, scope, component, and HTTP response code.",
		}, append(requestLabels[:len(requestLabels):len(requestLabels)], "code")),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, API resource, scope and component (long-running requests, watches and logs, excluded).",
			Buckets: requestBuckets,
		}, requestLabels),
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

// Chain is the request chain every call passes: request info ->
// authentication -> fairness (Limiter) -> authorization -> strict fields of
// a write (decode.go) -> handler (whose registry runs admission); then
// metrics, audit, logs and the one mapping of errors to gRPC statuses. A
// request whose body does not decode is answered after authentication.
// A nil hook is off: without an Authenticator every request is
// user.UnsecuredInfo.
type Chain struct {
	Routes        Routes
	Metrics       *Metrics
	Log           *zap.Logger
	Authenticator Authenticator
	Limiter       Limiter
	Authorizer    Authorizer
	Auditor       Auditor
	// AccessLog writes an info line per finished request (accesslog.go).
	AccessLog bool

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

// subresourceKey carries AsSubresource's subresource.
type subresourceKey struct{}

// AsSubresource makes an in-process call of a resource's method stand for
// a request of its subresource sub: the HTTP API's GET of
// pods/NAME/status is the Get method, authorized, audited and counted as
// a get of pods/status, as Kubernetes does. A context value: only
// in-process callers set it, never a gRPC client.
func AsSubresource(ctx context.Context, sub string) context.Context {
	return context.WithValue(ctx, subresourceKey{}, sub)
}

func (c *Chain) begin(ctx context.Context, fullMethod string) (context.Context, *RequestInfo) {
	r := c.Routes.info(fullMethod)
	ri := &RequestInfo{Path: fullMethod, APIGroup: r.group, Resource: r.resource, Subresource: r.subresource, Verb: r.verb, Namespaced: r.namespaced, Start: time.Now()}
	if sub, ok := ctx.Value(subresourceKey{}).(string); ok && ri.Subresource == "" {
		ri.Subresource = sub
	}
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

// finish records a finished request. answered: a stream that answered
// (its header or a message) before it ended; the client ending it then is
// its normal end, a 200 as in Kubernetes (whose status is written when a
// watch starts).
func (c *Chain) finish(ri *RequestInfo, fullMethod string, start time.Time, err error, longRunning, answered bool) {
	code := status.Code(err)
	httpCode := ri.ResponseCode(err)
	if answered && code == codes.Canceled {
		httpCode = http.StatusOK
	}
	if c.AccessLog {
		c.accessLog(ri, code, httpCode, time.Since(start))
	}
	if c.Metrics != nil {
		st := c.stats(fullMethod, longRunning)
		scope := ri.scope()
		st.requests(c.Metrics, scope, httpCode).Inc()
		if !longRunning {
			st.duration(c.Metrics, scope).Observe(time.Since(start).Seconds())
		}
	}
	if code == codes.Internal || code == codes.Unknown {
		c.Log.Error("request failed", zap.String("request_id", ri.ID), zap.String("method", fullMethod), zap.Error(err))
	} else if ce := c.Log.Check(zap.DebugLevel, "request"); ce != nil {
		ce.Write(zap.String("request_id", ri.ID), zap.String("method", fullMethod),
			zap.String("code", code.String()), zap.Duration("took", time.Since(start)))
	}
}

// scope is the scope label of apiserver_request_*, as Kubernetes': resource
// for a named object and for a create, namespace for a list or watch in
// one namespace, cluster for one across namespaces or of a cluster-scoped
// kind, "" for a non-resource call.
func (ri *RequestInfo) scope() requestScope {
	switch {
	case !ri.IsResource():
		return scopeNone
	case ri.Name != "" || ri.Verb == "create":
		return scopeResource
	case ri.Namespace != "":
		return scopeNamespace
	default:
		return scopeCluster
	}
}

type requestScope uint8

const (
	scopeNone requestScope = iota
	scopeCluster
	scopeNamespace
	scopeResource
	numScopes
)

var scopeNames = [numScopes]string{"", "cluster", "namespace", "resource"}

// seriesCodes are the HTTP codes whose series a method keeps resolved;
// others (none the chain makes) are looked up on each request.
var seriesCodes = [...]int{200, 201, 400, 401, 403, 404, 405, 409, 410, 413, 422, 429, 499, 500, 503, 504}

func seriesCode(code int) int {
	for i, c := range seriesCodes {
		if c == code {
			return i
		}
	}
	return -1
}

// methodStats holds one method's metric series, resolved once per scope
// and code instead of hashing label values on every request.
type methodStats struct {
	labels    []string // requestLabels' values, scope ""
	durations [numScopes]atomic.Pointer[prometheus.Observer]
	requestsC [numScopes][len(seriesCodes)]atomic.Pointer[prometheus.Counter]
}

func (st *methodStats) values(scope requestScope) []string {
	l := slices.Clone(st.labels)
	l[5] = scopeNames[scope]
	return l
}

func (st *methodStats) requests(m *Metrics, scope requestScope, code int) prometheus.Counter {
	i := seriesCode(code)
	if i >= 0 {
		if p := st.requestsC[scope][i].Load(); p != nil {
			return *p
		}
	}
	c := m.requests.WithLabelValues(append(st.values(scope), strconv.Itoa(code))...)
	if i >= 0 {
		st.requestsC[scope][i].Store(&c)
	}
	return c
}

func (st *methodStats) duration(m *Metrics, scope requestScope) prometheus.Observer {
	if p := st.durations[scope].Load(); p != nil {
		return *p
	}
	o := m.duration.WithLabelValues(st.values(scope)...)
	st.durations[scope].Store(&o)
	return o
}

func (c *Chain) stats(fullMethod string, stream bool) *methodStats {
	if st, ok := c.byMethod.Load(fullMethod); ok {
		return st.(*methodStats)
	}
	r := c.Routes.info(fullMethod)
	verb, subresource := r.metricVerb, r.subresource
	if r.resource == "" { // a non-resource call, as RequestInfo.IsResource
		verb, subresource = "GET", fullMethod
		if stream {
			verb = "CONNECT"
		}
	}
	st := &methodStats{labels: []string{verb, r.group, r.version, r.resource, subresource, "", "apiserver"}}
	actual, _ := c.byMethod.LoadOrStore(fullMethod, st)
	return actual.(*methodStats)
}

// authenticate sets ri.User and puts it in ctx.
func (c *Chain) authenticate(ctx context.Context, ri *RequestInfo) (context.Context, error) {
	switch {
	case c.Authenticator == nil:
		ri.User = user.UnsecuredInfo
	case publicMethod(ri.Path):
		ri.User = &user.Info{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}, Authenticator: "anonymous"}
	default:
		u, err := c.Authenticator.Authenticate(ctx, ri)
		if err != nil {
			return ctx, err
		}
		if u == nil {
			return ctx, apierrors.NewUnauthorized("Unauthorized: the request has no credentials (a client certificate or a bearer token)")
		}
		ri.User = u
		if err := c.impersonate(ctx, ri); err != nil {
			return ctx, err
		}
	}
	return user.With(ctx, ri.User), nil
}

// admit runs fairness and authorization for a request whose message is
// known; it returns the release of the request's seat.
func (c *Chain) admit(ctx context.Context, ri *RequestInfo, msg any) (func(), error) {
	ri.attributes(msg)
	release := func() {}
	if c.Limiter != nil && !publicMethod(ri.Path) {
		r, err := c.Limiter.Acquire(ctx, ri)
		if err != nil {
			return release, err
		}
		release = r
	}
	if c.Authorizer != nil && !publicMethod(ri.Path) {
		if err := c.Authorizer.Authorize(ctx, ri); err != nil {
			release()
			return func() {}, err
		}
	}
	return release, nil
}

// DryRunHeader asks for a dry run of a write ("All", Kubernetes' only
// value): everything but storing it (registry.WithDryRun).
const DryRunHeader = "x-dry-run"

func dryRun(ctx context.Context) (context.Context, error) {
	vals := metadata.ValueFromIncomingContext(ctx, DryRunHeader)
	for _, v := range vals {
		if v != "All" {
			return ctx, apierrors.NewBadRequest(fmt.Sprintf("%s: unsupported value %q: supported values: \"All\"", DryRunHeader, v))
		}
	}
	if len(vals) > 0 {
		ctx = registry.WithDryRun(ctx)
	}
	return ctx, nil
}

// Unary is the chain for unary calls.
func (c *Chain) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, ri := c.begin(ctx, info.FullMethod)
	if ri.echo {
		_ = grpc.SetHeader(ctx, metadata.Pairs(RequestIDHeader, ri.ID))
	}
	sent := req
	if c.Auditor != nil && c.Auditor.RecordsRequests() {
		if m, ok := req.(proto.Message); ok {
			sent = proto.Clone(m)
		}
	}
	resp, err := c.serveUnary(ctx, ri, req, handler)
	err = toStatus(err)
	c.finish(ri, info.FullMethod, ri.Start, err, false, false)
	if c.Auditor != nil {
		c.Auditor.Audit(ri, sent, resp, err)
	}
	return resp, err
}

func (c *Chain) serveUnary(ctx context.Context, ri *RequestInfo, req any, handler grpc.UnaryHandler) (any, error) {
	ctx, err := c.authenticate(ctx, ri)
	if err != nil {
		return nil, err
	}
	if u, ok := req.(undecoded); ok {
		return nil, u.err
	}
	if ctx, err = dryRun(ctx); err != nil {
		return nil, err
	}
	release, err := c.admit(ctx, ri, req)
	if err != nil {
		return nil, err
	}
	defer holdUntilEnd(ctx, release)()
	if ri.writesObject() {
		if err := strictFields(req); err != nil {
			return nil, err
		}
	}
	return handler(ctx, req)
}

// wrappedStream runs admission of a stream on its first message (the
// request: list options, log options) and releases the stream's seat once
// the handler answers (its header or first message).
type wrappedStream struct {
	grpc.ServerStream
	ctx     context.Context
	chain   *Chain
	ri      *RequestInfo
	first   any // the first message, for audit
	release func()
	// answered: the handler sent its header or a message.
	answered bool
	// bidi: the client streams too (exec, port-forward): admission and
	// audit see the first request's options, never its data.
	bidi bool
}

// optionsOf is the options a bidi stream's first request carries (its
// "options" field: PodExecOptions, PodPortForwardOptions), or m itself.
func optionsOf(m any) any {
	pm, ok := m.(proto.Message)
	if !ok || pm == nil {
		return m
	}
	r := pm.ProtoReflect()
	fd := r.Descriptor().Fields().ByName("options")
	if !r.IsValid() || fd == nil || fd.Kind() != protoreflect.MessageKind || fd.IsList() {
		return m
	}
	return r.Get(fd).Message().Interface()
}

func (w *wrappedStream) Context() context.Context { return w.ctx }

func (w *wrappedStream) RecvMsg(m any) error {
	if err := recvRequest(w.ServerStream, m); err != nil {
		return err
	}
	if w.first != nil {
		return nil
	}
	w.first = m
	if w.bidi {
		w.first = optionsOf(m)
	}
	release, err := w.chain.admit(w.ctx, w.ri, w.first)
	if err != nil {
		return err
	}
	w.release = release
	return nil
}

func (w *wrappedStream) established() {
	if w.release != nil {
		w.release()
		w.release = nil
	}
}

func (w *wrappedStream) SendHeader(md metadata.MD) error {
	w.answered = true
	w.established()
	return w.ServerStream.SendHeader(md)
}

func (w *wrappedStream) SendMsg(m any) error {
	w.answered = true
	w.established()
	return w.ServerStream.SendMsg(m)
}

// Stream is the chain for streaming calls (watches, logs).
func (c *Chain) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, ri := c.begin(ss.Context(), info.FullMethod)
	if ri.echo {
		_ = ss.SetHeader(metadata.Pairs(RequestIDHeader, ri.ID))
	}
	if c.Metrics != nil {
		g := c.Metrics.longRunning.WithLabelValues(ri.Resource, ri.Verb)
		g.Inc()
		defer g.Dec()
	}
	ws := &wrappedStream{ServerStream: ss, chain: c, ri: ri, bidi: info.IsClientStream}
	ctx, err := c.authenticate(ctx, ri)
	if err == nil {
		ws.ctx = ctx
		err = handler(srv, ws)
		ws.established()
	}
	err = toStatus(err)
	c.finish(ri, info.FullMethod, ri.Start, err, true, ws.answered)
	if c.Auditor != nil {
		c.Auditor.Audit(ri, ws.first, nil, err)
	}
	return err
}
