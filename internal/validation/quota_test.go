package validation

import (
	"strings"
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func scopedQuota(hard map[string]string, scopes []string, exprs ...*corev1.ScopedResourceSelectorRequirement) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{Metadata: &metav1.ObjectMeta{Name: "q", Namespace: "ns"},
		Spec: &corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes}}
	if len(exprs) > 0 {
		q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: exprs}
	}
	return q
}

func expr(scope, op string, values ...string) *corev1.ScopedResourceSelectorRequirement {
	return &corev1.ScopedResourceSelectorRequirement{ScopeName: scope, Operator: op, Values: values}
}

func TestResourceQuotaScopes(t *testing.T) {
	pods := map[string]string{"pods": "10"}
	compute := map[string]string{"pods": "10", "requests.cpu": "2", "limits.memory": "4Gi"}
	for _, tc := range []struct {
		name string
		q    *corev1.ResourceQuota
		want []string // the errors, in order; none: valid
	}{
		{"each scope on pods", scopedQuota(pods, []string{"Terminating", "BestEffort", "PriorityClass"}), nil},
		{"compute under NotBestEffort and NotTerminating", scopedQuota(compute, []string{"NotBestEffort", "NotTerminating"}), nil},
		{"object counts are not checked against scopes", scopedQuota(map[string]string{"count/pods": "3"}, []string{"BestEffort"}), nil},
		{"an unknown scope", scopedQuota(pods, []string{"Cheap"}),
			[]string{`spec.scopes: Invalid value: [Cheap]: unsupported scope`}},
		{"BestEffort caps pods only", scopedQuota(map[string]string{"pods": "1", "requests.cpu": "1"}, []string{"BestEffort"}),
			[]string{`spec.scopes: Invalid value: [BestEffort]: unsupported scope applied to resource`}},
		{"configmaps are not pods", scopedQuota(map[string]string{"configmaps": "1"}, []string{"NotTerminating"}),
			[]string{`spec.scopes: Invalid value: [NotTerminating]: unsupported scope applied to resource`}},
		{"conflicting scopes", scopedQuota(pods, []string{"BestEffort", "NotBestEffort", "Terminating", "NotTerminating"}),
			[]string{`spec.scopes: Invalid value: [BestEffort NotBestEffort Terminating NotTerminating]: conflicting scopes`,
				`spec.scopes: Invalid value: [BestEffort NotBestEffort Terminating NotTerminating]: conflicting scopes`}},
		{"Kubernetes' scopes Skiff lacks", scopedQuota(pods, []string{"CrossNamespacePodAffinity"}),
			[]string{`spec.scopes[0]: Unsupported value: "CrossNamespacePodAffinity": is not supported by Skiff`}},

		{"selector: PriorityClass In", scopedQuota(compute, nil, expr("PriorityClass", "In", "high", "low")), nil},
		{"selector: PriorityClass NotIn and Exists", scopedQuota(compute, nil, expr("PriorityClass", "NotIn", "high"), expr("PriorityClass", "Exists")), nil},
		{"selector: BestEffort Exists", scopedQuota(pods, nil, expr("BestEffort", "Exists")), nil},
		{"selector: In without values", scopedQuota(pods, nil, expr("PriorityClass", "In")),
			[]string{"spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"}},
		{"selector: Exists with values", scopedQuota(pods, nil, expr("PriorityClass", "Exists", "high")),
			[]string{`spec.scopeSelector.matchExpressions.values: Invalid value: [high]: must be no value when ` + "`operator`" + ` is 'Exist' or 'DoesNotExist' for scope selector`}},
		{"selector: Terminating takes Exists only", scopedQuota(pods, nil, expr("Terminating", "DoesNotExist")),
			[]string{`spec.scopeSelector.matchExpressions.operator: Invalid value: "DoesNotExist": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity`}},
		{"selector: a bad operator", scopedQuota(pods, nil, expr("PriorityClass", "Gt", "1")),
			[]string{`spec.scopeSelector.matchExpressions.operator: Invalid value: "Gt": not a valid selector operator`}},
		{"selector: an unknown scope", scopedQuota(pods, nil, expr("Cheap", "Exists")),
			[]string{`spec.scopeSelector.matchExpressions.scopeName: Invalid value: "Cheap": unsupported scope`}},
		{"selector: BestEffort on compute", scopedQuota(compute, nil, expr("BestEffort", "Exists")),
			[]string{`spec.scopeSelector.matchExpressions: Invalid value: "BestEffort Exists": unsupported scope applied to resource`,
				`spec.scopeSelector.matchExpressions: Invalid value: "BestEffort Exists": unsupported scope applied to resource`}},
		{"selector: conflicting scopes", scopedQuota(pods, nil, expr("Terminating", "Exists"), expr("NotTerminating", "Exists")),
			[]string{`spec.scopeSelector.matchExpressions: Invalid value: []: conflicting scopes`}},
		{"selector: Kubernetes' scopes Skiff lacks", scopedQuota(pods, nil, expr("VolumeAttributesClass", "In", "gold")),
			[]string{`spec.scopeSelector.matchExpressions[0].scopeName: Unsupported value: "VolumeAttributesClass": is not supported by Skiff`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ResourceQuota(tc.q)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestResourceQuotaScopesAreImmutable(t *testing.T) {
	old := scopedQuota(map[string]string{"pods": "1"}, []string{"BestEffort", "Terminating"})
	same := scopedQuota(map[string]string{"pods": "2"}, []string{"Terminating", "BestEffort"})
	if errs := ResourceQuotaUpdate(same, old); len(errs) > 0 {
		t.Errorf("the same scopes in another order: %v", errs)
	}
	changed := scopedQuota(map[string]string{"pods": "1"}, []string{"BestEffort"})
	errs := ResourceQuotaUpdate(changed, old)
	if len(errs) != 1 || errs[0].Error() != `spec.scopes: Invalid value: [BestEffort]: field is immutable` {
		t.Errorf("errors %v, want spec.scopes immutable", errs)
	}
}
