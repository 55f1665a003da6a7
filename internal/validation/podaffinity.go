package validation

import (
	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// podAffinities validates a pod's podAffinity and podAntiAffinity, as
// Kubernetes does: each term's labelSelector and namespaceSelector valid
// selectors, namespaces DNS labels, topologyKey required and a qualified
// name, matchLabelKeys and mismatchLabelKeys label names that need a
// labelSelector and do not overlap; preferred terms weigh 1..100.
func podAffinities(a *corev1.Affinity, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pa := a.GetPodAffinity(); pa != nil {
		errs = append(errs, podAffinity(pa, p.Child("podAffinity"))...)
	}
	if paa := a.GetPodAntiAffinity(); paa != nil {
		errs = append(errs, podAffinity(paa, p.Child("podAntiAffinity"))...)
	}
	return errs
}

func podAffinity(pa *corev1.PodAffinity, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rp := p.Child("requiredDuringSchedulingIgnoredDuringExecution")
	for i, t := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
		errs = append(errs, podAffinityTerm(t, rp.Index(i))...)
	}
	pp := p.Child("preferredDuringSchedulingIgnoredDuringExecution")
	for i, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
		ip := pp.Index(i)
		if w.GetWeight() <= 0 || w.GetWeight() > 100 {
			errs = append(errs, field.Invalid(ip.Child("weight"), w.GetWeight(), "must be in the range 1-100"))
		}
		errs = append(errs, podAffinityTerm(w.GetPodAffinityTerm(), ip.Child("podAffinityTerm"))...)
	}
	return errs
}

func podAffinityTerm(t *corev1.PodAffinityTerm, p *field.Path) field.ErrorList {
	if t == nil {
		t = &corev1.PodAffinityTerm{}
	}
	errs := LabelSelector(t.LabelSelector, p.Child("labelSelector"))
	errs = append(errs, LabelSelector(t.NamespaceSelector, p.Child("namespaceSelector"))...)
	for _, ns := range t.Namespaces {
		// Kubernetes names the field "namespace" here.
		errs = append(errs, invalidEach(p.Child("namespace"), ns, isDNS1123Label(ns))...)
	}
	errs = append(errs, matchLabelKeys(p, t.MatchLabelKeys, t.MismatchLabelKeys, t.LabelSelector)...)
	if t.TopologyKey == "" {
		errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
	}
	return append(errs, invalidEach(p.Child("topologyKey"), t.TopologyKey, isQualifiedName(t.TopologyKey))...)
}

// matchLabelKeys validates a term's matchLabelKeys and mismatchLabelKeys
// as Kubernetes does after the apiserver merged them into the
// labelSelector (defaults.PodAffinityLabelKeys): a key of matchLabelKeys
// found in the selector before its merged requirement was in the user's
// selector too. (Kubernetes reports that at the term's path indexed by
// the key's position, without "matchLabelKeys"; so does Skiff.)
func matchLabelKeys(p *field.Path, match, mismatch []string, sel *metav1.LabelSelector) field.ErrorList {
	errs := labelKeys(p.Child("matchLabelKeys"), match, sel)
	errs = append(errs, labelKeys(p.Child("mismatchLabelKeys"), mismatch, sel)...)
	if sel != nil {
		index := map[string]int{}
		for i, k := range match {
			index[k] = i
		}
		seen := map[string]bool{}
		for k := range sel.MatchLabels {
			seen[k] = true
		}
		for _, r := range sel.MatchExpressions {
			k := r.GetKey()
			if i, ok := index[k]; ok && seen[k] {
				errs = append(errs, field.Invalid(p.Index(i), k, "exists in both matchLabelKeys and labelSelector"))
			}
			seen[k] = true
		}
	}
	inMismatch := map[string]bool{}
	for _, k := range mismatch {
		inMismatch[k] = true
	}
	for i, k := range match {
		if inMismatch[k] {
			errs = append(errs, field.Invalid(p.Child("matchLabelKeys").Index(i), k, "exists in both matchLabelKeys and mismatchLabelKeys"))
		}
	}
	return errs
}

func labelKeys(p *field.Path, keys []string, sel *metav1.LabelSelector) field.ErrorList {
	if len(keys) == 0 {
		return nil
	}
	if sel == nil {
		return field.ErrorList{field.Forbidden(p, "must not be specified when labelSelector is not set")}
	}
	var errs field.ErrorList
	for i, k := range keys {
		errs = append(errs, invalidEach(p.Index(i), k, isQualifiedName(k))...)
	}
	return errs
}
