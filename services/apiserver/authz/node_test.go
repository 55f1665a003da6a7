package authz

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/server"
	"skiff.dev/services/apiserver/user"
)

// The node authorizer's decisions, on a fixed set of pods. The whole path
// (the informer on a real apiserver, real agents' identities) is in
// services/apiserver/integration/authz_test.go.

// listedPods is a Source that lists fixed pods and then watches nothing.
type listedPods []*corev1.Pod

func (l listedPods) List(context.Context, *metav1.ListOptions) ([]*corev1.Pod, *metav1.ListMeta, error) {
	return append([]*corev1.Pod(nil), l...), &metav1.ListMeta{ResourceVersion: "1"}, nil
}

func (l listedPods) Watch(ctx context.Context, _ *metav1.ListOptions) (informer.Stream[*corev1.Pod], error) {
	return quietStream{ctx}, nil
}

func (listedPods) Resource() string { return "pods" }

type quietStream struct{ ctx context.Context }

func (s quietStream) Next() (client.Event[*corev1.Pod], error) {
	<-s.ctx.Done()
	return client.Event[*corev1.Pod]{}, s.ctx.Err()
}

func (quietStream) Stop() {}

// storedPods is the consistent reader: the pods in etcd.
type storedPods map[string]*corev1.Pod

func (s storedPods) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	if p, ok := s[ns+"/"+name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound("pods", name)
}

func (s storedPods) ListPods(_ context.Context, o *metav1.ListOptions) ([]*corev1.Pod, error) {
	node := strings.TrimPrefix(o.GetFieldSelector(), "spec.nodeName=")
	var out []*corev1.Pod
	for _, p := range s {
		if p.GetMetadata().GetNamespace() == o.GetNamespace() && p.GetSpec().GetNodeName() == node {
			out = append(out, p)
		}
	}
	return out, nil
}

func pod(ns, name, node string, configMaps ...string) *corev1.Pod {
	p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: &corev1.PodSpec{NodeName: node}}
	for i, cm := range configMaps {
		c := &corev1.Container{Name: "c"}
		switch i % 3 {
		case 0:
			p.Spec.Volumes = append(p.Spec.Volumes, &corev1.Volume{Name: cm, ConfigMap: &corev1.ConfigMapVolumeSource{Name: cm}})
		case 1:
			c.Env = []*corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Name: cm, Key: "k"}}}}
		case 2:
			c.EnvFrom = []*corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{Name: cm}}}
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
	return p
}

// withSecrets adds, in order, a Secret volume, a projected volume with a
// Secret and kube-root-ca.crt, env, envFrom and an imagePullSecret.
func withSecrets(p *corev1.Pod, sa string, secrets ...string) *corev1.Pod {
	p.Spec.ServiceAccountName = sa
	for i, s := range secrets {
		c := &corev1.Container{Name: "c"}
		switch i % 5 {
		case 0:
			p.Spec.Volumes = append(p.Spec.Volumes, &corev1.Volume{Name: s, Secret: &corev1.SecretVolumeSource{SecretName: s}})
		case 1:
			p.Spec.Volumes = append(p.Spec.Volumes, &corev1.Volume{Name: s, Projected: &corev1.ProjectedVolumeSource{Sources: []*corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{Name: "kube-root-ca.crt"}},
				{Secret: &corev1.SecretProjection{Name: s}},
			}}})
		case 2:
			c.Env = []*corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Name: s, Key: "k"}}}}
		case 3:
			c.EnvFrom = []*corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{Name: s}}}
		case 4:
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, &corev1.LocalObjectReference{Name: s})
		}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	return p
}

// storedVolumes is the volumes in etcd.
type storedVolumes map[string]*corev1.PersistentVolume

func (s storedVolumes) GetVolume(_ context.Context, name string) (*corev1.PersistentVolume, error) {
	if v, ok := s[name]; ok {
		return v, nil
	}
	return nil, apierrors.NewNotFound("persistentvolumes", name)
}

// volumeOn is a volume whose nodeAffinity requires key In values (no
// nodeAffinity without values).
func volumeOn(name, key string, values ...string) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{Metadata: &metav1.ObjectMeta{Name: name}, Spec: &corev1.PersistentVolumeSpec{}}
	if len(values) > 0 {
		req := &corev1.NodeSelectorRequirement{Key: key, Operator: "In", Values: values}
		term := &corev1.NodeSelectorTerm{MatchExpressions: []*corev1.NodeSelectorRequirement{req}}
		if key == "metadata.name" {
			term = &corev1.NodeSelectorTerm{MatchFields: []*corev1.NodeSelectorRequirement{req}}
		}
		v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []*corev1.NodeSelectorTerm{term}}}
	}
	return v
}

var testVolumes = storedVolumes{
	"pvc-a":       volumeOn("pvc-a", "kubernetes.io/hostname", "node-a"),
	"pvc-ab":      volumeOn("pvc-ab", "kubernetes.io/hostname", "node-b", "node-a"),
	"pvc-field":   volumeOn("pvc-field", "metadata.name", "node-a"),
	"pvc-b":       volumeOn("pvc-b", "kubernetes.io/hostname", "node-b"),
	"pvc-zone":    volumeOn("pvc-zone", "zone", "node-a"),
	"pvc-nowhere": volumeOn("pvc-nowhere", ""),
}

func withClaims(p *corev1.Pod, claims ...string) *corev1.Pod {
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, &corev1.Volume{Name: c, PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}})
	}
	return p
}

func startNodeAuthorizer(t testing.TB, listed []*corev1.Pod, stored ...*corev1.Pod) (*nodeAuthorizer, *metrics) {
	t.Helper()
	m := newMetrics(nil)
	all := storedPods{}
	for _, p := range append(listed, stored...) {
		all[p.GetMetadata().GetNamespace()+"/"+p.GetMetadata().GetName()] = p
	}
	n := newNodeAuthorizer(listedPods(listed), all, testVolumes, m, zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); n.pods.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if !informer.WaitForSync(ctx, n.pods) {
		t.Fatal("pods informer did not sync")
	}
	return n, m
}

var nodeA = &user.Info{Name: "system:node:node-a", Groups: []string{user.NodesGroup, user.AllAuthenticated}}

func TestNodeAuthorizer(t *testing.T) {
	n, m := startNodeAuthorizer(t,
		[]*corev1.Pod{
			withClaims(withSecrets(pod("team-a", "web-a", "node-a", "cfg-a", "env-a", "envfrom-a"), "runner", "sec-vol", "sec-proj", "sec-env", "sec-envfrom", "sec-pull"), "data-a"),
			withClaims(withSecrets(pod("team-a", "web-b", "node-b", "cfg-b"), "b-sa", "sec-b"), "data-b"),
			withSecrets(pod("team-a", "pending", ""), "pending-sa", "sec-pending"),
		},
		// Bound to node-a a moment ago: the informer has not seen it.
		withClaims(withSecrets(pod("team-a", "late", "node-a", "cfg-late"), "late-sa", "sec-late"), "data-late"),
	)
	listWith := func(verb, ns, selector string) *server.RequestInfo {
		return &server.RequestInfo{Verb: verb, Resource: "pods", Namespaced: true, Namespace: ns, FieldSelector: selector}
	}
	tests := []struct {
		name   string
		req    *server.RequestInfo
		want   Decision
		reason string // part of the reason, for NoOpinion
	}{
		{"read every node", ri("get", "", "nodes", "", "", "node-b"), Allow, ""},
		{"list nodes", ri("list", "", "nodes", "", "", ""), Allow, ""},
		{"watch nodes", ri("watch", "", "nodes", "", "", ""), Allow, ""},
		{"create its Node", ri("create", "", "nodes", "", "", "node-a"), Allow, ""},
		{"update its Node", ri("update", "", "nodes", "", "", "node-a"), Allow, ""},
		{"update its Node's status", ri("update", "", "nodes", "status", "", "node-a"), Allow, ""},
		{"delete its Node", ri("delete", "", "nodes", "", "", "node-a"), Allow, ""},
		{"create another Node", ri("create", "", "nodes", "", "", "node-b"), NoOpinion, `node "node-a" can only create, change and delete its own Node`},
		{"update another Node's status", ri("update", "", "nodes", "status", "", "node-b"), NoOpinion, "its own Node"},
		{"delete another Node", ri("delete", "", "nodes", "", "", "node-b"), NoOpinion, "its own Node"},

		{"get its Lease", ri("get", "coordination.k8s.io", "leases", "", NodeLeaseNamespace, "node-a"), Allow, ""},
		{"create its Lease", ri("create", "coordination.k8s.io", "leases", "", NodeLeaseNamespace, "node-a"), Allow, ""},
		{"renew its Lease", ri("update", "coordination.k8s.io", "leases", "", NodeLeaseNamespace, "node-a"), Allow, ""},
		{"renew another node's Lease", ri("update", "coordination.k8s.io", "leases", "", NodeLeaseNamespace, "node-b"), NoOpinion, `node "node-a" can only use its own Lease kube-node-lease/node-a`},
		{"a Lease of its name elsewhere", ri("update", "coordination.k8s.io", "leases", "", "kube-system", "node-a"), NoOpinion, "its own Lease"},
		{"list Leases", &server.RequestInfo{Verb: "list", APIGroup: "coordination.k8s.io", Resource: "leases", Namespaced: true, Namespace: NodeLeaseNamespace}, NoOpinion, "its own Lease"},

		{"list its pods", listWith("list", "", "spec.nodeName=node-a"), Allow, ""},
		{"watch its pods in a namespace", listWith("watch", "team-a", "spec.nodeName=node-a,status.phase!=Failed"), Allow, ""},
		{"list every pod", listWith("list", "", ""), NoOpinion, `node "node-a" can only list and watch pods with the field selector spec.nodeName=node-a`},
		{"watch another node's pods", listWith("watch", "", "spec.nodeName=node-b"), NoOpinion, "spec.nodeName=node-a"},
		{"list with a negated selector", listWith("list", "", "spec.nodeName!=node-b"), NoOpinion, "spec.nodeName=node-a"},
		{"get its pod", ri("get", "", "pods", "", "team-a", "web-a"), Allow, ""},
		{"update its pod's status", ri("update", "", "pods", "status", "team-a", "web-a"), Allow, ""},
		{"delete its pod", ri("delete", "", "pods", "", "team-a", "web-a"), Allow, ""},
		{"its pod, not yet in the informer", ri("update", "", "pods", "status", "team-a", "late"), Allow, ""},
		{"get another node's pod", ri("get", "", "pods", "", "team-a", "web-b"), NoOpinion, `node "node-a" can only read pods bound to it`},
		{"update another node's pod's status", ri("update", "", "pods", "status", "team-a", "web-b"), NoOpinion, `node "node-a" can only change pods bound to it`},
		{"delete a pending pod", ri("delete", "", "pods", "", "team-a", "pending"), NoOpinion, "can only change pods bound to it"},
		{"create a pod", ri("create", "", "pods", "", "team-a", "mine"), NoOpinion, "can only read pods bound to it, write their status and delete them"},
		{"update its pod's spec", ri("update", "", "pods", "", "team-a", "web-a"), NoOpinion, "write their status"},
		{"bind a pod", ri("create", "", "pods", "binding", "team-a", "pending"), NoOpinion, "write their status"},

		{"a ConfigMap its pod mounts", ri("get", "", "configmaps", "", "team-a", "cfg-a"), Allow, ""},
		{"a ConfigMap its pod's env uses", ri("get", "", "configmaps", "", "team-a", "env-a"), Allow, ""},
		{"a ConfigMap its pod's envFrom uses", ri("get", "", "configmaps", "", "team-a", "envfrom-a"), Allow, ""},
		{"a ConfigMap its new pod uses", ri("get", "", "configmaps", "", "team-a", "cfg-late"), Allow, ""},
		{"another node's pod's ConfigMap", ri("get", "", "configmaps", "", "team-a", "cfg-b"), NoOpinion, `node 'node-a' cannot get configmap team-a/cfg-b: no relationship found between node 'node-a' and this object`},
		{"the name in another namespace", ri("get", "", "configmaps", "", "team-b", "cfg-a"), NoOpinion, "no relationship found between node 'node-a' and this object"},
		{"list ConfigMaps", &server.RequestInfo{Verb: "list", Resource: "configmaps", Namespaced: true, Namespace: "team-a"}, NoOpinion, "with the field selector metadata.name=<name>"},
		{"watch one ConfigMap by name", &server.RequestInfo{Verb: "watch", Resource: "configmaps", Namespaced: true, Namespace: "team-a", FieldSelector: "metadata.name=cfg-a"}, Allow, ""},
		{"watch another node's ConfigMap by name", &server.RequestInfo{Verb: "list", Resource: "configmaps", Namespaced: true, Namespace: "team-a", FieldSelector: "metadata.name=cfg-b"}, NoOpinion, "no relationship found"},
		{"kube-root-ca.crt through a projected volume", ri("get", "", "configmaps", "", "team-a", "kube-root-ca.crt"), Allow, ""},
		{"update a ConfigMap it may read", ri("update", "", "configmaps", "", "team-a", "cfg-a"), NoOpinion, "can only read"},

		{"a Secret its pod mounts", ri("get", "", "secrets", "", "team-a", "sec-vol"), Allow, ""},
		{"a Secret of its pod's projected volume", ri("get", "", "secrets", "", "team-a", "sec-proj"), Allow, ""},
		{"a Secret its pod's env uses", ri("get", "", "secrets", "", "team-a", "sec-env"), Allow, ""},
		{"a Secret its pod's envFrom uses", ri("get", "", "secrets", "", "team-a", "sec-envfrom"), Allow, ""},
		{"its pod's imagePullSecret", ri("get", "", "secrets", "", "team-a", "sec-pull"), Allow, ""},
		{"a Secret its new pod uses", ri("get", "", "secrets", "", "team-a", "sec-late"), Allow, ""},
		{"watch one Secret by name", &server.RequestInfo{Verb: "watch", Resource: "secrets", Namespaced: true, Namespace: "team-a", FieldSelector: "metadata.name=sec-vol"}, Allow, ""},
		{"another node's pod's Secret", ri("get", "", "secrets", "", "team-a", "sec-b"), NoOpinion, `node 'node-a' cannot get secret team-a/sec-b: no relationship found between node 'node-a' and this object`},
		{"a Secret named as a ConfigMap it uses", ri("get", "", "secrets", "", "team-a", "cfg-a"), NoOpinion, "no relationship found"},
		{"a ConfigMap named as a Secret it uses", ri("get", "", "configmaps", "", "team-a", "sec-vol"), NoOpinion, "no relationship found"},
		{"list Secrets", &server.RequestInfo{Verb: "list", Resource: "secrets", Namespaced: true, Namespace: "team-a"}, NoOpinion, "metadata.name=<name>"},
		{"list Secrets everywhere by name", &server.RequestInfo{Verb: "list", Resource: "secrets", Namespaced: true, FieldSelector: "metadata.name=sec-vol"}, NoOpinion, "in a namespace"},
		{"delete a Secret", ri("delete", "", "secrets", "", "team-a", "sec-vol"), NoOpinion, "can only read"},

		{"a token of its pod's service account", ri("create", "", "serviceaccounts", "token", "team-a", "runner"), Allow, ""},
		{"a token of its new pod's service account", ri("create", "", "serviceaccounts", "token", "team-a", "late-sa"), Allow, ""},
		{"a token of another node's pod's service account", ri("create", "", "serviceaccounts", "token", "team-a", "b-sa"), NoOpinion, `node 'node-a' cannot create serviceaccount token team-a/b-sa: no relationship found`},
		{"get a service account", ri("get", "", "serviceaccounts", "", "team-a", "runner"), NoOpinion, ""},

		{"the claim its pod mounts", ri("get", "", "persistentvolumeclaims", "", "team-a", "data-a"), Allow, ""},
		{"the claim its new pod mounts", ri("get", "", "persistentvolumeclaims", "", "team-a", "data-late"), Allow, ""},
		{"another node's pod's claim", ri("get", "", "persistentvolumeclaims", "", "team-a", "data-b"), NoOpinion, `node 'node-a' cannot get persistentvolumeclaim team-a/data-b: no relationship found between node 'node-a' and this object`},
		{"a claim named as a Secret it uses", ri("get", "", "persistentvolumeclaims", "", "team-a", "sec-vol"), NoOpinion, "no relationship found"},
		{"list claims", &server.RequestInfo{Verb: "list", Resource: "persistentvolumeclaims", Namespaced: true, Namespace: "team-a"}, NoOpinion, "can only get the persistentvolumeclaims of pods bound to it"},
		{"update its pod's claim", ri("update", "", "persistentvolumeclaims", "", "team-a", "data-a"), NoOpinion, "can only get"},
		{"update its pod's claim's status", ri("update", "", "persistentvolumeclaims", "status", "team-a", "data-a"), NoOpinion, "can only get"},

		{"get any volume", ri("get", "", "persistentvolumes", "", "", "pvc-b"), Allow, ""},
		{"list volumes", &server.RequestInfo{Verb: "list", Resource: "persistentvolumes"}, Allow, ""},
		{"watch volumes", &server.RequestInfo{Verb: "watch", Resource: "persistentvolumes"}, Allow, ""},
		{"update a volume pinned to it", ri("update", "", "persistentvolumes", "", "", "pvc-a"), Allow, ""},
		{"update a volume on it and another node", ri("update", "", "persistentvolumes", "", "", "pvc-ab"), Allow, ""},
		{"update a volume pinned by metadata.name", ri("update", "", "persistentvolumes", "", "", "pvc-field"), Allow, ""},
		{"update another node's volume", ri("update", "", "persistentvolumes", "", "", "pvc-b"), NoOpinion, `node 'node-a' cannot update persistentvolume pvc-b: its nodeAffinity does not name node 'node-a'`},
		{"update a volume pinned by another label", ri("update", "", "persistentvolumes", "", "", "pvc-zone"), NoOpinion, "does not name"},
		{"update a volume without nodeAffinity", ri("update", "", "persistentvolumes", "", "", "pvc-nowhere"), NoOpinion, "does not name"},
		{"update the status of its volume", ri("update", "", "persistentvolumes", "status", "", "pvc-a"), NoOpinion, "can only read persistentvolumes and update those whose nodeAffinity names it"},
		{"delete its volume", ri("delete", "", "persistentvolumes", "", "", "pvc-a"), NoOpinion, "can only read"},
		{"create a volume", ri("create", "", "persistentvolumes", "", "", "pvc-new"), NoOpinion, "can only read"},

		{"create an event anywhere", ri("create", "", "events", "", "team-b", "e"), Allow, ""},
		{"update an event", ri("update", "", "events", "", "team-b", "e"), Allow, ""},
		{"list events", &server.RequestInfo{Verb: "list", Resource: "events", Namespaced: true}, NoOpinion, ""},

		// The agent's service proxy and DNS server follow every Service and EndpointSlice.
		{"list services", &server.RequestInfo{Verb: "list", Resource: "services", Namespaced: true}, Allow, ""},
		{"watch services", &server.RequestInfo{Verb: "watch", Resource: "services", Namespaced: true}, Allow, ""},
		{"get a service", ri("get", "", "services", "", "team-b", "web"), Allow, ""},
		{"watch endpointslices", &server.RequestInfo{Verb: "watch", APIGroup: "discovery.k8s.io", Resource: "endpointslices", Namespaced: true}, Allow, ""},
		{"watch namespaces (the DNS server)", &server.RequestInfo{Verb: "watch", Resource: "namespaces"}, Allow, ""},
		{"delete a namespace", ri("delete", "", "namespaces", "", "", "team-a"), NoOpinion, ""},
		{"finalize a namespace", ri("update", "", "namespaces", "finalize", "", "team-a"), NoOpinion, ""},
		{"change a service", ri("update", "", "services", "", "team-a", "web"), NoOpinion, ""},
		{"create an endpointslice", ri("create", "discovery.k8s.io", "endpointslices", "", "team-a", "web-x"), NoOpinion, ""},

		// The agent resolves a pod's runtimeClassName to its handler.
		{"get a runtimeclass", ri("get", "node.k8s.io", "runtimeclasses", "", "", "gvisor"), Allow, ""},
		{"watch runtimeclasses", &server.RequestInfo{Verb: "watch", APIGroup: "node.k8s.io", Resource: "runtimeclasses"}, Allow, ""},
		{"change a runtimeclass", ri("update", "node.k8s.io", "runtimeclasses", "", "", "gvisor"), NoOpinion, ""},
		{"create a csr", ri("create", "certificates.k8s.io", "certificatesigningrequests", "", "", ""), Allow, ""},
		{"get a csr", ri("get", "certificates.k8s.io", "certificatesigningrequests", "", "", "node-a-client"), Allow, ""},
		{"watch csrs", &server.RequestInfo{Verb: "watch", APIGroup: "certificates.k8s.io", Resource: "certificatesigningrequests"}, Allow, ""},
		{"approve a csr", ri("update", "certificates.k8s.io", "certificatesigningrequests", "approval", "", "node-a-client"), NoOpinion, ""},
		{"sign a csr", ri("update", "certificates.k8s.io", "certificatesigningrequests", "status", "", "node-a-client"), NoOpinion, ""},
		{"delete a csr", ri("delete", "certificates.k8s.io", "certificatesigningrequests", "", "", "node-a-client"), NoOpinion, ""},

		{"anything else: no opinion", ri("get", "apps", "deployments", "", "team-a", "d"), NoOpinion, ""},
		{"a path: no opinion", pathRI("/skiff.discovery.v1.Discovery/Groups"), NoOpinion, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason, err := n.decide(context.Background(), as(nodeA, tt.req))
			if err != nil || got != tt.want || (tt.want == NoOpinion && !strings.Contains(reason, tt.reason)) {
				t.Errorf("got %v %q %v, want %v %q", got, reason, err, tt.want, tt.reason)
			}
		})
	}
	if got := testutil.ToFloat64(m.nodeFallbacks); got == 0 {
		t.Error("the pod the informer had not seen was allowed without reading it")
	}

	t.Run("a pod that does not exist is NotFound", func(t *testing.T) {
		_, _, err := n.decide(context.Background(), as(nodeA, ri("update", "", "pods", "status", "team-a", "gone")))
		if !apierrors.IsNotFound(err) {
			t.Errorf("got %v, want NotFound", err)
		}
	})
	t.Run("updating a volume that does not exist is NotFound", func(t *testing.T) {
		_, _, err := n.decide(context.Background(), as(nodeA, ri("update", "", "persistentvolumes", "", "", "gone")))
		if !apierrors.IsNotFound(err) {
			t.Errorf("got %v, want NotFound", err)
		}
	})
	t.Run("users that are not nodes: no opinion", func(t *testing.T) {
		for _, u := range []*user.Info{
			{Name: "bob", Groups: []string{user.AllAuthenticated}},
			{Name: "system:node:node-a", Groups: []string{user.AllAuthenticated}}, // not in system:nodes
			{Name: "node-a", Groups: []string{user.NodesGroup}},                   // not system:node:<name>
		} {
			if d, reason, err := n.decide(context.Background(), as(u, ri("get", "", "nodes", "", "", "node-a"))); d != NoOpinion || reason != "" || err != nil {
				t.Errorf("%s in %v: got %v %q %v, want no opinion", u.Name, u.Groups, d, reason, err)
			}
		}
	})
}

func TestSlimPodKeepsWhatTheNodeAuthorizerNeeds(t *testing.T) {
	full := withClaims(withSecrets(pod("ns", "p", "node-a", "v", "e", "f", "v"), "sa", "s1", "s2", "s3", "s4", "s5"), "data")
	full.Metadata.Uid, full.Metadata.ResourceVersion = "u1", "42"
	full.Metadata.Labels = map[string]string{"app": "web"}
	full.Spec.Containers = append(full.Spec.Containers, &corev1.Container{Name: "main", Image: "web:1"})
	s := slimPod(full)
	m := s.GetMetadata()
	if m.GetName() != "p" || m.GetNamespace() != "ns" || m.GetUid() != "u1" || m.GetResourceVersion() != "42" || s.GetSpec().GetNodeName() != "node-a" {
		t.Errorf("slim pod lost its identity: %v", s)
	}
	if got, want := podRefs(s), podRefs(full); !slices.Equal(sortedRefs(got), sortedRefs(want)) || len(want) != 11 {
		t.Errorf("slim pod's objects %v, want %v", got, want)
	}
	if len(m.GetLabels()) != 0 || len(s.GetSpec().GetContainers()) != 0 || len(s.GetSpec().GetImagePullSecrets()) != 0 {
		t.Errorf("slim pod kept more than needed: %v", s)
	}
}

func sortedRefs(r []objectRef) []objectRef {
	r = slices.Clone(r)
	slices.SortFunc(r, func(a, b objectRef) int { return strings.Compare(a.kind+"/"+a.name, b.kind+"/"+b.name) })
	return r
}

func TestPodUsesFollowPods(t *testing.T) {
	c := podUses{byPod: map[string][]objectUse{}, count: map[objectUse]int{}}
	use := func(name string) objectUse { return objectUse{kindConfigMap, "node-a", "ns", name} }
	c.set("ns/p1", usesOf(slimPod(pod("ns", "p1", "node-a", "shared", "one"))))
	c.set("ns/p2", usesOf(slimPod(pod("ns", "p2", "node-a", "shared"))))
	c.set("ns/p3", usesOf(slimPod(pod("ns", "p3", "", "pending"))))
	check := func(when string, want map[string]bool) {
		t.Helper()
		for name, w := range want {
			if got := c.used(use(name)); got != w {
				t.Errorf("%s: %s used = %v, want %v", when, name, got, w)
			}
		}
	}
	check("start", map[string]bool{"shared": true, "one": true, "pending": false})
	c.set("ns/p1", usesOf(slimPod(pod("ns", "p1", "node-a", "two")))) // p1 changed its ConfigMaps
	check("p1 changed", map[string]bool{"shared": true, "one": false, "two": true})
	c.set("ns/p2", nil)
	check("p2 gone", map[string]bool{"shared": false, "two": true})
	c.set("ns/p1", nil)
	if len(c.count) != 0 || len(c.byPod) != 0 {
		t.Errorf("all pods gone, still counted: %v %v", c.count, c.byPod)
	}
}
