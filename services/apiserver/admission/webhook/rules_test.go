package webhook

import (
	"testing"

	admissionregistrationv1 "skiff.dev/proto/admissionregistration/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func rule(ops, groups, versions, resources []string, scope string) *admissionregistrationv1.RuleWithOperations {
	return &admissionregistrationv1.RuleWithOperations{Operations: ops, ApiGroups: groups, ApiVersions: versions, Resources: resources, Scope: scope}
}

func list(s ...string) []string { return s }

func TestMatchRule(t *testing.T) {
	createPod := &Request{Operation: "CREATE", Group: "", Version: "v1", Resource: "pods", Namespaced: true}
	bindPod := &Request{Operation: "CREATE", Group: "", Version: "v1", Resource: "pods", Subresource: "binding", Namespaced: true}
	podStatus := &Request{Operation: "UPDATE", Group: "", Version: "v1", Resource: "pods", Subresource: "status", Namespaced: true}
	scaleDeploy := &Request{Operation: "UPDATE", Group: "apps", Version: "v1", Resource: "deployments", Subresource: "scale", Namespaced: true}
	createNode := &Request{Operation: "CREATE", Group: "", Version: "v1", Resource: "nodes"}
	cases := []struct {
		name string
		rule *admissionregistrationv1.RuleWithOperations
		req  *Request
		want bool
	}{
		{"exact", rule(list("CREATE"), list(""), list("v1"), list("pods"), "*"), createPod, true},
		{"other operation", rule(list("UPDATE", "DELETE"), list(""), list("v1"), list("pods"), "*"), createPod, false},
		{"any operation", rule(list("*"), list(""), list("v1"), list("pods"), ""), createPod, true},
		{"other group", rule(list("*"), list("apps"), list("v1"), list("pods"), "*"), createPod, false},
		{"any group", rule(list("*"), list("*"), list("v1"), list("pods"), "*"), createPod, true},
		{"other version", rule(list("*"), list(""), list("v2"), list("pods"), "*"), createPod, false},
		{"any version", rule(list("*"), list(""), list("*"), list("pods"), "*"), createPod, true},
		{"other resource", rule(list("*"), list("*"), list("*"), list("configmaps"), "*"), createPod, false},
		{"resource does not match its subresources", rule(list("*"), list("*"), list("*"), list("pods"), "*"), bindPod, false},
		{"star is every resource, no subresources", rule(list("*"), list("*"), list("*"), list("*"), "*"), bindPod, false},
		{"star matches a resource", rule(list("*"), list("*"), list("*"), list("*"), "*"), createPod, true},
		{"star/star is everything", rule(list("*"), list("*"), list("*"), list("*/*"), "*"), bindPod, true},
		{"named subresource", rule(list("CREATE"), list(""), list("v1"), list("pods/binding"), "*"), bindPod, true},
		{"named subresource, not the resource", rule(list("CREATE"), list(""), list("v1"), list("pods/binding"), "*"), createPod, false},
		{"res/star is the resource and its subresources", rule(list("*"), list(""), list("v1"), list("pods/*"), "*"), createPod, true},
		{"res/star and a subresource", rule(list("*"), list(""), list("v1"), list("pods/*"), "*"), podStatus, true},
		{"star/sub", rule(list("UPDATE"), list("*"), list("*"), list("*/scale"), "*"), scaleDeploy, true},
		{"star/sub, other subresource", rule(list("UPDATE"), list("*"), list("*"), list("*/scale"), "*"), podStatus, false},
		{"scope Namespaced", rule(list("*"), list("*"), list("*"), list("*"), "Namespaced"), createPod, true},
		{"scope Namespaced, cluster object", rule(list("*"), list("*"), list("*"), list("*"), "Namespaced"), createNode, false},
		{"scope Cluster", rule(list("*"), list("*"), list("*"), list("*"), "Cluster"), createNode, true},
		{"scope Cluster, namespaced object", rule(list("*"), list("*"), list("*"), list("*"), "Cluster"), createPod, false},
		{"several resources", rule(list("*"), list("*"), list("*"), list("configmaps", "pods"), "*"), createPod, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := MatchRule(tc.rule, tc.req); got != tc.want {
				t.Errorf("MatchRule(%v, %+v) = %v, want %v", tc.rule, tc.req, got, tc.want)
			}
		})
	}
}

func TestHookSelectors(t *testing.T) {
	every := []*admissionregistrationv1.RuleWithOperations{rule(list("*"), list("*"), list("*"), list("*"), "*")}
	team := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	hook := func(nsSel, objSel *metav1.LabelSelector) *Hook {
		return CompileValidating([]*admissionregistrationv1.ValidatingWebhookConfiguration{{
			Metadata: &metav1.ObjectMeta{Name: "c"},
			Webhooks: []*admissionregistrationv1.ValidatingWebhook{{Name: "w", Rules: every, NamespaceSelector: nsSel, ObjectSelector: objSel}},
		}})[0]
	}
	pod := &Request{Operation: "CREATE", Version: "v1", Resource: "pods", Namespaced: true}
	node := &Request{Operation: "CREATE", Version: "v1", Resource: "nodes"}
	namespace := &Request{Operation: "CREATE", Version: "v1", Resource: "namespaces"}
	teamA := func() (map[string]string, error) { return map[string]string{"team": "a"}, nil }
	teamB := func() (map[string]string, error) { return map[string]string{"team": "b"}, nil }
	unread := func() (map[string]string, error) {
		t.Error("the namespace's labels were read, but the selector does not need them")
		return nil, nil
	}
	cases := []struct {
		name   string
		hook   *Hook
		req    *Request
		obj    Object
		labels func() (map[string]string, error)
		want   bool
	}{
		{"no selectors", hook(nil, nil), pod, Object{}, unread, true},
		{"namespace selector matches", hook(team, nil), pod, Object{}, teamA, true},
		{"namespace selector does not match", hook(team, nil), pod, Object{}, teamB, false},
		{"namespace selector ignored for cluster-scoped objects", hook(team, nil), node, Object{}, unread, true},
		{"a Namespace is judged by its own labels", hook(team, nil), namespace, Object{IsNamespace: true, Labels: map[string]string{"team": "a"}}, unread, true},
		{"a Namespace without them", hook(team, nil), namespace, Object{IsNamespace: true}, unread, false},
		{"object selector matches", hook(nil, team), pod, Object{Labels: map[string]string{"team": "a"}}, unread, true},
		{"object selector matches the old object", hook(nil, team), pod, Object{OldLabels: map[string]string{"team": "a"}}, unread, true},
		{"object selector does not match", hook(nil, team), pod, Object{Labels: map[string]string{"team": "b"}}, unread, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.hook.Matches(tc.req, tc.obj, tc.labels)
			if err != nil || got != tc.want {
				t.Errorf("Matches = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestCompileOrderAndDefaults(t *testing.T) {
	timeout := int32(3)
	hooks := CompileMutating([]*admissionregistrationv1.MutatingWebhookConfiguration{
		{Metadata: &metav1.ObjectMeta{Name: "b"}, Webhooks: []*admissionregistrationv1.MutatingWebhook{{Name: "b1", FailurePolicy: "Ignore", TimeoutSeconds: &timeout}}},
		{Metadata: &metav1.ObjectMeta{Name: "a"}, Webhooks: []*admissionregistrationv1.MutatingWebhook{{Name: "a1"}, {Name: "a2"}}},
	})
	var names []string
	for _, h := range hooks {
		names = append(names, h.Name)
	}
	if len(names) != 3 || names[0] != "a1" || names[1] != "a2" || names[2] != "b1" {
		t.Fatalf("order = %v, want a1 a2 b1 (configurations by name)", names)
	}
	if hooks[0].FailOpen || hooks[0].Timeout != DefaultTimeout {
		t.Errorf("a1: failOpen %v timeout %v, want Fail and %v", hooks[0].FailOpen, hooks[0].Timeout, DefaultTimeout)
	}
	if !hooks[2].FailOpen || hooks[2].Timeout.Seconds() != 3 {
		t.Errorf("b1: failOpen %v timeout %v, want Ignore and 3s", hooks[2].FailOpen, hooks[2].Timeout)
	}
	bad := CompileValidating([]*admissionregistrationv1.ValidatingWebhookConfiguration{{
		Metadata: &metav1.ObjectMeta{Name: "c"},
		Webhooks: []*admissionregistrationv1.ValidatingWebhook{{Name: "w", Rules: []*admissionregistrationv1.RuleWithOperations{rule(list("*"), list("*"), list("*"), list("*"), "*")},
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{{Key: "k", Operator: "Gt"}}}}},
	}})[0]
	if ok, err := bad.Matches(&Request{Operation: "CREATE", Resource: "pods"}, Object{}, nil); !ok || err == nil {
		t.Errorf("a webhook with a bad selector: Matches = %v, %v; want true and the selector's error (its failure policy decides)", ok, err)
	}
}
