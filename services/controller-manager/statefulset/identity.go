package statefulset

import (
	"maps"
	"regexp"
	"strconv"

	"google.golang.org/protobuf/proto"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/history"
)

// Labels a StatefulSet's pods carry, as Kubernetes names them.
const (
	// PodNameLabel holds the pod's own name (a Service may select one pod).
	PodNameLabel = "statefulset.kubernetes.io/pod-name"
	// PodIndexLabel holds the pod's ordinal.
	PodIndexLabel = "apps.kubernetes.io/pod-index"
	// RevisionLabel holds the name of the ControllerRevision the pod was
	// made from.
	RevisionLabel = history.PodRevisionLabel
)

// setKind is the owner kind of the revisions, pods and claims.
var setKind = history.Kind{APIVersion: "apps/v1", Kind: "StatefulSet"}

// statefulPodRegex splits a pod name into its set's name and ordinal.
var statefulPodRegex = regexp.MustCompile("(.*)-([0-9]+)$")

// parentAndOrdinal returns the set name and ordinal a pod's name encodes;
// -1 when it encodes none.
func parentAndOrdinal(name string) (string, int) {
	m := statefulPodRegex.FindStringSubmatch(name)
	if len(m) < 3 {
		return "", -1
	}
	i, err := strconv.ParseInt(m[2], 10, 32)
	if err != nil {
		return m[1], -1
	}
	return m[1], int(i)
}

func ordinalOf(p *corev1.Pod) int {
	_, ord := parentAndOrdinal(p.GetMetadata().GetName())
	return ord
}

// isMemberOf says whether the pod's name makes it one of set's.
func isMemberOf(set *appsv1.StatefulSet, p *corev1.Pod) bool {
	parent, _ := parentAndOrdinal(p.GetMetadata().GetName())
	return parent == set.GetMetadata().GetName()
}

func startOrdinal(set *appsv1.StatefulSet) int {
	return int(set.GetSpec().GetOrdinals().GetStart())
}

func replicasOf(set *appsv1.StatefulSet) int { return int(set.GetSpec().GetReplicas()) }

// inRange says whether ord is one of the ordinals set should have.
func inRange(set *appsv1.StatefulSet, ord int) bool {
	return ord >= startOrdinal(set) && ord < startOrdinal(set)+replicasOf(set)
}

// podName is <set>-<ordinal>.
func podName(set *appsv1.StatefulSet, ord int) string {
	return set.GetMetadata().GetName() + "-" + strconv.Itoa(ord)
}

// claimName is <template>-<set>-<ordinal>.
func claimName(set *appsv1.StatefulSet, template string, ord int) string {
	return template + "-" + podName(set, ord)
}

func podRevision(p *corev1.Pod) string { return p.GetMetadata().GetLabels()[RevisionLabel] }

// newPod is the pod of ordinal ord made from set's template (set being the
// StatefulSet at the revision named revision): named <set>-<ordinal>,
// with the identity labels, hostname and subdomain, and a volume per claim
// template in place of any template volume of the same name.
func newPod(set *appsv1.StatefulSet, ord int, revision string) *corev1.Pod {
	t := set.GetSpec().GetTemplate()
	spec := &corev1.PodSpec{}
	if t.GetSpec() != nil {
		spec = proto.Clone(t.GetSpec()).(*corev1.PodSpec)
	}
	name := podName(set, ord)
	labels := maps.Clone(t.GetMetadata().GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	labels[PodNameLabel] = name
	labels[PodIndexLabel] = strconv.Itoa(ord)
	labels[RevisionLabel] = revision
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{
			Name:            name,
			Namespace:       set.GetMetadata().GetNamespace(),
			Labels:          labels,
			Annotations:     maps.Clone(t.GetMetadata().GetAnnotations()),
			Finalizers:      append([]string(nil), t.GetMetadata().GetFinalizers()...),
			OwnerReferences: []*metav1.OwnerReference{controllerutil.NewControllerRef(withKind(set))},
		},
		Spec: spec,
	}
	spec.Hostname = name
	spec.Subdomain = set.GetSpec().GetServiceName()
	spec.Volumes = claimVolumes(set, ord, spec.Volumes)
	return p
}

// withKind returns set with its apiVersion and kind filled (objects from
// the API may come without them), for owner references.
func withKind(set *appsv1.StatefulSet) *appsv1.StatefulSet {
	if set.GetApiVersion() != "" && set.GetKind() != "" {
		return set
	}
	c := proto.Clone(set).(*appsv1.StatefulSet)
	c.ApiVersion, c.Kind = setKind.APIVersion, setKind.Kind
	return c
}

// claimVolumes returns the claim templates' volumes of ordinal ord, then
// the volumes of vols whose names no claim template takes (Kubernetes'
// updateStorage).
func claimVolumes(set *appsv1.StatefulSet, ord int, vols []*corev1.Volume) []*corev1.Volume {
	templates := set.GetSpec().GetVolumeClaimTemplates()
	if len(templates) == 0 {
		return vols
	}
	taken := map[string]bool{}
	out := make([]*corev1.Volume, 0, len(templates)+len(vols))
	for _, c := range templates {
		n := c.GetMetadata().GetName()
		taken[n] = true
		out = append(out, &corev1.Volume{Name: n, PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(set, n, ord)}})
	}
	for _, v := range vols {
		if !taken[v.GetName()] {
			out = append(out, v)
		}
	}
	return out
}

// newClaims are the claims of ordinal ord, one per claim template: named
// <template>-<set>-<ordinal>, the template's labels plus the set's
// selector's matchLabels. Owner references are the retention policy's
// business (see claimOwnerRefs).
func newClaims(set *appsv1.StatefulSet, ord int) []*corev1.PersistentVolumeClaim {
	var out []*corev1.PersistentVolumeClaim
	for _, t := range set.GetSpec().GetVolumeClaimTemplates() {
		c := proto.Clone(t).(*corev1.PersistentVolumeClaim)
		if c.Metadata == nil {
			c.Metadata = &metav1.ObjectMeta{}
		}
		c.Metadata.Name = claimName(set, t.GetMetadata().GetName(), ord)
		c.Metadata.Namespace = set.GetMetadata().GetNamespace()
		if c.Metadata.Labels == nil {
			c.Metadata.Labels = map[string]string{}
		}
		maps.Copy(c.Metadata.Labels, set.GetSpec().GetSelector().GetMatchLabels())
		c.Metadata.OwnerReferences = nil
		c.Metadata.ResourceVersion, c.Metadata.Uid = "", ""
		c.Status = nil
		out = append(out, c)
	}
	return out
}

// identityMatches says whether pod carries the identity of its ordinal in
// set (name, namespace, the pod-name and pod-index labels).
func identityMatches(set *appsv1.StatefulSet, p *corev1.Pod) bool {
	m := p.GetMetadata()
	ord := ordinalOf(p)
	return ord >= 0 && m.GetName() == podName(set, ord) && m.GetNamespace() == set.GetMetadata().GetNamespace() &&
		m.GetLabels()[PodNameLabel] == m.GetName() && m.GetLabels()[PodIndexLabel] == strconv.Itoa(ord)
}

// withIdentity returns a copy of p with its identity labels set.
func withIdentity(p *corev1.Pod) *corev1.Pod {
	c := proto.Clone(p).(*corev1.Pod)
	if c.Metadata.Labels == nil {
		c.Metadata.Labels = map[string]string{}
	}
	c.Metadata.Labels[PodNameLabel] = c.Metadata.GetName()
	c.Metadata.Labels[PodIndexLabel] = strconv.Itoa(ordinalOf(p))
	return c
}

// Pod states, as Kubernetes' StatefulSet controller reads them.

func isCreated(p *corev1.Pod) bool     { return p.GetStatus().GetPhase() != "" }
func isTerminating(p *corev1.Pod) bool { return p.GetMetadata().GetDeletionTimestamp() != nil }
func isFinished(p *corev1.Pod) bool {
	ph := p.GetStatus().GetPhase()
	return ph == "Failed" || ph == "Succeeded"
}
func isRunningAndReady(p *corev1.Pod) bool {
	return p.GetStatus().GetPhase() == "Running" && controllerutil.IsPodReady(p)
}
func isHealthy(p *corev1.Pod) bool { return isRunningAndReady(p) && !isTerminating(p) }
