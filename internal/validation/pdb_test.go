package validation

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	metav1 "skiff.dev/proto/meta/v1"
	policyv1 "skiff.dev/proto/policy/v1"
)

func TestPodDisruptionBudget(t *testing.T) {
	i := func(v int32) *metav1.IntOrString {
		return &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: v}}
	}
	s := func(v string) *metav1.IntOrString {
		return &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: v}}
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	pdb := func(spec *policyv1.PodDisruptionBudgetSpec, st *policyv1.PodDisruptionBudgetStatus) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: spec, Status: st}
	}
	now := timestamppb.Now()
	cases := []struct {
		name string
		pdb  *policyv1.PodDisruptionBudget
		want []string // substrings of the errors, in order; none: valid
	}{
		{"minAvailable", pdb(&policyv1.PodDisruptionBudgetSpec{MinAvailable: i(2), Selector: sel}, nil), nil},
		{"maxUnavailable percent", pdb(&policyv1.PodDisruptionBudgetSpec{MaxUnavailable: s("100%"), Selector: sel}, nil), nil},
		{"empty selector and no bound", pdb(&policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{}}, nil), nil},
		{"both", pdb(&policyv1.PodDisruptionBudgetSpec{MinAvailable: i(1), MaxUnavailable: i(1), Selector: sel}, nil),
			[]string{"spec: Invalid value: \"{minAvailable: 1, maxUnavailable: 1}\": minAvailable and maxUnavailable cannot be both set"}},
		{"negative", pdb(&policyv1.PodDisruptionBudgetSpec{MinAvailable: i(-1)}, nil),
			[]string{"spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"}},
		{"over 100%", pdb(&policyv1.PodDisruptionBudgetSpec{MaxUnavailable: s("101%")}, nil),
			[]string{"spec.maxUnavailable: Invalid value: \"101%\": must not be greater than 100%"}},
		{"not a percent", pdb(&policyv1.PodDisruptionBudgetSpec{MinAvailable: s("half")}, nil),
			[]string{"spec.minAvailable: Invalid value: \"half\": a valid percent string must be"}},
		{"bad selector", pdb(&policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{{Key: "app", Operator: "In"}}}}, nil),
			[]string{"spec.selector.matchExpressions[0].values"}},
		{"policy", pdb(&policyv1.PodDisruptionBudgetSpec{UnhealthyPodEvictionPolicy: proto.String("Sometimes")}, nil),
			[]string{`spec.unhealthyPodEvictionPolicy: Unsupported value: "Sometimes": supported values: "AlwaysAllow", "IfHealthyBudget"`}},
		{"status", pdb(&policyv1.PodDisruptionBudgetSpec{}, &policyv1.PodDisruptionBudgetStatus{
			DisruptionsAllowed: -1,
			Conditions:         []*metav1.Condition{{Type: "DisruptionAllowed", Status: "True", Reason: "SufficientPods", LastTransitionTime: now}, {Type: "DisruptionAllowed", Status: "Maybe", Reason: "no good"}},
		}), []string{"status.conditions[1].type: Duplicate value", "status.conditions[1].status: Unsupported value: \"Maybe\"", "status.conditions[1].lastTransitionTime: Required value", "status.conditions[1].reason: Invalid value: \"no good\"", "status.disruptionsAllowed: Invalid value: -1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := PodDisruptionBudget(c.pdb)
			if len(errs) != len(c.want) {
				t.Fatalf("errors %v, want %d: %q", errs, len(c.want), c.want)
			}
			for k, e := range errs {
				if !strings.Contains(e.Error(), c.want[k]) {
					t.Errorf("error %d: %q, want %q", k, e.Error(), c.want[k])
				}
			}
		})
	}
	old := pdb(&policyv1.PodDisruptionBudgetSpec{MinAvailable: i(1), Selector: sel}, nil)
	old.Metadata.ResourceVersion = "5"
	next := proto.Clone(old).(*policyv1.PodDisruptionBudget)
	next.Spec.MinAvailable = i(2)
	if errs := PodDisruptionBudgetUpdate(next, old); len(errs) != 0 {
		t.Errorf("a spec update is allowed in policy/v1: %v", errs)
	}
}
