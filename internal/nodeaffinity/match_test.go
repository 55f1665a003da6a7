package nodeaffinity

import (
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func req(key, op string, values ...string) *corev1.NodeSelectorRequirement {
	return &corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func exprs(rs ...*corev1.NodeSelectorRequirement) *corev1.NodeSelectorTerm {
	return &corev1.NodeSelectorTerm{MatchExpressions: rs}
}

func fields(rs ...*corev1.NodeSelectorRequirement) *corev1.NodeSelectorTerm {
	return &corev1.NodeSelectorTerm{MatchFields: rs}
}

func terms(ts ...*corev1.NodeSelectorTerm) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: ts}
}

var ssd = &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "ssd", Labels: map[string]string{"disk": "ssd", "cores": "16", "zone": "a"}}}

func TestMatch(t *testing.T) {
	cases := []struct {
		name string
		sel  *corev1.NodeSelector
		want bool
	}{
		{"a nil selector admits every node", nil, true},
		{"a selector without terms admits none", terms(), false},
		{"an empty term matches nothing", terms(&corev1.NodeSelectorTerm{}), false},
		{"In", terms(exprs(req("disk", "In", "ssd", "nvme"))), true},
		{"In, no match", terms(exprs(req("disk", "In", "nvme"))), false},
		{"In on a missing label", terms(exprs(req("gpu", "In", "yes"))), false},
		{"NotIn", terms(exprs(req("disk", "NotIn", "hdd"))), true},
		{"NotIn, the value", terms(exprs(req("zone", "NotIn", "a"))), false},
		{"NotIn on a missing label holds", terms(exprs(req("gpu", "NotIn", "yes"))), true},
		{"Exists", terms(exprs(req("disk", "Exists"))), true},
		{"Exists on a missing label", terms(exprs(req("gpu", "Exists"))), false},
		{"DoesNotExist", terms(exprs(req("disk", "DoesNotExist"))), false},
		{"DoesNotExist on a missing label", terms(exprs(req("gpu", "DoesNotExist"))), true},
		{"Gt", terms(exprs(req("cores", "Gt", "8"))), true},
		{"Gt, equal", terms(exprs(req("cores", "Gt", "16"))), false},
		{"Lt", terms(exprs(req("cores", "Lt", "32"))), true},
		{"Lt fails", terms(exprs(req("cores", "Lt", "2"))), false},
		{"Gt on a label that is no integer", terms(exprs(req("disk", "Gt", "1"))), false},
		{"Gt with a value that is no integer", terms(exprs(req("cores", "Gt", "x"))), false},
		{"Gt with two values", terms(exprs(req("cores", "Gt", "1", "2"))), false},
		{"Gt on a missing label", terms(exprs(req("gpu", "Gt", "1"))), false},
		{"an unknown operator", terms(exprs(req("disk", "Equals", "ssd"))), false},
		{"expressions of a term are ANDed", terms(exprs(req("zone", "Exists"), req("cores", "Gt", "2"))), true},
		{"one failing expression fails the term", terms(exprs(req("zone", "Exists"), req("cores", "Lt", "2"))), false},
		{"terms are ORed", terms(exprs(req("disk", "In", "nvme")), exprs(req("disk", "In", "ssd"))), true},
		{"matchFields metadata.name In", terms(fields(req("metadata.name", "In", "ssd"))), true},
		{"matchFields metadata.name In, another node", terms(fields(req("metadata.name", "In", "hdd"))), false},
		{"matchFields metadata.name NotIn", terms(fields(req("metadata.name", "NotIn", "hdd"))), true},
		{"matchFields metadata.name NotIn, this node", terms(fields(req("metadata.name", "NotIn", "ssd"))), false},
		{"matchFields with Exists is no field operator", terms(fields(req("metadata.name", "Exists"))), false},
		{"matchFields on another field", terms(fields(req("metadata.uid", "NotIn", "x"))), false},
		{"expressions and fields both apply", terms(&corev1.NodeSelectorTerm{
			MatchExpressions: []*corev1.NodeSelectorRequirement{req("disk", "In", "ssd")},
			MatchFields:      []*corev1.NodeSelectorRequirement{req("metadata.name", "In", "hdd")},
		}), false},
		{"a second term by name", terms(exprs(req("zone", "In", "b")), fields(req("metadata.name", "In", "ssd"))), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Match(ssd, c.sel); got != c.want {
				t.Errorf("Match = %v, want %v", got, c.want)
			}
		})
	}
}

func TestMatchTermNil(t *testing.T) {
	if MatchTerm(ssd, nil) || MatchTerms(ssd, nil) {
		t.Error("a nil term or term list matches nothing")
	}
}

func TestPodMatches(t *testing.T) {
	required := func(sel *corev1.NodeSelector) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: sel}}
	}
	cases := []struct {
		name string
		spec *corev1.PodSpec
		want bool
	}{
		{"nothing required", &corev1.PodSpec{}, true},
		{"a nil spec", nil, true},
		{"selector matches", &corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}, true},
		{"selector does not match", &corev1.PodSpec{NodeSelector: map[string]string{"disk": "hdd"}}, false},
		{"selector on a missing label", &corev1.PodSpec{NodeSelector: map[string]string{"gpu": "yes"}}, false},
		{"node affinity without required terms", &corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}}, true},
		{"required with no terms", &corev1.PodSpec{Affinity: required(terms())}, false},
		{"selector and affinity both apply", &corev1.PodSpec{
			NodeSelector: map[string]string{"cores": "4"},
			Affinity:     required(terms(exprs(req("disk", "Exists")))),
		}, false},
		{"selector and affinity both hold", &corev1.PodSpec{
			NodeSelector: map[string]string{"cores": "16"},
			Affinity:     required(terms(exprs(req("disk", "Exists")))),
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := PodMatches(ssd, c.spec); got != c.want {
				t.Errorf("PodMatches = %v, want %v", got, c.want)
			}
		})
	}
}
