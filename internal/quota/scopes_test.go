package quota_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/quota"
	corev1 "skiff.dev/proto/core/v1"
)

func TestMatches(t *testing.T) {
	sized := &corev1.ResourceRequirements{Requests: map[string]string{"cpu": "100m"}}
	podOf := func(class string, deadline *int64, res *corev1.ResourceRequirements) *corev1.Pod {
		return &corev1.Pod{Spec: &corev1.PodSpec{PriorityClassName: class, ActiveDeadlineSeconds: deadline,
			Containers: []*corev1.Container{{Name: "a", Image: "x", Resources: res}}}}
	}
	bestEffort := podOf("", nil, nil)
	burstable := podOf("", nil, sized)
	job := podOf("", proto.Int64(60), nil)
	high := podOf("high", nil, sized)
	low := podOf("low", nil, nil)
	expr := func(scope, op string, values ...string) *corev1.ScopedResourceSelectorRequirement {
		return &corev1.ScopedResourceSelectorRequirement{ScopeName: scope, Operator: op, Values: values}
	}
	scopes := func(s ...string) *corev1.ResourceQuotaSpec { return &corev1.ResourceQuotaSpec{Scopes: s} }
	selector := func(e ...*corev1.ScopedResourceSelectorRequirement) *corev1.ResourceQuotaSpec {
		return &corev1.ResourceQuotaSpec{ScopeSelector: &corev1.ScopeSelector{MatchExpressions: e}}
	}
	for _, tc := range []struct {
		name string
		spec *corev1.ResourceQuotaSpec
		pods map[string]bool // pod name -> matches
	}{
		{"no scope: every pod", &corev1.ResourceQuotaSpec{},
			map[string]bool{"bestEffort": true, "burstable": true, "job": true, "high": true}},
		{"BestEffort", scopes("BestEffort"), map[string]bool{"bestEffort": true, "burstable": false, "job": true, "low": true}},
		{"NotBestEffort", scopes("NotBestEffort"), map[string]bool{"bestEffort": false, "burstable": true, "high": true}},
		{"Terminating: activeDeadlineSeconds", scopes("Terminating"), map[string]bool{"job": true, "bestEffort": false}},
		{"NotTerminating", scopes("NotTerminating"), map[string]bool{"job": false, "bestEffort": true}},
		{"all scopes at once", scopes("Terminating", "BestEffort"), map[string]bool{"job": true, "bestEffort": false, "burstable": false}},
		{"PriorityClass scope: a class set", scopes("PriorityClass"), map[string]bool{"high": true, "low": true, "bestEffort": false}},
		{"PriorityClass In", selector(expr("PriorityClass", "In", "high")), map[string]bool{"high": true, "low": false, "bestEffort": false}},
		{"PriorityClass NotIn: no class is not in", selector(expr("PriorityClass", "NotIn", "high")),
			map[string]bool{"high": false, "low": true, "bestEffort": true}},
		{"PriorityClass DoesNotExist never matches", selector(expr("PriorityClass", "DoesNotExist")),
			map[string]bool{"high": false, "bestEffort": false}},
		{"scopes and selector together", &corev1.ResourceQuotaSpec{Scopes: []string{"NotBestEffort"},
			ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []*corev1.ScopedResourceSelectorRequirement{expr("PriorityClass", "In", "high", "low")}}},
			map[string]bool{"high": true, "low": false, "burstable": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := map[string]*corev1.Pod{"bestEffort": bestEffort, "burstable": burstable, "job": job, "high": high, "low": low}
			for name, want := range tc.pods {
				if got := quota.Matches(tc.spec, "", "pods", all[name]); got != want {
					t.Errorf("%s: Matches = %v, want %v", name, got, want)
				}
			}
		})
	}
	t.Run("a scoped quota counts no other kind", func(t *testing.T) {
		cm := &corev1.ConfigMap{}
		if quota.Matches(scopes("NotTerminating"), "", "configmaps", cm) {
			t.Error("a scoped quota matched a ConfigMap")
		}
		if !quota.Matches(&corev1.ResourceQuotaSpec{}, "", "configmaps", cm) {
			t.Error("a quota without scopes did not match a ConfigMap")
		}
	})
	t.Run("the QoS class set at create counts", func(t *testing.T) {
		p := proto.Clone(burstable).(*corev1.Pod)
		p.Status = &corev1.PodStatus{QosClass: "BestEffort"}
		if !quota.Matches(scopes("BestEffort"), "", "pods", p) {
			t.Error("status.qosClass BestEffort did not match BestEffort")
		}
	})
}
