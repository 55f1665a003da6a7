package history

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

var dsKind = Kind{APIVersion: "apps/v1", Kind: "DaemonSet"}

func parent(name string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ApiVersion: "apps/v1", Kind: "DaemonSet", Metadata: &metav1.ObjectMeta{Name: name, Namespace: "default", Uid: "uid-" + name}}
}

func rev(name string, n int64, created time.Time, data string) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{
		Metadata: &metav1.ObjectMeta{Name: name, CreationTimestamp: timestamppb.New(created)},
		Revision: n,
		Data:     []byte(data),
	}
}

func names(rs []*appsv1.ControllerRevision) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.GetMetadata().GetName())
	}
	return out
}

func TestNewControllerRevision(t *testing.T) {
	p := parent("web")
	cr := NewControllerRevision(p, dsKind, map[string]string{"app": "web"}, []byte(`{"a":1}`), 3, nil)
	hash := HashControllerRevision(cr, nil)
	if got, want := cr.GetMetadata().GetName(), "web-"+hash; got != want {
		t.Errorf("name = %q, want %q", got, want)
	}
	if cr.GetMetadata().GetNamespace() != "default" || cr.GetRevision() != 3 {
		t.Errorf("namespace/revision = %q/%d", cr.GetMetadata().GetNamespace(), cr.GetRevision())
	}
	if l := cr.GetMetadata().GetLabels(); l["app"] != "web" || l[ControllerRevisionHashLabel] != hash {
		t.Errorf("labels = %v", l)
	}
	refs := cr.GetMetadata().GetOwnerReferences()
	if len(refs) != 1 || !refs[0].GetController() || refs[0].GetUid() != "uid-web" || refs[0].GetKind() != "DaemonSet" || refs[0].GetApiVersion() != "apps/v1" {
		t.Errorf("ownerReferences = %v", refs)
	}
	for _, c := range hash {
		if !containsRune(safeAlphabet, c) {
			t.Errorf("hash %q has %q outside the safe alphabet", hash, c)
		}
	}
}

func containsRune(s string, r rune) bool {
	for _, c := range s {
		if c == r {
			return true
		}
	}
	return false
}

func TestHashControllerRevision(t *testing.T) {
	a := &appsv1.ControllerRevision{Data: []byte(`{"spec":1}`)}
	b := &appsv1.ControllerRevision{Data: []byte(`{"spec":2}`)}
	one, two := int32(1), int32(2)
	cases := []struct {
		name  string
		x, y  *appsv1.ControllerRevision
		px    *int32
		py    *int32
		equal bool
	}{
		{"same data, no probe", a, proto.Clone(a).(*appsv1.ControllerRevision), nil, nil, true},
		{"same data, same probe", a, a, &one, &one, true},
		{"different data", a, b, nil, nil, false},
		{"probe changes the hash", a, a, nil, &one, false},
		{"different probes", a, a, &one, &two, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hx, hy := HashControllerRevision(tc.x, tc.px), HashControllerRevision(tc.y, tc.py)
			if (hx == hy) != tc.equal {
				t.Errorf("hashes %q and %q: equal=%v, want %v", hx, hy, hx == hy, tc.equal)
			}
		})
	}
	// Kubernetes' value: FNV-32 of the bytes, decimal, safe-encoded.
	if got := HashControllerRevision(&appsv1.ControllerRevision{}, nil); got != SafeEncodeString("2166136261") {
		t.Errorf("hash of nothing = %q, want the safe encoding of FNV-32's offset basis", got)
	}
}

func TestControllerRevisionName(t *testing.T) {
	long := string(make([]byte, 300))
	if got := ControllerRevisionName(long, "h"); len(got) != 225 {
		t.Errorf("len = %d, want 223+2", len(got))
	}
	if got := ControllerRevisionName("web", "abc"); got != "web-abc" {
		t.Errorf("got %q", got)
	}
}

func TestEqualRevision(t *testing.T) {
	withHash := func(data, hash string) *appsv1.ControllerRevision {
		r := &appsv1.ControllerRevision{Data: []byte(data), Metadata: &metav1.ObjectMeta{Labels: map[string]string{}}}
		if hash != "" {
			r.Metadata.Labels[ControllerRevisionHashLabel] = hash
		}
		return r
	}
	cases := []struct {
		name string
		a, b *appsv1.ControllerRevision
		want bool
	}{
		{"both nil", nil, nil, true},
		{"one nil", withHash("x", ""), nil, false},
		{"same data, no hashes", withHash("x", ""), withHash("x", ""), true},
		{"same data, same hash", withHash("x", "h"), withHash("x", "h"), true},
		{"same data, other hashes", withHash("x", "h1"), withHash("x", "h2"), false},
		{"same data, one hash", withHash("x", "h1"), withHash("x", ""), true},
		{"other data", withHash("x", "h"), withHash("y", "h"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := EqualRevision(tc.a, tc.b); got != tc.want {
				t.Errorf("EqualRevision = %v, want %v", got, tc.want)
			}
		})
	}
	all := []*appsv1.ControllerRevision{withHash("x", "h"), withHash("y", "h"), withHash("x", "")}
	if got := FindEqualRevisions(all, withHash("x", "h")); len(got) != 2 {
		t.Errorf("FindEqualRevisions found %d, want 2", len(got))
	}
}

func TestSortAndNextRevision(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rs := []*appsv1.ControllerRevision{
		rev("c", 3, t0, ""),
		rev("b", 1, t0.Add(time.Second), ""),
		rev("a", 1, t0.Add(time.Second), ""),
		rev("z", 1, t0, ""),
		rev("d", 2, t0, ""),
	}
	SortControllerRevisions(rs)
	if got, want := names(rs), []string{"z", "a", "b", "d", "c"}; !equalStrings(got, want) {
		t.Errorf("sorted = %v, want %v", got, want)
	}
	if got := NextRevision(rs); got != 4 {
		t.Errorf("NextRevision = %d, want 4", got)
	}
	if got := NextRevision(nil); got != 1 {
		t.Errorf("NextRevision(nil) = %d, want 1", got)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestToTruncate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	five := []*appsv1.ControllerRevision{rev("r1", 1, t0, ""), rev("r2", 2, t0, ""), rev("r3", 3, t0, ""), rev("r4", 4, t0, ""), rev("r5", 5, t0, "")}
	cases := []struct {
		name  string
		live  map[string]bool
		limit int32
		want  []string
	}{
		{"under the limit", map[string]bool{"r5": true}, 10, nil},
		{"exactly at the limit", map[string]bool{"r5": true}, 4, nil},
		{"oldest go first", map[string]bool{"r5": true}, 2, []string{"r1", "r2"}},
		{"live ones stay however old", map[string]bool{"r1": true, "r5": true}, 1, []string{"r2", "r3"}},
		{"limit 0 keeps only live ones", map[string]bool{"r3": true}, 0, []string{"r1", "r2", "r4", "r5"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(ToTruncate(five, tc.live, tc.limit)); !equalStrings(got, tc.want) {
				t.Errorf("ToTruncate = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTemplatePatchRoundTrip(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{
		Metadata: &metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "x"}},
		Spec: &corev1.PodSpec{
			Containers:   []*corev1.Container{{Name: "c", Image: "nginx:1", Resources: &corev1.ResourceRequirements{Requests: map[string]string{"cpu": "100m"}}}},
			NodeSelector: map[string]string{"disk": "ssd"},
		},
	}
	data, err := TemplatePatch(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := TemplatePatch(proto.Clone(tmpl).(*corev1.PodTemplateSpec))
	if string(again) != string(data) {
		t.Errorf("the same template gave other bytes:\n%s\n%s", data, again)
	}
	if want := `"$patch":"replace"`; !containsString(string(data), want) {
		t.Errorf("data %s lacks %s", data, want)
	}
	got, err := TemplateFromPatch(data)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, tmpl) {
		t.Errorf("round trip:\n got %v\nwant %v", got, tmpl)
	}
	if _, err := TemplateFromPatch([]byte(`{"spec":{}}`)); err == nil {
		t.Error("data without a template decoded")
	}
}

func containsString(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
