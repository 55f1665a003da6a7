package integration

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	metricsv1beta1 "skiff.dev/proto/metrics/v1beta1"
	nodev1 "skiff.dev/proto/node/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// usageAgent is a node agent's NodeAgent service answering Usage with
// fixed figures for the pods it is given (by uid).
type usageAgent struct {
	nodev1.UnimplementedNodeAgentServer
	node  uint64                    // the node's nanocores
	pods  map[string]*corev1.Pod    // by uid
	asked chan *nodev1.UsageRequest // every request, when not nil
}

var sampled = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func (a *usageAgent) Usage(_ context.Context, req *nodev1.UsageRequest) (*nodev1.UsageResponse, error) {
	if a.asked != nil {
		a.asked <- req
	}
	out := &nodev1.UsageResponse{Timestamp: timestamppb.New(sampled), Window: durationpb.New(15 * time.Second),
		Node: &nodev1.ResourceUsage{NanoCores: a.node, WorkingSetBytes: 1 << 30}}
	if req.GetNodeOnly() {
		return out, nil
	}
	for uid, p := range a.pods {
		m := p.GetMetadata()
		if req.GetNamespace() != "" && m.GetNamespace() != req.GetNamespace() {
			continue
		}
		out.Pods = append(out.Pods, &nodev1.PodUsage{Namespace: m.GetNamespace(), Name: m.GetName(), Uid: uid,
			Timestamp: timestamppb.New(sampled), Window: durationpb.New(15 * time.Second),
			Containers: []*nodev1.ContainerUsage{{Name: "app", Usage: &nodev1.ResourceUsage{NanoCores: 250_000_000, WorkingSetBytes: 64 << 20}}}})
	}
	return out, nil
}

func serveAgent(t *testing.T, a *usageAgent) int32 {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	nodev1.RegisterNodeAgentServer(g, a)
	go g.Serve(l)
	t.Cleanup(g.Stop)
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// closedPort is a port nothing listens on.
func closedPort(t *testing.T) int32 {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := int32(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	return port
}

// metricsCluster makes nodes served by agents (port 0: no endpoint) and
// pods bound to them.
type metricsCluster struct {
	t     *testing.T
	s     *apiservertest.Server
	nodes client.Resource[*corev1.Node, *corev1.NodeList]
}

func (c *metricsCluster) node(name string, port int32) {
	c.t.Helper()
	ctx := testContext(c.t)
	if _, err := c.nodes.Create(ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": name[:1]}}, Status: &corev1.NodeStatus{
		Addresses:       []*corev1.NodeAddress{{Type: "InternalIP", Address: "127.0.0.1"}},
		DaemonEndpoints: &corev1.NodeDaemonEndpoints{KubeletEndpoint: &corev1.DaemonEndpoint{Port: port}},
	}}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *metricsCluster) pod(ns, name, node string, agent *usageAgent) {
	c.t.Helper()
	p, err := client.Pods(c.s.Conn).Create(testContext(c.t), &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec:     &corev1.PodSpec{NodeName: node, Containers: []*corev1.Container{{Name: "app", Image: "demo"}}}})
	if err != nil {
		c.t.Fatal(err)
	}
	if agent != nil {
		agent.pods[p.GetMetadata().GetUid()] = p
	}
}

// The apiserver serves metrics.k8s.io by asking the agents of the nodes
// concerned: a List leaves out the pods and nodes whose agent does not
// answer (or that run nothing), a Get says why it has nothing.
func TestResourceMetricsFanOutToTheNodeAgents(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	createNamespaces(t, s, "team-a", "team-b")
	a1 := &usageAgent{node: 500_000_000, pods: map[string]*corev1.Pod{}, asked: make(chan *nodev1.UsageRequest, 100)}
	a2 := &usageAgent{node: 1_500_000_000, pods: map[string]*corev1.Pod{}}
	c := &metricsCluster{t: t, s: s, nodes: *client.Nodes(s.Conn)}
	c.node("a-1", serveAgent(t, a1))
	c.node("b-2", serveAgent(t, a2))
	c.node("down", closedPort(t))
	c.node("silent", 0)
	c.pod("team-a", "web", "a-1", a1)
	c.pod("team-a", "db", "b-2", a2)
	c.pod("team-a", "lost", "down", nil)
	c.pod("team-a", "pending", "", nil)
	c.pod("team-a", "idle", "a-1", nil) // runs nothing the agent reports
	c.pod("team-b", "api", "a-1", a1)
	c.pod("team-b", "stranded", "silent", nil)

	pods := metricsv1beta1.NewPodsClient(s.Conn)
	list, err := pods.List(ctx, &metav1.ListOptions{Namespace: "team-a"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, pm := range list.GetItems() {
		names = append(names, pm.GetMetadata().GetNamespace()+"/"+pm.GetMetadata().GetName())
	}
	if want := []string{"team-a/db", "team-a/web"}; !slices.Equal(names, want) {
		t.Errorf("PodMetrics of team-a: %v, want %v (lost: its node is down; pending: no node; idle: nothing running)", names, want)
	}
	if len(list.GetItems()) > 0 {
		web := list.GetItems()[1]
		cm := web.GetContainers()
		if web.GetKind() != "PodMetrics" || web.GetApiVersion() != "metrics.k8s.io/v1beta1" || web.GetMetadata().GetLabels()["app"] != "web" ||
			!web.GetTimestamp().AsTime().Equal(sampled) || web.GetWindow().AsDuration() != 15*time.Second ||
			len(cm) != 1 || cm[0].GetName() != "app" || cm[0].GetUsage()["cpu"] != "250000000n" || cm[0].GetUsage()["memory"] != "64Mi" {
			t.Errorf("PodMetrics of web: %v", web)
		}
	}
	// A namespace's List asks for that namespace only.
	for len(a1.asked) > 0 {
		if r := <-a1.asked; r.GetNamespace() != "team-a" || r.GetNodeOnly() {
			t.Errorf("agent of a-1 asked %v, want the pods of team-a", r)
		}
	}

	all, err := pods.List(ctx, &metav1.ListOptions{LabelSelector: "app in (api,web)"})
	if err != nil || len(all.GetItems()) != 2 {
		t.Errorf("PodMetrics of every namespace with app in (api,web): %v, %v; want api and web", all, err)
	}
	if one, err := pods.Get(ctx, &metav1.GetRequest{Namespace: "team-b", Name: "api"}); err != nil || one.GetMetadata().GetName() != "api" {
		t.Errorf("Get team-b/api: %v, %v", one, err)
	}

	nodes := metricsv1beta1.NewNodesClient(s.Conn)
	nl, err := nodes.List(ctx, &metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, nm := range nl.GetItems() {
		names = append(names, nm.GetMetadata().GetName()+" "+nm.GetUsage()["cpu"]+" "+nm.GetUsage()["memory"])
	}
	if want := []string{"a-1 500000000n 1Gi", "b-2 1500000000n 1Gi"}; !slices.Equal(names, want) {
		t.Errorf("NodeMetrics: %v, want %v (down and silent do not answer)", names, want)
	}
	if sel, err := nodes.List(ctx, &metav1.ListOptions{LabelSelector: "zone=b"}); err != nil || len(sel.GetItems()) != 1 || sel.GetItems()[0].GetMetadata().GetName() != "b-2" {
		t.Errorf("NodeMetrics zone=b: %v, %v", sel, err)
	}

	errCases := []struct {
		name   string
		call   func() error
		reason apierrors.Reason
		msg    string
	}{
		{"a pod on no node", func() error {
			_, err := pods.Get(ctx, &metav1.GetRequest{Namespace: "team-a", Name: "pending"})
			return err
		}, apierrors.ReasonNotFound, `pods.metrics.k8s.io "team-a/pending" not found`},
		{"a pod running nothing", func() error {
			_, err := pods.Get(ctx, &metav1.GetRequest{Namespace: "team-a", Name: "idle"})
			return err
		}, apierrors.ReasonNotFound, `pods.metrics.k8s.io "team-a/idle" not found`},
		{"no such pod", func() error {
			_, err := pods.Get(ctx, &metav1.GetRequest{Namespace: "team-a", Name: "nope"})
			return err
		}, apierrors.ReasonNotFound, `pods "nope" not found`},
		{"a pod whose agent is down", func() error {
			_, err := pods.Get(ctx, &metav1.GetRequest{Namespace: "team-a", Name: "lost"})
			return err
		}, apierrors.ReasonServiceUnavailable, `node "down" agent`},
		{"a namespace whose every node fails", func() error {
			_, err := pods.List(ctx, &metav1.ListOptions{Namespace: "team-b", LabelSelector: "app=stranded"})
			return err
		}, apierrors.ReasonServiceUnavailable, `no node agent answered (1 asked); node "silent"`},
		{"a node without an agent endpoint", func() error {
			_, err := nodes.Get(ctx, &metav1.GetRequest{Name: "silent"})
			return err
		}, apierrors.ReasonServiceUnavailable, `node "silent" advertises no agent endpoint`},
		{"no such node", func() error {
			_, err := nodes.Get(ctx, &metav1.GetRequest{Name: "nope"})
			return err
		}, apierrors.ReasonNotFound, `nodes "nope" not found`},
		{"a paged list", func() error {
			_, err := nodes.List(ctx, &metav1.ListOptions{Limit: 1})
			return err
		}, apierrors.ReasonBadRequest, "metrics lists are not paged"},
	}
	for _, tc := range errCases {
		err := apierrors.FromError(tc.call())
		if apierrors.ReasonForError(err) != tc.reason || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v (reason %q), want reason %s with %q", tc.name, err, apierrors.ReasonForError(err), tc.reason, tc.msg)
		}
	}
}

// Authorization is Kubernetes': get and list on pods.metrics.k8s.io (a
// namespaced resource) and nodes.metrics.k8s.io; the bootstrap
// system:aggregated-metrics-reader gives them to view (and so edit and
// admin).
func TestResourceMetricsAuthorization(t *testing.T) {
	s := startAuthorized(t)
	ctx := testContext(t)
	createNamespaces(t, s, "team-a", "team-b")
	mustCreate(t, client.RoleBindings(s.Conn).Create, &rbacv1.RoleBinding{Metadata: objMeta("team-a", "viewer"),
		RoleRef: &rbacv1.RoleRef{ApiGroup: rbacGroup, Kind: "ClusterRole", Name: "view"}, Subjects: []*rbacv1.Subject{subjectUser("viewer")}})
	viewer := metricsv1beta1.NewPodsClient(s.ConnAs(t, "viewer"))
	eventually(t, "view lets viewer list team-a's pod metrics", func() error {
		_, err := viewer.List(ctx, &metav1.ListOptions{Namespace: "team-a"})
		return err
	})
	_, err := viewer.List(ctx, &metav1.ListOptions{Namespace: "team-b"})
	denied(t, "viewer lists team-b's pod metrics", err, `User "viewer" cannot list resource "pods" in API group "metrics.k8s.io" in the namespace "team-b"`)
	_, err = metricsv1beta1.NewNodesClient(s.ConnAs(t, "viewer")).List(ctx, &metav1.ListOptions{})
	denied(t, "viewer lists node metrics (a RoleBinding grants no cluster-scoped resource)", err, `User "viewer" cannot list resource "nodes" in API group "metrics.k8s.io"`)
	_, err = metricsv1beta1.NewPodsClient(s.ConnAs(t, "nobody")).Get(ctx, &metav1.GetRequest{Namespace: "team-a", Name: "web"})
	denied(t, "a user without a role gets pod metrics", err, `User "nobody" cannot get resource "pods" in API group "metrics.k8s.io"`)
}
