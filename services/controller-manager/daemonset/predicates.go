package daemonset

import (
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/nodeaffinity"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/history"
	"skiff.dev/services/controller-manager/nodelifecycle"
)

// Labels of a daemon pod.
const (
	// RevisionLabel holds the template hash of the revision a pod runs.
	RevisionLabel = history.PodRevisionLabel
	// TemplateGenerationLabel holds the DaemonSet's template generation at
	// the pod's creation (Kubernetes' extensions.DaemonSetTemplateGenerationKey).
	TemplateGenerationLabel = "pod-template-generation"
)

// The taints a daemon pod tolerates whatever its template says
// (Kubernetes' AddOrUpdateDaemonPodTolerations).
const (
	TaintNotReady           = "node.kubernetes.io/not-ready"
	TaintUnreachable        = "node.kubernetes.io/unreachable"
	TaintDiskPressure       = "node.kubernetes.io/disk-pressure"
	TaintMemoryPressure     = "node.kubernetes.io/memory-pressure"
	TaintPIDPressure        = "node.kubernetes.io/pid-pressure"
	TaintUnschedulable      = "node.kubernetes.io/unschedulable"
	TaintNetworkUnavailable = "node.kubernetes.io/network-unavailable"
)

// DaemonTolerations returns tolerations with the daemon pods' own added
// (each once: one already there with the same key, operator and effect is
// replaced, as Kubernetes' AddOrUpdateTolerationInPodSpec does).
func DaemonTolerations(tolerations []*corev1.Toleration, hostNetwork bool) []*corev1.Toleration {
	out := slices.Clone(tolerations)
	add := func(key, effect string) {
		t := &corev1.Toleration{Key: key, Operator: "Exists", Effect: effect}
		for i, have := range out {
			if have.GetKey() == key && have.GetEffect() == effect && have.GetOperator() == "Exists" {
				out[i] = t
				return
			}
		}
		out = append(out, t)
	}
	add(TaintNotReady, "NoExecute")
	add(TaintUnreachable, "NoExecute")
	add(TaintDiskPressure, "NoSchedule")
	add(TaintMemoryPressure, "NoSchedule")
	add(TaintPIDPressure, "NoSchedule")
	add(TaintUnschedulable, "NoSchedule")
	if hostNetwork {
		add(TaintNetworkUnavailable, "NoSchedule")
	}
	return out
}

// Fit is what a node's labels and taints say of a DaemonSet.
type Fit struct {
	// ShouldRun: the node should run a daemon pod (one is created if none).
	ShouldRun bool
	// ShouldContinueRunning: a daemon pod already there may stay (the node
	// fits but for NoSchedule taints, which do not evict).
	ShouldContinueRunning bool
}

// NodeShouldRunDaemonPod is Kubernetes' function of that name: the
// template's nodeName (if any) and its node selector and required node
// affinity must admit node; then its taints decide: tolerated, the node
// should run a pod; only untolerated NoSchedule taints, a pod already there
// may continue; an untolerated NoExecute taint, neither.
func NodeShouldRunDaemonPod(node *corev1.Node, ds *appsv1.DaemonSet) Fit {
	spec := ds.GetSpec().GetTemplate().GetSpec()
	name := node.GetMetadata().GetName()
	if n := spec.GetNodeName(); n != "" && n != name {
		return Fit{}
	}
	if !nodeaffinity.PodMatches(node, spec) {
		return Fit{}
	}
	tols := DaemonTolerations(spec.GetTolerations(), spec.GetHostNetwork())
	noSchedule, noExecute := untolerated(node.GetSpec().GetTaints(), tols)
	switch {
	case noExecute:
		return Fit{}
	case noSchedule:
		return Fit{ShouldContinueRunning: true}
	}
	return Fit{ShouldRun: true, ShouldContinueRunning: true}
}

// untolerated reports whether some NoSchedule and some NoExecute taint of
// taints is tolerated by none of tols (PreferNoSchedule never counts).
func untolerated(taints []*corev1.Taint, tols []*corev1.Toleration) (noSchedule, noExecute bool) {
	for _, t := range taints {
		if t.GetEffect() != "NoSchedule" && t.GetEffect() != "NoExecute" {
			continue
		}
		if slices.ContainsFunc(tols, func(tol *corev1.Toleration) bool { return nodelifecycle.Tolerates(tol, t) }) {
			continue
		}
		if t.GetEffect() == "NoSchedule" {
			noSchedule = true
		} else {
			noExecute = true
		}
	}
	return noSchedule, noExecute
}

// NodeAffinityFor returns affinity with its required node affinity replaced
// by the one term matchFields metadata.name In [node] (Kubernetes'
// ReplaceDaemonSetPodNodeNameNodeAffinity: the controller has checked the
// template's terms already); everything else is kept.
func NodeAffinityFor(affinity *corev1.Affinity, node string) *corev1.Affinity {
	out := &corev1.Affinity{}
	if affinity != nil {
		out = proto.Clone(affinity).(*corev1.Affinity)
	}
	if out.NodeAffinity == nil {
		out.NodeAffinity = &corev1.NodeAffinity{}
	}
	out.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
		NodeSelectorTerms: []*corev1.NodeSelectorTerm{{
			MatchFields: []*corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: "In", Values: []string{node}}},
		}},
	}
	return out
}

// TargetNode is the node a daemon pod is for: its spec.nodeName once
// bound, else the node its matchFields metadata.name In names (Kubernetes'
// GetTargetNodeName); "" if neither.
func TargetNode(p *corev1.Pod) string {
	if n := p.GetSpec().GetNodeName(); n != "" {
		return n
	}
	for _, t := range p.GetSpec().GetAffinity().GetNodeAffinity().GetRequiredDuringSchedulingIgnoredDuringExecution().GetNodeSelectorTerms() {
		for _, f := range t.GetMatchFields() {
			if f.GetKey() == "metadata.name" && f.GetOperator() == "In" && len(f.GetValues()) == 1 {
				return f.GetValues()[0]
			}
		}
	}
	return ""
}

// NewPod is the pod the DaemonSet runs on node: its template with the
// daemon tolerations and node affinity, the revision and template
// generation labels, a controller reference to ds, and generateName
// <ds>-.
func NewPod(ds *appsv1.DaemonSet, node, hash string, generation int64) *corev1.Pod {
	t := ds.GetSpec().GetTemplate()
	m := &metav1.ObjectMeta{}
	if t.GetMetadata() != nil {
		m = proto.Clone(t.GetMetadata()).(*metav1.ObjectMeta)
	}
	dm := ds.GetMetadata()
	m.Name = ""
	m.GenerateName = dm.GetName() + "-"
	m.Namespace = dm.GetNamespace()
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[RevisionLabel] = hash
	m.Labels[TemplateGenerationLabel] = strconv.FormatInt(generation, 10)
	m.OwnerReferences = []*metav1.OwnerReference{{
		ApiVersion: "apps/v1", Kind: "DaemonSet", Name: dm.GetName(), Uid: dm.GetUid(),
		Controller: proto.Bool(true), BlockOwnerDeletion: proto.Bool(true),
	}}
	spec := &corev1.PodSpec{}
	if t.GetSpec() != nil {
		spec = proto.Clone(t.GetSpec()).(*corev1.PodSpec)
	}
	spec.Tolerations = DaemonTolerations(spec.Tolerations, spec.HostNetwork)
	spec.Affinity = NodeAffinityFor(spec.Affinity, node)
	return &corev1.Pod{ApiVersion: "v1", Kind: "Pod", Metadata: m, Spec: spec}
}
