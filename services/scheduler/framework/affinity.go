package framework

import (
	"fmt"
	"maps"
	"slices"

	"skiff.dev/internal/labels"
	corev1 "skiff.dev/proto/core/v1"
)

// AffinityTerm is a pod (anti-)affinity term ready to match other pods:
// the pods in Namespaces, or in a namespace NamespaceSelector matches,
// whose labels Selector matches, "near" the term's pod by TopologyKey.
//
// As in Kubernetes: a term that names no namespaces and has no
// namespaceSelector means the pod's own namespace; a namespaceSelector {}
// means every namespace; a nil labelSelector matches no pod.
// (matchLabelKeys and mismatchLabelKeys were merged into the labelSelector
// by the apiserver when the pod was created.)
type AffinityTerm struct {
	Namespaces        []string
	Selector          labels.Selector
	TopologyKey       string
	NamespaceSelector labels.Selector

	// pairs are the label pairs Selector requires (requiredPairs); key is
	// the term's termKey as parsed (empty when not yet computed). Both are
	// set by the parser: a term built by hand has neither, and
	// AffinityIndex then looks at every pod for it.
	pairs []LabelPair
	key   string
}

// ResolveNamespaces makes t select the pods of names as well as those of
// its namespaces, in place of its namespace selector (which InterPodAffinity
// resolves once per cycle).
func (t *AffinityTerm) ResolveNamespaces(names []string) {
	t.Namespaces = append(slices.Clone(t.Namespaces), names...)
	t.NamespaceSelector = labels.Nothing()
	t.key = ""
}

// WeightedAffinityTerm is a preferred term with its weight.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// Matches reports whether pod is one the term selects; nsLabels are the
// labels of pod's namespace (only read when the term has a namespace
// selector other than Nothing).
func (t *AffinityTerm) Matches(pod *corev1.Pod, nsLabels map[string]string) bool {
	m := pod.GetMetadata()
	if !slices.Contains(t.Namespaces, m.GetNamespace()) && !t.NamespaceSelector.Matches(nsLabels) {
		return false
	}
	return t.Selector.Matches(m.GetLabels())
}

// MatchesAll reports whether pod matches every term (false for no terms).
func MatchesAll(terms []AffinityTerm, pod *corev1.Pod, nsLabels map[string]string) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].Matches(pod, nsLabels) {
			return false
		}
	}
	return true
}

func newAffinityTerm(pod *corev1.Pod, t *corev1.PodAffinityTerm) (AffinityTerm, error) {
	sel, err := labels.FromProto(t.GetLabelSelector())
	if err != nil {
		return AffinityTerm{}, err
	}
	nsSel, err := labels.FromProto(t.GetNamespaceSelector())
	if err != nil {
		return AffinityTerm{}, fmt.Errorf("namespaceSelector: %w", err)
	}
	ns := t.GetNamespaces()
	if len(ns) == 0 && t.GetNamespaceSelector() == nil {
		ns = []string{pod.GetMetadata().GetNamespace()}
	}
	at := AffinityTerm{Namespaces: ns, Selector: sel, TopologyKey: t.GetTopologyKey(), NamespaceSelector: nsSel, pairs: requiredPairs(sel)}
	at.key = termKey(&at)
	return at, nil
}

func affinityTerms(pod *corev1.Pod, ts []*corev1.PodAffinityTerm) ([]AffinityTerm, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	out := make([]AffinityTerm, 0, len(ts))
	for _, t := range ts {
		at, err := newAffinityTerm(pod, t)
		if err != nil {
			return nil, err
		}
		out = append(out, at)
	}
	return out, nil
}

func weightedAffinityTerms(pod *corev1.Pod, ts []*corev1.WeightedPodAffinityTerm) ([]WeightedAffinityTerm, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	out := make([]WeightedAffinityTerm, 0, len(ts))
	for _, t := range ts {
		at, err := newAffinityTerm(pod, t.GetPodAffinityTerm())
		if err != nil {
			return nil, err
		}
		out = append(out, WeightedAffinityTerm{AffinityTerm: at, Weight: t.GetWeight()})
	}
	return out, nil
}

// parseAffinity fills pi's affinity terms from its pod.
func (pi *PodInfo) parseAffinity() error {
	a := pi.Pod.GetSpec().GetAffinity()
	pa, paa := a.GetPodAffinity(), a.GetPodAntiAffinity()
	if pa == nil && paa == nil {
		return nil
	}
	var err error
	if pi.RequiredAffinityTerms, err = affinityTerms(pi.Pod, pa.GetRequiredDuringSchedulingIgnoredDuringExecution()); err != nil {
		return fmt.Errorf("podAffinity: %w", err)
	}
	if pi.RequiredAntiAffinityTerms, err = affinityTerms(pi.Pod, paa.GetRequiredDuringSchedulingIgnoredDuringExecution()); err != nil {
		return fmt.Errorf("podAntiAffinity: %w", err)
	}
	if pi.PreferredAffinityTerms, err = weightedAffinityTerms(pi.Pod, pa.GetPreferredDuringSchedulingIgnoredDuringExecution()); err != nil {
		return fmt.Errorf("podAffinity: %w", err)
	}
	if pi.PreferredAntiAffinityTerms, err = weightedAffinityTerms(pi.Pod, paa.GetPreferredDuringSchedulingIgnoredDuringExecution()); err != nil {
		return fmt.Errorf("podAntiAffinity: %w", err)
	}
	return nil
}

// HasAffinity reports whether the pod has any pod affinity or
// anti-affinity term (NodeInfo.PodsWithAffinity lists such pods).
func (pi *PodInfo) HasAffinity() bool {
	return len(pi.RequiredAffinityTerms)+len(pi.RequiredAntiAffinityTerms)+
		len(pi.PreferredAffinityTerms)+len(pi.PreferredAntiAffinityTerms) > 0
}

// HasRequiredAntiAffinity reports whether the pod has a required
// anti-affinity term (NodeInfo.PodsWithRequiredAntiAffinity lists such
// pods).
func (pi *PodInfo) HasRequiredAntiAffinity() bool { return len(pi.RequiredAntiAffinityTerms) > 0 }

// removeByUID removes the pod with uid from list (order not kept).
func removeByUID(list []*PodInfo, uid string) []*PodInfo {
	for i, p := range list {
		if p.UID() == uid {
			last := len(list) - 1
			list[i] = list[last]
			list[last] = nil
			return list[:last]
		}
	}
	return list
}

// NamespaceLister reads namespaces' labels, for pod affinity terms'
// namespace selectors. The maps returned are shared and must not be
// modified.
type NamespaceLister interface {
	// NamespaceLabels returns the labels of the named namespace (nil when
	// unknown).
	NamespaceLabels(name string) map[string]string
	// NamespacesMatching returns the names of the namespaces whose labels
	// sel matches.
	NamespacesMatching(sel labels.Selector) []string
}

// replaceByUID puts pi in place of the pod with its uid in list, if there.
func replaceByUID(list []*PodInfo, pi *PodInfo) {
	uid := pi.UID()
	for i, p := range list {
		if p.UID() == uid {
			list[i] = pi
			return
		}
	}
}

// copyPods copies src into dst's array (nil for an empty src).
func copyPods(dst, src []*PodInfo) []*PodInfo {
	if len(dst) > len(src) {
		clear(dst[len(src):])
	}
	if len(src) == 0 {
		return dst[:0]
	}
	return append(dst[:0], src...)
}

// sameForAffinity reports whether two versions of a pod look the same to
// the plugins that match pods by label (InterPodAffinity,
// PodTopologySpread): the same labels, deletion state and affinity
// terms, so that one may replace the other without a recount.
func sameForAffinity(a, b *PodInfo) bool {
	am, bm := a.Pod.GetMetadata(), b.Pod.GetMetadata()
	return maps.Equal(am.GetLabels(), bm.GetLabels()) &&
		(am.GetDeletionTimestamp() == nil) == (bm.GetDeletionTimestamp() == nil) &&
		a.HasAffinity() == b.HasAffinity() && a.HasRequiredAntiAffinity() == b.HasRequiredAntiAffinity()
}
