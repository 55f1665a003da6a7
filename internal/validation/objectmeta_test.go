package validation_test

import (
	"strings"
	"testing"

	"skiff.dev/internal/field"
	"skiff.dev/internal/validation"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestObjectMeta(t *testing.T) {
	valid := func() *metav1.ObjectMeta {
		return &metav1.ObjectMeta{
			Name:        "web-0",
			Namespace:   "team-a",
			Labels:      map[string]string{"app": "web", "app.kubernetes.io/version": "1.2.3", "empty": ""},
			Annotations: map[string]string{"Example.com/Owner": "ops@example.com"},
			Finalizers:  []string{"kubernetes", "example.com/cleanup"},
		}
	}
	cases := []struct {
		name       string
		namespaced bool
		mutate     func(m *metav1.ObjectMeta)
		want       []string
	}{
		{"valid", true, func(m *metav1.ObjectMeta) {}, nil},
		{"name missing", true, func(m *metav1.ObjectMeta) { m.Name = "" }, []string{"metadata.name: Required value"}},
		{"name uppercase", true, func(m *metav1.ObjectMeta) { m.Name = "Web" }, []string{"metadata.name: Invalid value"}},
		{"name too long", true, func(m *metav1.ObjectMeta) { m.Name = strings.Repeat("a", 254) }, []string{"metadata.name: Invalid value"}},
		{"generateName ending in a dash", true, func(m *metav1.ObjectMeta) { m.GenerateName = "web-" }, nil},
		{"generateName invalid", true, func(m *metav1.ObjectMeta) { m.GenerateName = "Web-" }, []string{"metadata.generateName: Invalid value"}},
		{"generateName a lone dash", true, func(m *metav1.ObjectMeta) { m.GenerateName = "-" }, []string{"metadata.generateName: Invalid value"}},
		{"namespace missing", true, func(m *metav1.ObjectMeta) { m.Namespace = "" }, []string{"metadata.namespace: Required value"}},
		{"namespace not a DNS label", true, func(m *metav1.ObjectMeta) { m.Namespace = "team.a" }, []string{"metadata.namespace: Invalid value"}},
		{"namespace on a cluster-scoped kind", false, func(m *metav1.ObjectMeta) {}, []string{"metadata.namespace: Forbidden"}},
		{"generation negative", true, func(m *metav1.ObjectMeta) { m.Generation = -1 }, []string{"metadata.generation: Invalid value"}},
		{"label key invalid", true, func(m *metav1.ObjectMeta) { m.Labels["-app"] = "x" }, []string{"metadata.labels[-app]: Invalid value"}},
		{"label key prefix invalid", true, func(m *metav1.ObjectMeta) { m.Labels["Example.com/app"] = "x" }, []string{"metadata.labels[Example.com/app]: Invalid value"}},
		{"label key with two slashes", true, func(m *metav1.ObjectMeta) { m.Labels["a/b/c"] = "x" }, []string{"metadata.labels[a/b/c]: Invalid value"}},
		{"label value too long", true, func(m *metav1.ObjectMeta) { m.Labels["app"] = strings.Repeat("a", 64) }, []string{"metadata.labels[app]: Invalid value"}},
		{"label value with a space", true, func(m *metav1.ObjectMeta) { m.Labels["app"] = "my app" }, []string{"metadata.labels[app]: Invalid value"}},
		{"annotation key invalid", true, func(m *metav1.ObjectMeta) { m.Annotations["my annotation"] = "x" }, []string{"metadata.annotations[my annotation]: Invalid value"}},
		{"annotations too large", true, func(m *metav1.ObjectMeta) { m.Annotations["big"] = strings.Repeat("x", 256*1024) }, []string{"metadata.annotations: Too long"}},
		{"owner reference incomplete", true, func(m *metav1.ObjectMeta) { m.OwnerReferences = []*metav1.OwnerReference{{ApiVersion: "apps/"}} }, []string{
			"metadata.ownerReferences[0].apiVersion: Invalid value", "metadata.ownerReferences[0].kind: Invalid value",
			"metadata.ownerReferences[0].name: Invalid value", "metadata.ownerReferences[0].uid: Invalid value"}},
		{"two controller owners", true, func(m *metav1.ObjectMeta) {
			m.OwnerReferences = []*metav1.OwnerReference{
				{ApiVersion: "apps/v1", Kind: "ReplicaSet", Name: "a", Uid: "1", Controller: ptr(true)},
				{ApiVersion: "v1", Kind: "Node", Name: "b", Uid: "2", Controller: ptr(false)},
				{ApiVersion: "apps/v1", Kind: "ReplicaSet", Name: "c", Uid: "3", Controller: ptr(true)},
			}
		}, []string{"metadata.ownerReferences: Invalid value"}},
		{"finalizer not qualified", true, func(m *metav1.ObjectMeta) { m.Finalizers = []string{"cleanup"} }, []string{"metadata.finalizers[0]: Invalid value"}},
		{"finalizer malformed", true, func(m *metav1.ObjectMeta) { m.Finalizers = []string{"kubernetes", "example.com/clean up"} }, []string{"metadata.finalizers[1]: Invalid value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := valid()
			c.mutate(m)
			expectErrors(t, validation.ObjectMeta(m, c.namespaced, validation.NameIsDNSSubdomain, field.NewPath("metadata")), c.want)
		})
	}
}

func TestObjectMetaMessages(t *testing.T) {
	m := &metav1.ObjectMeta{Name: "web", Namespace: "a", Labels: map[string]string{"app": "my app", "Example.com/": "x"},
		OwnerReferences: []*metav1.OwnerReference{
			{ApiVersion: "v1", Kind: "A", Name: "a", Uid: "1", Controller: ptr(true)},
			{ApiVersion: "v1", Kind: "B", Name: "b", Uid: "2", Controller: ptr(true)},
		}}
	errs := validation.ObjectMeta(m, true, validation.NameIsDNSSubdomain, field.NewPath("metadata"))
	expectDetail(t, errs, "metadata.labels[app]", "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
	expectDetail(t, errs, "metadata.labels[Example.com/]", "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
	expectDetail(t, errs, "metadata.labels[Example.com/]", "name part must be non-empty")
	expectDetail(t, errs, "metadata.ownerReferences", `Only one reference can have Controller set to true. Found "true" in references for A/a and B/b`)

	ns := validation.NameIsDNSLabel("team.a")
	if len(ns) != 1 || ns[0] != "must not contain dots" {
		t.Errorf("NameIsDNSLabel(team.a) = %q", ns)
	}
}

func TestObjectMetaNilAndNoNameFn(t *testing.T) {
	expectErrors(t, validation.ObjectMeta(nil, false, nil, field.NewPath("metadata")), []string{"metadata.name: Required value"})
	expectErrors(t, validation.ObjectMeta(&metav1.ObjectMeta{Name: "ANY_name"}, false, nil, field.NewPath("metadata")), nil)
	expectErrors(t, validation.ObjectMetaUpdate(nil, nil, field.NewPath("metadata")), nil)
}
