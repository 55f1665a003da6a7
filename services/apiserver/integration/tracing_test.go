package integration

import (
	"net"
	"testing"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/client"
	"skiff.dev/internal/tracing"
	"skiff.dev/internal/tracing/tracingtest"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	nodev1 "skiff.dev/proto/node/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
)

// TestTracingFromClientThroughEtcdAndNodeAgent: a client with tracing on
// (skiffctl's default rate: every trace) creates a ConfigMap and reads a
// pod's logs from an apiserver with tracing on (the daemons' default rate:
// only what callers sampled). One trace each: the client's span, the
// apiserver's span as its child, and under that the apiserver's own calls:
// to etcd (etcdserverpb.KV/Txn) and to the node agent (NodeAgent/Logs,
// whose server span is the agent's).
func TestTracingFromClientThroughEtcdAndNodeAgent(t *testing.T) {
	col := tracingtest.Start(t)
	ctx := testContext(t)
	newTracing := func(service string, rate int) *tracing.Tracing {
		tr, err := tracing.New(ctx, tracing.Options{Endpoint: col.Endpoint(), SamplingRatePerMillion: rate}, service, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	// The node agent: a fake NodeAgent service with tracing on.
	agentTr := newTracing("skiff-node-agent", 0)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(agentTr.ServerOptions()...)
	nodev1.RegisterNodeAgentServer(g, fakeAgent{})
	go g.Serve(l)
	t.Cleanup(g.Stop)

	s := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Tracing = tracing.Options{Endpoint: col.Endpoint()}
	}))
	node, err := client.Nodes(s.Conn).Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n1"}})
	if err != nil {
		t.Fatal(err)
	}
	node.Status = &corev1.NodeStatus{
		Addresses:       []*corev1.NodeAddress{{Type: "InternalIP", Address: "127.0.0.1"}},
		DaemonEndpoints: &corev1.NodeDaemonEndpoints{KubeletEndpoint: &corev1.DaemonEndpoint{Port: int32(l.Addr().(*net.TCPAddr).Port)}},
	}
	if _, err := client.Nodes(s.Conn).UpdateStatus(ctx, node); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: &corev1.PodSpec{NodeName: "n1", Containers: []*corev1.Container{{Name: "web", Image: "demo"}}}}
	if _, err := client.Pods(s.Conn).Create(ctx, pod); err != nil {
		t.Fatal(err)
	}

	ctlTr := newTracing("skiffctl", tracing.MaxSamplingRatePerMillion)
	conn, err := client.Dial(client.Config{Server: s.Addr(), Insecure: true}, ctlTr.DialOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := client.ConfigMaps(conn).Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "traced"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := readLogs(t, corev1.NewPodsClient(conn), &corev1.PodLogOptions{Namespace: "default", Name: "web"}); err != nil {
		t.Fatal(err)
	}
	// Each program sends what its batcher holds when it stops.
	if err := ctlTr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	g.Stop()
	if err := agentTr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	const wait = 10 * time.Second
	// skiffctl -> apiserver -> etcd.
	create := col.WaitFor(t, "skiffctl", "skiff.core.v1.ConfigMaps/Create", wait)
	served := col.WaitFor(t, "skiff-apiserver", "skiff.core.v1.ConfigMaps/Create", wait)
	if served.TraceID() != create.TraceID() || served.ParentSpanID() != create.SpanID() {
		t.Errorf("the apiserver's Create span (trace %s, parent %s) is not the child of skiffctl's (trace %s, span %s)",
			served.TraceID(), served.ParentSpanID(), create.TraceID(), create.SpanID())
	}
	if !hasChild(col, served, "skiff-apiserver", "etcdserverpb.KV/Txn") {
		t.Errorf("no etcdserverpb.KV/Txn span under the apiserver's Create span; spans: %v", spanNames(col))
	}
	// skiffctl -> apiserver -> node agent.
	logs := col.WaitFor(t, "skiffctl", "skiff.core.v1.Pods/Logs", wait)
	proxied := col.WaitFor(t, "skiff-apiserver", "skiff.core.v1.Pods/Logs", wait)
	agent := col.WaitFor(t, "skiff-node-agent", "skiff.node.v1.NodeAgent/Logs", wait)
	if proxied.ParentSpanID() != logs.SpanID() {
		t.Errorf("the apiserver's Logs span's parent is %s, want skiffctl's %s", proxied.ParentSpanID(), logs.SpanID())
	}
	if agent.TraceID() != logs.TraceID() {
		t.Errorf("the node agent's Logs span is in trace %s, want skiffctl's %s", agent.TraceID(), logs.TraceID())
	}
	if !hasChild(col, proxied, "skiff-apiserver", "skiff.node.v1.NodeAgent/Logs") {
		t.Errorf("no NodeAgent/Logs client span under the apiserver's Logs span; spans: %v", spanNames(col))
	}
}

// hasChild says whether the collector has a span of service named name
// whose parent is parent.
func hasChild(col *tracingtest.Collector, parent tracingtest.Span, service, name string) bool {
	for _, s := range col.Spans() {
		if s.Service == service && s.GetName() == name && s.TraceID() == parent.TraceID() && s.ParentSpanID() == parent.SpanID() {
			return true
		}
	}
	return false
}

func spanNames(col *tracingtest.Collector) []string {
	var out []string
	for _, s := range col.Spans() {
		out = append(out, s.Service+": "+s.GetName()+" trace "+s.TraceID()[:8]+" span "+s.SpanID()[:8]+" parent "+s.ParentSpanID())
	}
	return out
}
