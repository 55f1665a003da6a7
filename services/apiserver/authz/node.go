package authz

import (
	"context"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/fields"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/server"
)

// NodeLeaseNamespace holds the node agents' Leases, one per node, named
// after it (services/node-agent/agent.NodeLeaseNamespace).
const NodeLeaseNamespace = "kube-node-lease"

// The node authorizer gives a node agent exactly what services/node-agent
// calls, and nothing about other nodes' workloads:
//
//	nodes          get, list, watch: all (routes need every node's podCIDR
//	               and addresses); create, update, update status, delete:
//	               its own Node only
//	leases         get, create, update, delete of kube-node-lease/<node>
//	pods           list, watch: only with the field selector
//	               spec.nodeName=<node>; get, delete, update status: only of
//	               pods bound to it
//	configmaps     get: only those a pod bound to it uses (volumes, env,
//	               envFrom)
//	events         create, update, patch, get (the event sink re-reads an
//	               event after a conflict): anywhere
//	services,      get, list, watch: all (the agent's service proxy and
//	endpointslices DNS server follow every one, as kube-proxy does)
//
// Anything else a node asks is not its business: no opinion, and RBAC
// (which grants nodes nothing by default) decides. Users that are not
// nodes get no opinion at all.
//
// Which pods are bound to which node comes from an informer of the pods on
// the loopback connection that keeps only each pod's key, node and the
// ConfigMaps it uses. The informer may lag the node's own watch by a few
// milliseconds (a new pod, just bound): when it does not show the pod
// bound to the node, the authorizer reads the pod (consistently) before
// refusing, so the agent never sees a spurious denial.
type nodeAuthorizer struct {
	pods       *informer.Informer[*corev1.Pod]
	read       PodReader
	fallbacks  prometheus.Counter
	configMaps configMapUses
}

// PodReader reads pods consistently (etcd, not a cache): the node
// authorizer's check when its informer does not show a pod bound to the
// asking node.
type PodReader interface {
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	ListPods(ctx context.Context, o *metav1.ListOptions) ([]*corev1.Pod, error)
}

// PodsFromClient reads pods through a connection (tests; the apiserver
// reads its registry directly).
func PodsFromClient(conn grpc.ClientConnInterface) PodReader { return clientPods{client.Pods(conn)} }

type clientPods struct {
	r *client.Resource[*corev1.Pod, *corev1.PodList]
}

func (c clientPods) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return c.r.Get(ctx, namespace, name)
}

func (c clientPods) ListPods(ctx context.Context, o *metav1.ListOptions) ([]*corev1.Pod, error) {
	l, err := c.r.List(ctx, o)
	return l.GetItems(), err
}

// boundPods selects the pods bound to a node, the only ones a node's
// requests can be about: a pod enters the node authorizer's view (ADDED)
// when it is bound, and the pods a ReplicaSet creates by the thousand
// cost it nothing until then.
const boundPods = "spec.nodeName!="

// newNodeAuthorizer reads pods from src (the loopback's Pods).
func newNodeAuthorizer(src informer.Source[*corev1.Pod], read PodReader, m *metrics, log *zap.Logger) *nodeAuthorizer {
	n := &nodeAuthorizer{
		pods:       informer.New[*corev1.Pod](slimPods{src}, informer.Options{Logger: log, ListOptions: &metav1.ListOptions{FieldSelector: boundPods}}),
		read:       read,
		fallbacks:  m.nodeFallbacks,
		configMaps: configMapUses{byPod: map[string][]configMapUse{}, count: map[configMapUse]int{}},
	}
	n.pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd:    func(p *corev1.Pod) { n.configMaps.set(informer.Key(p), usesOf(p)) },
		OnUpdate: func(_, p *corev1.Pod) { n.configMaps.set(informer.Key(p), usesOf(p)) },
		OnDelete: func(p *corev1.Pod) { n.configMaps.set(informer.Key(p), nil) },
	})
	return n
}

// configMapUses counts, for each node, namespace and ConfigMap, the pods
// bound to the node that use the ConfigMap: a node's read of a ConfigMap
// is one map lookup.
type configMapUses struct {
	mu    sync.RWMutex
	byPod map[string][]configMapUse // pod key -> what it uses, as last counted
	count map[configMapUse]int
}

type configMapUse struct{ node, namespace, name string }

// usesOf is what a (slim) pod bound to a node uses.
func usesOf(p *corev1.Pod) []configMapUse {
	node := p.GetSpec().GetNodeName()
	if node == "" {
		return nil
	}
	var out []configMapUse
	for _, v := range p.GetSpec().GetVolumes() {
		out = append(out, configMapUse{node, p.GetMetadata().GetNamespace(), v.GetConfigMap().GetName()})
	}
	return out
}

// set replaces what the pod at key uses (nil: the pod is gone).
func (c *configMapUses) set(key string, uses []configMapUse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range c.byPod[key] {
		if c.count[u]--; c.count[u] <= 0 {
			delete(c.count, u)
		}
	}
	for _, u := range uses {
		c.count[u]++
	}
	if uses == nil {
		delete(c.byPod, key)
	} else {
		c.byPod[key] = uses
	}
}

func (c *configMapUses) used(u configMapUse) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.count[u] > 0
}

func (n *nodeAuthorizer) decide(ctx context.Context, ri *server.RequestInfo) (Decision, string, error) {
	node := ri.User.NodeName()
	if node == "" || !ri.IsResource() {
		return NoOpinion, "", nil
	}
	core := ri.APIGroup == ""
	switch {
	case core && ri.Resource == "nodes":
		if decideNode(node, ri) == Allow {
			return Allow, "", nil
		}
		return NoOpinion, fmt.Sprintf("node %q can only create, change and delete its own Node", node), nil
	case ri.APIGroup == "coordination.k8s.io" && ri.Resource == "leases":
		if decideLease(node, ri) == Allow {
			return Allow, "", nil
		}
		return NoOpinion, fmt.Sprintf("node %q can only use its own Lease %s/%s", node, NodeLeaseNamespace, node), nil
	case core && ri.Resource == "events":
		switch ri.Verb {
		case "create", "update", "patch", "get":
			return Allow, "", nil
		}
	case core && ri.Resource == "pods":
		return n.decidePod(ctx, node, ri)
	case core && ri.Resource == "configmaps":
		return n.decideConfigMap(ctx, node, ri)
	case core && ri.Resource == "services", ri.APIGroup == "discovery.k8s.io" && ri.Resource == "endpointslices":
		switch ri.Verb {
		case "get", "list", "watch":
			return Allow, "", nil
		}
	}
	return NoOpinion, "", nil
}

// decideNode: every node may read every Node (the agent's routes need the
// others' podCIDRs and addresses); it writes only its own.
func decideNode(node string, ri *server.RequestInfo) Decision {
	switch {
	case ri.Subresource == "" && (ri.Verb == "get" || ri.Verb == "list" || ri.Verb == "watch"):
		return Allow
	case ri.Name != node:
		return NoOpinion
	case ri.Subresource == "" && (ri.Verb == "create" || ri.Verb == "update" || ri.Verb == "delete"),
		ri.Subresource == "status" && ri.Verb == "update":
		return Allow
	}
	return NoOpinion
}

func decideLease(node string, ri *server.RequestInfo) Decision {
	if ri.Namespace != NodeLeaseNamespace || ri.Name != node || ri.Subresource != "" {
		return NoOpinion
	}
	switch ri.Verb {
	case "get", "create", "update", "delete":
		return Allow
	}
	return NoOpinion
}

func (n *nodeAuthorizer) decidePod(ctx context.Context, node string, ri *server.RequestInfo) (Decision, string, error) {
	switch {
	case ri.Subresource == "" && (ri.Verb == "list" || ri.Verb == "watch"):
		if sel, err := fields.Parse(ri.FieldSelector); err == nil {
			if v, ok := sel.RequiresExactMatch("spec.nodeName"); ok && v == node {
				return Allow, "", nil
			}
		}
		return NoOpinion, fmt.Sprintf("node %q can only list and watch pods with the field selector spec.nodeName=%s", node, node), nil
	case ri.Subresource == "" && ri.Verb == "get":
		return n.bound(ctx, node, ri, "read")
	case ri.Subresource == "" && ri.Verb == "delete", ri.Subresource == "status" && ri.Verb == "update":
		return n.bound(ctx, node, ri, "change")
	}
	return NoOpinion, fmt.Sprintf("node %q can only read pods bound to it, write their status and delete them", node), nil
}

// bound allows a request on a pod bound to node. A pod that does not exist
// is NotFound, as the request would be (the agent deletes pods and writes
// the status of pods that may just have gone).
func (n *nodeAuthorizer) bound(ctx context.Context, node string, ri *server.RequestInfo, what string) (Decision, string, error) {
	if p, ok := n.pods.Store().GetByName(ri.Namespace, ri.Name); ok && p.GetSpec().GetNodeName() == node {
		return Allow, "", nil
	}
	n.fallbacks.Inc()
	p, err := n.read.GetPod(ctx, ri.Namespace, ri.Name)
	switch {
	case apierrors.IsNotFound(err):
		return Deny, "", apierrors.NewNotFound("pods", ri.Name)
	case err != nil:
		return Deny, "", err
	case p.GetSpec().GetNodeName() == node:
		return Allow, "", nil
	}
	return NoOpinion, fmt.Sprintf("node %q can only %s pods bound to it", node, what), nil
}

func (n *nodeAuthorizer) decideConfigMap(ctx context.Context, node string, ri *server.RequestInfo) (Decision, string, error) {
	refused := func() (Decision, string, error) {
		return NoOpinion, fmt.Sprintf("node %q can only read the ConfigMaps of pods bound to it", node), nil
	}
	if ri.Subresource != "" || ri.Verb != "get" {
		return refused()
	}
	if n.configMaps.used(configMapUse{node, ri.Namespace, ri.Name}) {
		return Allow, "", nil
	}
	n.fallbacks.Inc()
	pods, err := n.read.ListPods(ctx, &metav1.ListOptions{Namespace: ri.Namespace, FieldSelector: "spec.nodeName=" + fields.EscapeValue(node)})
	if err != nil {
		return Deny, "", err
	}
	for _, p := range pods {
		if p.GetSpec().GetNodeName() == node && usesConfigMap(p, ri.Name) {
			return Allow, "", nil
		}
	}
	return refused()
}

// configMapRefs lists the ConfigMaps a pod uses: volumes, env valueFrom
// and envFrom of its containers and init containers.
func configMapRefs(p *corev1.Pod) []string {
	var out []string
	add := func(name string) {
		for _, n := range out {
			if n == name {
				return
			}
		}
		if name != "" {
			out = append(out, name)
		}
	}
	spec := p.GetSpec()
	for _, v := range spec.GetVolumes() {
		add(v.GetConfigMap().GetName())
	}
	for _, cs := range [][]*corev1.Container{spec.GetInitContainers(), spec.GetContainers()} {
		for _, c := range cs {
			for _, e := range c.GetEnv() {
				add(e.GetValueFrom().GetConfigMapKeyRef().GetName())
			}
			for _, e := range c.GetEnvFrom() {
				add(e.GetConfigMapRef().GetName())
			}
		}
	}
	return out
}

func usesConfigMap(p *corev1.Pod, name string) bool {
	for _, n := range configMapRefs(p) {
		if n == name {
			return true
		}
	}
	return false
}

// slimPods keeps of each pod what the node authorizer needs: its key,
// resourceVersion, node, and the ConfigMaps it uses (as configMap
// volumes), so that the apiserver does not hold a second full copy of
// every pod.
type slimPods struct{ informer.Source[*corev1.Pod] }

func (s slimPods) List(ctx context.Context, o *metav1.ListOptions) ([]*corev1.Pod, *metav1.ListMeta, error) {
	items, meta, err := s.Source.List(ctx, o)
	for i, p := range items {
		items[i] = slimPod(p)
	}
	return items, meta, err
}

func (s slimPods) Watch(ctx context.Context, o *metav1.ListOptions) (informer.Stream[*corev1.Pod], error) {
	w, err := s.Source.Watch(ctx, o)
	if err != nil {
		return nil, err
	}
	return slimStream{w}, nil
}

type slimStream struct{ informer.Stream[*corev1.Pod] }

func (s slimStream) Next() (client.Event[*corev1.Pod], error) {
	ev, err := s.Stream.Next()
	if ev.Object != nil {
		ev.Object = slimPod(ev.Object)
	}
	return ev, err
}

func slimPod(p *corev1.Pod) *corev1.Pod {
	m := p.GetMetadata()
	s := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), Uid: m.GetUid(), ResourceVersion: m.GetResourceVersion()},
		Spec:     &corev1.PodSpec{NodeName: p.GetSpec().GetNodeName()},
	}
	for _, cm := range configMapRefs(p) {
		s.Spec.Volumes = append(s.Spec.Volumes, &corev1.Volume{ConfigMap: &corev1.ConfigMapVolumeSource{Name: cm}})
	}
	return s
}
