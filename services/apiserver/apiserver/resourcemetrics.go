package apiserver

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	metricsv1beta1 "skiff.dev/proto/metrics/v1beta1"
	nodev1 "skiff.dev/proto/node/v1"
	"skiff.dev/services/apiserver/registry"
)

// The resource metrics API (metrics.k8s.io/v1beta1: skiff.metrics.v1beta1
// Pods and Nodes), which metrics-server serves in Kubernetes and kubectl
// top reads. Skiff's apiserver serves it itself: each call asks the node
// agents concerned for their current usage (NodeAgent.Usage, over the
// connections of the log proxy) and stores nothing. The request chain
// authorizes get and list on pods.metrics.k8s.io and nodes.metrics.k8s.io.

const (
	metricsGroup = "metrics.k8s.io"
	// metricsAgentTimeout bounds one agent's answer, so that a node that
	// does not answer delays a List by at most this.
	metricsAgentTimeout = 10 * time.Second
	// metricsFanOut bounds the agents asked at once.
	metricsFanOut = 32
)

// resourceMetrics serves both services.
type resourceMetrics struct {
	pods   *registry.Registry[*corev1.Pod]
	nodes  *registry.Registry[*corev1.Node]
	agents *logProxy // the connections to the agents
	log    *zap.Logger
}

// installMetricsAPI registers the metrics.k8s.io services and their routes.
func (s *Server) installMetricsAPI(g grpc.ServiceRegistrar) {
	m := &resourceMetrics{pods: s.logs.pods, nodes: s.logs.nodes, agents: s.logs, log: s.log.Named("metrics.k8s.io")}
	metricsv1beta1.RegisterPodsServer(g, podMetricsServer{m})
	metricsv1beta1.RegisterNodesServer(g, nodeMetricsServer{m})
	s.routes.Add("skiff.metrics.v1beta1.Pods", metricsGroup, "pods", true)
	s.routes.Add("skiff.metrics.v1beta1.Nodes", metricsGroup, "nodes", false)
}

// usage asks a node's agent for its usage.
func (m *resourceMetrics) usage(ctx context.Context, node *corev1.Node, req *nodev1.UsageRequest) (*nodev1.UsageResponse, error) {
	name := node.GetMetadata().GetName()
	addr, err := agentAddress(node)
	if err != nil {
		return nil, err
	}
	conn, err := m.agents.conn(name, addr)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("node %q: %v", name, err))
	}
	ctx, cancel := context.WithTimeout(ctx, metricsAgentTimeout)
	defer cancel()
	out, err := nodev1.NewNodeAgentClient(conn).Usage(ctx, req)
	if err != nil {
		return nil, agentError(name, err)
	}
	return out, nil
}

// fanOut asks each node's agent for req, metricsFanOut at a time, and returns the
// answers by node name and the errors of those that failed.
func (m *resourceMetrics) fanOut(ctx context.Context, nodes []*corev1.Node, req *nodev1.UsageRequest) (map[string]*nodev1.UsageResponse, map[string]error) {
	var mu sync.Mutex
	answers, failed := map[string]*nodev1.UsageResponse{}, map[string]error{}
	sem := make(chan struct{}, metricsFanOut)
	var wg sync.WaitGroup
	for _, n := range nodes {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out, err := m.usage(ctx, n, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed[n.GetMetadata().GetName()] = err
				return
			}
			answers[n.GetMetadata().GetName()] = out
		})
	}
	wg.Wait()
	for name, err := range failed {
		m.log.Warn("no usage from a node agent", zap.String("node", name), zap.Error(err))
	}
	return answers, failed
}

// allFailed is the error of a List whose every node failed: one of
// theirs, naming how many.
func allFailed(failed map[string]error) error {
	for name, err := range failed {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("no node agent answered (%d asked); node %q: %v", len(failed), name, err))
	}
	return nil
}

// usageList is a resource list of usage: "cpu" in nanocores, "memory" in
// bytes (as metrics-server writes them: "12345678n", "65536Ki").
func usageList(u *nodev1.ResourceUsage) map[string]string {
	mem, err := quantity.NewQuantity(int64(min(u.GetWorkingSetBytes(), quantity.MaxMilli/1000)), quantity.BinarySI)
	if err != nil { // cannot happen: bounded above
		mem = quantity.Quantity{}
	}
	return map[string]string{"cpu": strconv.FormatUint(u.GetNanoCores(), 10) + "n", "memory": mem.String()}
}

// metaOf is a metrics object's metadata: its object's identity and labels.
func metaOf(m *metav1.ObjectMeta) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), Labels: m.GetLabels(), CreationTimestamp: m.GetCreationTimestamp()}
}

// checkListOptions refuses what a metrics List cannot do.
func checkListOptions(o *metav1.ListOptions) error {
	if o.GetLimit() != 0 || o.GetContinue() != "" {
		return apierrors.NewBadRequest("limit and continue: metrics lists are not paged")
	}
	return nil
}

// consistentList is the list of the pods or nodes a metrics List reads:
// in namespace (nodes: ""), with o's selectors, consistent (the watch cache once it has
// what etcd has now, as a Get reads etcd), so that a pod or node created
// a moment before is there: the usage is asked live, and a list from a
// cache that lagged (under load) left out a pod that had just started.
func consistentList(namespace string, o *metav1.ListOptions) *metav1.ListOptions {
	return &metav1.ListOptions{Namespace: namespace, LabelSelector: o.GetLabelSelector(), FieldSelector: o.GetFieldSelector()}
}

// ------------------------------------------------------------------ nodes

type nodeMetricsServer struct{ m *resourceMetrics }

func nodeMetrics(n *corev1.Node, u *nodev1.UsageResponse) *metricsv1beta1.NodeMetrics {
	return &metricsv1beta1.NodeMetrics{
		ApiVersion: metricsGroup + "/v1beta1", Kind: "NodeMetrics", Metadata: metaOf(n.GetMetadata()),
		Timestamp: u.GetTimestamp(), Window: u.GetWindow(), Usage: usageList(u.GetNode()),
	}
}

// Get implements metricsv1beta1.NodesServer.
func (s nodeMetricsServer) Get(ctx context.Context, req *metav1.GetRequest) (*metricsv1beta1.NodeMetrics, error) {
	n, err := s.m.nodes.Get(ctx, "", req.GetName())
	if err != nil {
		return nil, err
	}
	u, err := s.m.usage(ctx, n, &nodev1.UsageRequest{NodeOnly: true})
	if err != nil {
		return nil, err
	}
	return nodeMetrics(n, u), nil
}

// List implements metricsv1beta1.NodesServer.
func (s nodeMetricsServer) List(ctx context.Context, o *metav1.ListOptions) (*metricsv1beta1.NodeMetricsList, error) {
	if err := checkListOptions(o); err != nil {
		return nil, err
	}
	res, err := s.m.nodes.List(ctx, consistentList("", o))
	if err != nil {
		return nil, err
	}
	nodes, err := res.Objects()
	if err != nil {
		return nil, err
	}
	answers, failed := s.m.fanOut(ctx, nodes, &nodev1.UsageRequest{NodeOnly: true})
	if len(answers) == 0 && len(failed) > 0 {
		return nil, allFailed(failed)
	}
	out := &metricsv1beta1.NodeMetricsList{ApiVersion: metricsGroup + "/v1beta1", Kind: "NodeMetricsList", Metadata: &metav1.ListMeta{}}
	for _, n := range nodes {
		if u, ok := answers[n.GetMetadata().GetName()]; ok {
			out.Items = append(out.Items, nodeMetrics(n, u))
		}
	}
	return out, nil
}

// ------------------------------------------------------------------ pods

type podMetricsServer struct{ m *resourceMetrics }

func podMetrics(p *corev1.Pod, u *nodev1.PodUsage) *metricsv1beta1.PodMetrics {
	out := &metricsv1beta1.PodMetrics{
		ApiVersion: metricsGroup + "/v1beta1", Kind: "PodMetrics", Metadata: metaOf(p.GetMetadata()),
		Timestamp: u.GetTimestamp(), Window: u.GetWindow(),
	}
	for _, c := range u.GetContainers() {
		out.Containers = append(out.Containers, &metricsv1beta1.ContainerMetrics{Name: c.GetName(), Usage: usageList(c.GetUsage())})
	}
	return out
}

// Get implements metricsv1beta1.PodsServer.
func (s podMetricsServer) Get(ctx context.Context, req *metav1.GetRequest) (*metricsv1beta1.PodMetrics, error) {
	p, err := s.m.pods.Get(ctx, req.GetNamespace(), req.GetName())
	if err != nil {
		return nil, err
	}
	notFound := apierrors.NewNotFound("pods."+metricsGroup, p.GetMetadata().GetNamespace()+"/"+p.GetMetadata().GetName())
	nodeName := p.GetSpec().GetNodeName()
	if nodeName == "" {
		return nil, notFound
	}
	n, err := s.m.nodes.Get(ctx, "", nodeName)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("pod %s/%s: its node %q: %v", p.GetMetadata().GetNamespace(), p.GetMetadata().GetName(), nodeName, err))
	}
	u, err := s.m.usage(ctx, n, &nodev1.UsageRequest{Namespace: p.GetMetadata().GetNamespace(), Name: p.GetMetadata().GetName()})
	if err != nil {
		return nil, err
	}
	for _, pu := range u.GetPods() {
		if pu.GetUid() == p.GetMetadata().GetUid() {
			return podMetrics(p, pu), nil
		}
	}
	return nil, notFound
}

// List implements metricsv1beta1.PodsServer: the pods of the namespace
// (all: empty) that match the selectors and are bound to a node, whose
// node's agent answered and reports a running container.
func (s podMetricsServer) List(ctx context.Context, o *metav1.ListOptions) (*metricsv1beta1.PodMetricsList, error) {
	if err := checkListOptions(o); err != nil {
		return nil, err
	}
	res, err := s.m.pods.List(ctx, consistentList(o.GetNamespace(), o))
	if err != nil {
		return nil, err
	}
	pods, err := res.Objects()
	if err != nil {
		return nil, err
	}
	byNode := map[string]bool{}
	for _, p := range pods {
		if n := p.GetSpec().GetNodeName(); n != "" {
			byNode[n] = true
		}
	}
	var nodes []*corev1.Node
	failed := map[string]error{}
	for name := range byNode {
		n, err := s.m.nodes.Get(ctx, "", name)
		if err != nil {
			failed[name] = err
			continue
		}
		nodes = append(nodes, n)
	}
	answers, unanswered := s.m.fanOut(ctx, nodes, &nodev1.UsageRequest{Namespace: o.GetNamespace()})
	for name, err := range unanswered {
		failed[name] = err
	}
	if len(answers) == 0 && len(failed) > 0 {
		return nil, allFailed(failed)
	}
	byUID := map[string]*nodev1.PodUsage{}
	for _, u := range answers {
		for _, pu := range u.GetPods() {
			byUID[pu.GetUid()] = pu
		}
	}
	out := &metricsv1beta1.PodMetricsList{ApiVersion: metricsGroup + "/v1beta1", Kind: "PodMetricsList", Metadata: &metav1.ListMeta{}}
	for _, p := range pods {
		if pu, ok := byUID[p.GetMetadata().GetUid()]; ok {
			out.Items = append(out.Items, podMetrics(p, pu))
		}
	}
	return out, nil
}
