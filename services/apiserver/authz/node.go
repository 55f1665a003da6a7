package authz

import (
	"context"
	"fmt"
	"slices"
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
//	configmaps,    get (and list, watch with the field selector
//	secrets        metadata.name=<name>): only those a pod bound to it uses
//	               (volumes, projected volumes' sources, env, envFrom; a
//	               Secret also as an imagePullSecret); so a node reads
//	               kube-root-ca.crt through the projected volume of a pod's
//	               service account token
//	serviceaccounts/token
//	               create: only for the service account of a pod bound
//	               to it
//	persistentvolumeclaims
//	               get: only those a pod bound to it mounts
//	persistentvolumes
//	               get, list, watch: all (the agent watches them to clean
//	               up the local volumes of its node as they are deleted:
//	               no selector picks volumes by their nodeAffinity, and a
//	               volume holds no secret, only a path, a size and its
//	               claim's name); update: only of a volume whose
//	               nodeAffinity requires kubernetes.io/hostname (or
//	               metadata.name) In a list naming the node (the agent
//	               removes its finalizer once the directory is gone)
//	events         create, update, patch, get (the event sink re-reads an
//	               event after a conflict): anywhere
//	services,      get, list, watch: all (the agent's service proxy and
//	endpointslices, DNS server follow every one, as kube-proxy and CoreDNS
//	namespaces     do: a name in a namespace that does not exist is NXDOMAIN)
//	runtimeclasses get, list, watch: all (a pod's runtimeClassName is
//	               resolved to its CRI handler, as the kubelet's system:node
//	               role allows)
//	certificatesigningrequests
//	               create, get, list, watch: all, as Kubernetes' system:node
//	               role (a node asks for its renewed client and serving
//	               certificates and waits for them; a CSR holds public
//	               keys and certificates only). Approving and signing are
//	               not a node's: the approval and status subresources are
//	               refused
//
// Anything else a node asks is not its business: no opinion, and RBAC
// (which grants nodes nothing by default) decides. Users that are not
// nodes get no opinion at all.
//
// Which pods are bound to which node comes from an informer of the pods on
// the loopback connection that keeps only each pod's key, node and the
// objects it uses, indexed by (kind, node, namespace, name) as its events
// arrive: a decision is one map lookup, never a scan. The informer may lag the node's own watch by a few
// milliseconds (a new pod, just bound): when it does not show the pod
// bound to the node, the authorizer reads the pod (consistently) before
// refusing, so the agent never sees a spurious denial.
type nodeAuthorizer struct {
	pods      *informer.Informer[*corev1.Pod]
	read      PodReader
	volumes   VolumeReader
	fallbacks prometheus.Counter
	uses      podUses
}

// PodReader reads pods consistently (etcd, not a cache): the node
// authorizer's check when its informer does not show a pod bound to the
// asking node.
type PodReader interface {
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	ListPods(ctx context.Context, o *metav1.ListOptions) ([]*corev1.Pod, error)
}

// VolumeReader reads a persistent volume: the node authorizer reads the
// volume a node asks to update, to check its nodeAffinity.
type VolumeReader interface {
	GetVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error)
}

// VolumesFromClient reads persistent volumes through a connection.
func VolumesFromClient(conn grpc.ClientConnInterface) VolumeReader {
	return clientVolumes{client.PersistentVolumes(conn)}
}

type clientVolumes struct {
	r *client.Resource[*corev1.PersistentVolume, *corev1.PersistentVolumeList]
}

func (c clientVolumes) GetVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	return c.r.Get(ctx, "", name)
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
func newNodeAuthorizer(src informer.Source[*corev1.Pod], read PodReader, volumes VolumeReader, m *metrics, log *zap.Logger) *nodeAuthorizer {
	n := &nodeAuthorizer{
		pods:      informer.New[*corev1.Pod](slimPods{src}, informer.Options{Logger: log, ListOptions: &metav1.ListOptions{FieldSelector: boundPods}}),
		read:      read,
		volumes:   volumes,
		fallbacks: m.nodeFallbacks,
		uses:      podUses{byPod: map[string][]objectUse{}, count: map[objectUse]int{}},
	}
	n.pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd:    func(p *corev1.Pod) { n.uses.set(informer.Key(p), usesOf(p)) },
		OnUpdate: func(_, p *corev1.Pod) { n.uses.set(informer.Key(p), usesOf(p)) },
		OnDelete: func(p *corev1.Pod) { n.uses.set(informer.Key(p), nil) },
	})
	return n
}

// The kinds of object a pod uses.
const (
	kindConfigMap      = "configmap"
	kindSecret         = "secret"
	kindServiceAccount = "serviceaccount"
	kindClaim          = "persistentvolumeclaim"
)

// podUses counts, for each kind, node, namespace and name, the pods bound
// to the node that use the object: a node's read of a ConfigMap or Secret
// is one map lookup.
type podUses struct {
	mu    sync.RWMutex
	byPod map[string][]objectUse // pod key -> what it uses, as last counted
	count map[objectUse]int
}

type objectUse struct{ kind, node, namespace, name string }

// objectRef is an object a pod uses, in the pod's namespace.
type objectRef struct{ kind, name string }

// usesOf is what a (slim) pod bound to a node uses.
func usesOf(p *corev1.Pod) []objectUse {
	node := p.GetSpec().GetNodeName()
	if node == "" {
		return nil
	}
	var out []objectUse
	for _, r := range podRefs(p) {
		out = append(out, objectUse{r.kind, node, p.GetMetadata().GetNamespace(), r.name})
	}
	return out
}

// set replaces what the pod at key uses (nil: the pod is gone).
func (c *podUses) set(key string, uses []objectUse) {
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

func (c *podUses) used(u objectUse) bool {
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
		return n.decideUsed(ctx, node, ri, kindConfigMap)
	case core && ri.Resource == "secrets":
		return n.decideUsed(ctx, node, ri, kindSecret)
	case core && ri.Resource == "serviceaccounts" && ri.Subresource == "token":
		if ri.Verb != "create" {
			return NoOpinion, fmt.Sprintf("node '%s' can only create tokens of the service accounts of pods bound to it", node), nil
		}
		return n.decideUsed(ctx, node, ri, kindServiceAccount)
	case core && ri.Resource == "persistentvolumeclaims":
		if ri.Verb != "get" || ri.Subresource != "" {
			return NoOpinion, fmt.Sprintf("node '%s' can only get the persistentvolumeclaims of pods bound to it", node), nil
		}
		return n.decideUsed(ctx, node, ri, kindClaim)
	case core && ri.Resource == "persistentvolumes":
		return n.decideVolume(ctx, node, ri)
	case core && ri.Resource == "services", ri.APIGroup == "discovery.k8s.io" && ri.Resource == "endpointslices",
		core && ri.Resource == "namespaces" && ri.Subresource == "",
		ri.APIGroup == "node.k8s.io" && ri.Resource == "runtimeclasses" && ri.Subresource == "":
		switch ri.Verb {
		case "get", "list", "watch":
			return Allow, "", nil
		}
	case ri.APIGroup == "certificates.k8s.io" && ri.Resource == "certificatesigningrequests" && ri.Subresource == "":
		switch ri.Verb {
		case "create", "get", "list", "watch":
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

// decideUsed allows a node to get (and list or watch, by the field
// selector metadata.name=<name>) a ConfigMap or Secret, or to create a
// token of a service account, only when a pod bound to it uses the object,
// as Kubernetes' node authorizer. The index answers; when it does not know
// the use (a pod bound a moment ago), the node's pods in the namespace are
// read consistently before refusing.
func (n *nodeAuthorizer) decideUsed(ctx context.Context, node string, ri *server.RequestInfo, kind string) (Decision, string, error) {
	name, verb := ri.Name, ri.Verb
	what := kind
	if kind == kindServiceAccount {
		what = "serviceaccount token"
	}
	switch {
	case kind == kindServiceAccount:
	case ri.Subresource != "":
		return NoOpinion, fmt.Sprintf("node '%s' cannot %s %s/%s", node, verb, ri.Resource, ri.Subresource), nil
	case verb == "get":
	case verb == "list" || verb == "watch":
		// A list or watch of one object by name, as the kubelet's
		// reflectors of single Secrets and ConfigMaps.
		sel, err := fields.Parse(ri.FieldSelector)
		v, ok := "", false
		if err == nil {
			v, ok = sel.RequiresExactMatch("metadata.name")
		}
		if !ok || ri.Namespace == "" {
			return NoOpinion, fmt.Sprintf("node '%s' can only %s %ss with the field selector metadata.name=<name> in a namespace", node, verb, what), nil
		}
		name = v
	default:
		return NoOpinion, fmt.Sprintf("node '%s' can only read the %ss of pods bound to it", node, what), nil
	}
	refused := func() (Decision, string, error) {
		return NoOpinion, fmt.Sprintf("node '%s' cannot %s %s %s/%s: no relationship found between node '%s' and this object", node, verb, what, ri.Namespace, name, node), nil
	}
	if name == "" {
		return refused()
	}
	if n.uses.used(objectUse{kind, node, ri.Namespace, name}) {
		return Allow, "", nil
	}
	n.fallbacks.Inc()
	pods, err := n.read.ListPods(ctx, &metav1.ListOptions{Namespace: ri.Namespace, FieldSelector: "spec.nodeName=" + fields.EscapeValue(node)})
	if err != nil {
		return Deny, "", err
	}
	for _, p := range pods {
		if p.GetSpec().GetNodeName() != node {
			continue
		}
		for _, r := range podRefs(p) {
			if r.kind == kind && r.name == name {
				return Allow, "", nil
			}
		}
	}
	return refused()
}

// decideVolume lets a node read every persistent volume, and update one
// whose nodeAffinity names it (to remove the finalizer of a local volume
// it cleaned up). The volume is read from the store: what it is, not what
// the update would make it.
func (n *nodeAuthorizer) decideVolume(ctx context.Context, node string, ri *server.RequestInfo) (Decision, string, error) {
	switch {
	case ri.Subresource == "" && (ri.Verb == "get" || ri.Verb == "list" || ri.Verb == "watch"):
		return Allow, "", nil
	case ri.Subresource == "" && ri.Verb == "update" && ri.Name != "" && n.volumes != nil:
		v, err := n.volumes.GetVolume(ctx, ri.Name)
		switch {
		case apierrors.IsNotFound(err):
			return Deny, "", apierrors.NewNotFound("persistentvolumes", ri.Name)
		case err != nil:
			return Deny, "", err
		case VolumeOnNode(v, node):
			return Allow, "", nil
		}
		return NoOpinion, fmt.Sprintf("node '%s' cannot update persistentvolume %s: its nodeAffinity does not name node '%s'", node, ri.Name, node), nil
	}
	return NoOpinion, fmt.Sprintf("node '%s' can only read persistentvolumes and update those whose nodeAffinity names it", node), nil
}

// VolumeOnNode reports whether v's required nodeAffinity pins it to node:
// every term requires kubernetes.io/hostname (or the field metadata.name)
// In values that include node. (The node agent labels its Node
// kubernetes.io/hostname=<node name>, and the local-path provisioner pins
// its volumes with that label.)
func VolumeOnNode(v *corev1.PersistentVolume, node string) bool {
	terms := v.GetSpec().GetNodeAffinity().GetRequired().GetNodeSelectorTerms()
	if len(terms) == 0 {
		return false
	}
	for _, t := range terms {
		named := false
		reqs := append(slices.Clone(t.GetMatchExpressions()), t.GetMatchFields()...)
		for _, r := range reqs {
			if (r.GetKey() == "kubernetes.io/hostname" || r.GetKey() == "metadata.name") && r.GetOperator() == "In" && slices.Contains(r.GetValues(), node) {
				named = true
			}
		}
		if !named {
			return false
		}
	}
	return true
}

// podRefs lists the objects a pod uses, each once: ConfigMaps and Secrets
// of volumes, projected volumes' sources, env valueFrom and envFrom of
// its containers and init containers; Secrets of imagePullSecrets;
// persistentVolumeClaims of volumes; its service account.
func podRefs(p *corev1.Pod) []objectRef {
	var out []objectRef
	add := func(kind, name string) {
		r := objectRef{kind, name}
		if name != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	spec := p.GetSpec()
	for _, v := range spec.GetVolumes() {
		add(kindConfigMap, v.GetConfigMap().GetName())
		add(kindSecret, v.GetSecret().GetSecretName())
		add(kindClaim, v.GetPersistentVolumeClaim().GetClaimName())
		for _, src := range v.GetProjected().GetSources() {
			add(kindConfigMap, src.GetConfigMap().GetName())
			add(kindSecret, src.GetSecret().GetName())
		}
	}
	for _, cs := range [][]*corev1.Container{spec.GetInitContainers(), spec.GetContainers()} {
		for _, c := range cs {
			for _, e := range c.GetEnv() {
				add(kindConfigMap, e.GetValueFrom().GetConfigMapKeyRef().GetName())
				add(kindSecret, e.GetValueFrom().GetSecretKeyRef().GetName())
			}
			for _, e := range c.GetEnvFrom() {
				add(kindConfigMap, e.GetConfigMapRef().GetName())
				add(kindSecret, e.GetSecretRef().GetName())
			}
		}
	}
	for _, s := range spec.GetImagePullSecrets() {
		add(kindSecret, s.GetName())
	}
	add(kindServiceAccount, spec.GetServiceAccountName())
	return out
}

// slimPods keeps of each pod what the node authorizer needs: its key,
// resourceVersion, node, and the objects it uses (as configMap and secret
// volumes and its service account name), so that the apiserver does not hold a second full copy of
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
	for _, r := range podRefs(p) {
		switch r.kind {
		case kindConfigMap:
			s.Spec.Volumes = append(s.Spec.Volumes, &corev1.Volume{ConfigMap: &corev1.ConfigMapVolumeSource{Name: r.name}})
		case kindSecret:
			s.Spec.Volumes = append(s.Spec.Volumes, &corev1.Volume{Secret: &corev1.SecretVolumeSource{SecretName: r.name}})
		case kindClaim:
			s.Spec.Volumes = append(s.Spec.Volumes, &corev1.Volume{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: r.name}})
		case kindServiceAccount:
			s.Spec.ServiceAccountName = r.name
		}
	}
	return s
}
