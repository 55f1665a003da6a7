package informer

import (
	"slices"
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func pod(ns, name, node, rv string, labels map[string]string, owners ...string) *corev1.Pod {
	m := &metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv, Labels: labels}
	for _, o := range owners {
		m.OwnerReferences = append(m.OwnerReferences, &metav1.OwnerReference{Uid: o})
	}
	return &corev1.Pod{Metadata: m, Spec: &corev1.PodSpec{NodeName: node}}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.GetMetadata().GetNamespace()+"/"+p.GetMetadata().GetName())
	}
	return out
}

func TestStoreIndexesFollowChanges(t *testing.T) {
	s := newStore[*corev1.Pod]()
	s.put(pod("a", "p1", "n1", "1", map[string]string{"app": "web"}, "rs1"))
	s.put(pod("a", "p2", "n2", "2", map[string]string{"app": "db"}, "rs1", "rs2"))
	s.put(pod("b", "p3", "", "3", map[string]string{"app": "web"}))
	s.addIndex(IndexNodeName, PodNodeName) // indexes what is there already

	cases := []struct {
		index, value string
		want         []string
	}{
		{IndexNamespace, "a", []string{"a/p1", "a/p2"}},
		{IndexOwnerUID, "rs1", []string{"a/p1", "a/p2"}},
		{IndexOwnerUID, "rs2", []string{"a/p2"}},
		{IndexLabel, "app=web", []string{"a/p1", "b/p3"}},
		{IndexNodeName, "", []string{"b/p3"}},
		{IndexNodeName, "n2", []string{"a/p2"}},
	}
	for _, tc := range cases {
		if got := names(s.ByIndex(tc.index, tc.value)); !slices.Equal(got, tc.want) {
			t.Errorf("ByIndex(%s, %q) = %v, want %v", tc.index, tc.value, got, tc.want)
		}
	}

	// An update moves the object between index values; a removal drops it.
	old, existed := s.put(pod("a", "p1", "n2", "4", map[string]string{"app": "db"}))
	if !existed || old.GetMetadata().GetResourceVersion() != "1" {
		t.Errorf("put returned %v, %v; want the replaced version 1", old, existed)
	}
	s.remove("a/p2")
	after := []struct {
		index, value string
		want         []string
	}{
		{IndexOwnerUID, "rs1", nil},
		{IndexLabel, "app=web", []string{"b/p3"}},
		{IndexLabel, "app=db", []string{"a/p1"}},
		{IndexNodeName, "n2", []string{"a/p1"}},
		{IndexNodeName, "n1", nil},
	}
	for _, tc := range after {
		if got := names(s.ByIndex(tc.index, tc.value)); !slices.Equal(got, tc.want) {
			t.Errorf("after changes, ByIndex(%s, %q) = %v, want %v", tc.index, tc.value, got, tc.want)
		}
	}
	if s.Len() != 2 {
		t.Errorf("Len = %d, want 2", s.Len())
	}
}

func TestAddIndexTwiceKeepsTheFirst(t *testing.T) {
	inf := New[*corev1.Pod](noSource{}, Options{})
	inf.AddIndex(IndexNodeName, PodNodeName)
	inf.AddIndex(IndexNodeName, func(*corev1.Pod) []string { return []string{"other"} })
	inf.store.put(pod("a", "p", "n1", "1", nil))
	if got := names(inf.Store().ByIndex(IndexNodeName, "n1")); !slices.Equal(got, []string{"a/p"}) {
		t.Errorf("ByIndex(nodeName, n1) = %v, want [a/p]", got)
	}
}

// noSource is a Source that is never read: only the informer's store is used.
type noSource struct{ Source[*corev1.Pod] }

func (noSource) Resource() string { return "pods" }
