package validation_test

import (
	"slices"
	"testing"

	"skiff.dev/internal/validation"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestPodAffinityValidation(t *testing.T) {
	sel := func(kv ...string) *metav1.LabelSelector {
		s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
		for i := 0; i+1 < len(kv); i += 2 {
			s.MatchLabels[kv[i]] = kv[i+1]
		}
		return s
	}
	const req = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
	const anti = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
	const pref = "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
	cases := []struct {
		name     string
		affinity *corev1.Affinity
		want     []string
	}{{
		name: "valid required and preferred terms",
		affinity: &corev1.Affinity{
			PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{{
				LabelSelector: sel("app", "db"), TopologyKey: "topology.kubernetes.io/zone", Namespaces: []string{"prod"},
				MatchLabelKeys: []string{"pod-template-hash"},
			}}},
			PodAntiAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []*corev1.WeightedPodAffinityTerm{{
				Weight: 100, PodAffinityTerm: &corev1.PodAffinityTerm{LabelSelector: sel("app", "web"), TopologyKey: "kubernetes.io/hostname", NamespaceSelector: sel()},
			}}},
		},
	}, {
		name: "topologyKey required",
		affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{{
			LabelSelector: sel("app", "db"),
		}}}},
		want: []string{req + ".topologyKey: Required value: can not be empty",
			req + `.topologyKey: Invalid value: "": name part must be non-empty`,
			req + `.topologyKey: Invalid value: "": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
	}, {
		name: "topologyKey a qualified name",
		affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{{
			LabelSelector: sel("app", "db"), TopologyKey: "bad key",
		}}}},
		want: []string{anti + `.topologyKey: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
	}, {
		name: "weight 1..100",
		affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []*corev1.WeightedPodAffinityTerm{{
			Weight: 0, PodAffinityTerm: &corev1.PodAffinityTerm{LabelSelector: sel("app", "web"), TopologyKey: "kubernetes.io/hostname"},
		}}}},
		want: []string{pref + ".weight: Invalid value: 0: must be in the range 1-100"},
	}, {
		name: "label selector and namespaces checked",
		affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{{Key: "app", Operator: "In"}}},
			TopologyKey:   "kubernetes.io/hostname", Namespaces: []string{"Prod"},
		}}}},
		want: []string{anti + ".labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
			anti + `.namespace: Invalid value: "Prod": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
	}, {
		name: "matchLabelKeys need a labelSelector",
		affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{{
			TopologyKey: "kubernetes.io/hostname", MatchLabelKeys: []string{"pod-template-hash"}, MismatchLabelKeys: []string{"tenant"},
		}}}},
		want: []string{anti + ".matchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
			anti + ".mismatchLabelKeys: Forbidden: must not be specified when labelSelector is not set"},
	}, {
		name: "a key in both matchLabelKeys and mismatchLabelKeys",
		affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{{
			LabelSelector: sel("app", "web"), TopologyKey: "kubernetes.io/hostname", MatchLabelKeys: []string{"tenant"}, MismatchLabelKeys: []string{"tenant"},
		}}}},
		want: []string{anti + `.matchLabelKeys[0]: Invalid value: "tenant": exists in both matchLabelKeys and mismatchLabelKeys`},
	}, {
		name: "a matchLabelKeys key already in the labelSelector (after the apiserver merged it)",
		affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"tenant": "a"},
				MatchExpressions: []*metav1.LabelSelectorRequirement{{Key: "tenant", Operator: "In", Values: []string{"a"}}},
			},
			TopologyKey: "kubernetes.io/hostname", MatchLabelKeys: []string{"tenant"},
		}}}},
		want: []string{anti + `[0]: Invalid value: "tenant": exists in both matchLabelKeys and labelSelector`},
	}, {
		name: "a matchLabelKeys key that was only merged is fine",
		affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []*corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"app": "web"},
				MatchExpressions: []*metav1.LabelSelectorRequirement{{Key: "tenant", Operator: "In", Values: []string{"a"}}},
			},
			TopologyKey: "kubernetes.io/hostname", MatchLabelKeys: []string{"tenant"},
		}}}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := nginxPod()
			p.Spec.Affinity = tc.affinity
			var got []string
			for _, err := range validation.Pod(p) {
				got = append(got, err.Error())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got:\n  %q\nwant:\n  %q", got, tc.want)
			}
		})
	}
}
