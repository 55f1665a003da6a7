package deployment

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func webTemplate(image string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
		Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web", Image: image}}},
	}
}

func TestPodTemplateHash(t *testing.T) {
	one, two := int32(1), int32(2)
	base := PodTemplateHash(webTemplate("nginx:1.27"), nil)

	// Pinned: a change here renames every ReplicaSet of every Deployment
	// on upgrade (each would roll out again).
	if base != "64d4bcdff9" {
		t.Errorf("hash of the reference template = %q, want %q", base, "64d4bcdff9")
	}
	if got := PodTemplateHash(webTemplate("nginx:1.27"), &one); got != "76b9b7786b" {
		t.Errorf("hash with collisionCount 1 = %q, want %q", got, "76b9b7786b")
	}

	for _, tc := range []struct {
		name      string
		template  *corev1.PodTemplateSpec
		collision *int32
		same      bool
	}{
		{"the same template", webTemplate("nginx:1.27"), nil, true},
		{"another image", webTemplate("nginx:1.28"), nil, false},
		{"collisionCount 1", webTemplate("nginx:1.27"), &one, false},
		{"collisionCount 2", webTemplate("nginx:1.27"), &two, false},
		{"another label", func() *corev1.PodTemplateSpec {
			t := webTemplate("nginx:1.27")
			t.Metadata.Labels["track"] = "canary"
			return t
		}(), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PodTemplateHash(tc.template, tc.collision)
			if (got == base) != tc.same {
				t.Errorf("hash %q vs reference %q: same = %v, want %v", got, base, got == base, tc.same)
			}
			if strings.Trim(got, safeAlphabet) != "" || got == "" {
				t.Errorf("hash %q has characters outside %q", got, safeAlphabet)
			}
		})
	}
}

// TestPodTemplateHashStable hashes copies built with their labels inserted
// in different orders: map order must not matter.
func TestPodTemplateHashStable(t *testing.T) {
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	want := ""
	for i := range 20 {
		tm := webTemplate("nginx")
		tm.Metadata.Labels = map[string]string{}
		for j := range keys {
			k := keys[(i+j)%len(keys)]
			tm.Metadata.Labels[k] = k + "-value"
		}
		got := PodTemplateHash(proto.Clone(tm).(*corev1.PodTemplateSpec), nil)
		if want == "" {
			want = got
		}
		if got != want {
			t.Fatalf("copy %d hashes to %q, the first to %q", i, got, want)
		}
	}
}

func TestEqualIgnoreHash(t *testing.T) {
	withHash := webTemplate("nginx:1.27")
	withHash.Metadata.Labels[PodTemplateHashLabel] = "abc"
	if !EqualIgnoreHash(webTemplate("nginx:1.27"), withHash) {
		t.Error("templates differing only in pod-template-hash are not equal")
	}
	if EqualIgnoreHash(webTemplate("nginx:1.27"), webTemplate("nginx:1.28")) {
		t.Error("templates with different images are equal")
	}
	if _, ok := withHash.Metadata.Labels[PodTemplateHashLabel]; !ok {
		t.Error("EqualIgnoreHash changed its argument")
	}
}
