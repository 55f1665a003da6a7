package replicaset

import (
	"strings"
	"testing"

	"skiff.dev/services/controller-manager/controllerutil"
)

func TestPodTemplate(t *testing.T) {
	rs := testRS(3, 0)
	rs.Spec.Template.Metadata.Annotations = map[string]string{"note": "x"}
	p := newPodTemplate(rs).pod()
	m := p.GetMetadata()
	if m.GetGenerateName() != "web-" || m.GetName() != "" || m.GetNamespace() != "ns" {
		t.Errorf("name %q generateName %q namespace %q", m.GetName(), m.GetGenerateName(), m.GetNamespace())
	}
	if m.GetLabels()["tier"] != "front" || m.GetAnnotations()["note"] != "x" {
		t.Errorf("labels %v annotations %v, want the template's", m.GetLabels(), m.GetAnnotations())
	}
	if p.GetSpec().GetContainers()[0].GetImage() != "nginx" {
		t.Errorf("spec %v, want the template's", p.GetSpec())
	}
	ref := controllerutil.ControllerOf(m)
	if ref == nil || ref.GetUid() != "rs1" || ref.GetName() != "web" || ref.GetKind() != "ReplicaSet" ||
		ref.GetApiVersion() != "apps/v1" || !ref.GetBlockOwnerDeletion() {
		t.Errorf("controller ref %v", ref)
	}
	// The template is copied: changing the ReplicaSet afterwards changes no pod.
	rs.Spec.Template.Metadata.Labels["tier"] = "changed"
	rs.Spec.Template.Spec.Containers[0].Image = "changed"
	if m.GetLabels()["tier"] != "front" || p.GetSpec().GetContainers()[0].GetImage() != "nginx" {
		t.Errorf("the pod shares the ReplicaSet's template")
	}
}

func TestPodPrefix(t *testing.T) {
	if got := podPrefix("web"); got != "web-" {
		t.Errorf("podPrefix(web) = %q", got)
	}
	long := strings.Repeat("a", 100)
	if got := podPrefix(long); len(got) != maxGeneratedNameLength {
		t.Errorf("podPrefix(100 chars) has %d chars, want %d", len(got), maxGeneratedNameLength)
	}
}
