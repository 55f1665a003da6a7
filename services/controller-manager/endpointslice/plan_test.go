package endpointslice

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// The plan's tables speak of endpoints by pod name ("p1"; "p1!" is p1 not
// ready) and of slices by name and endpoints ("a:p1,p2").

var testSvc = &corev1.Service{
	Metadata: &metav1.ObjectMeta{Namespace: "ns", Name: "web", Uid: "svc-uid"},
	Spec: &corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"},
		Ports:    []*corev1.ServicePort{{Name: "http", Port: 80, Protocol: "TCP"}},
	},
}

var testPorts = []*discoveryv1.EndpointPort{{Name: proto.String("http"), Protocol: proto.String("TCP"), Port: proto.Int32(80)}}

func testEndpoint(spec string) *discoveryv1.Endpoint {
	name, notReady := strings.CutSuffix(spec, "!")
	return &discoveryv1.Endpoint{
		Addresses:  []string{"10.0.0." + strings.TrimPrefix(name, "p")},
		Conditions: &discoveryv1.EndpointConditions{Ready: proto.Bool(!notReady), Serving: proto.Bool(!notReady), Terminating: proto.Bool(false)},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: name, Uid: name + "-uid"},
	}
}

func wantOf(specs ...string) desired {
	g := &portGroup{ports: testPorts, endpoints: map[string]*discoveryv1.Endpoint{}}
	for _, s := range specs {
		ep := testEndpoint(s)
		g.endpoints[endpointKey(ep)] = ep
	}
	if len(specs) == 0 {
		return desired{groups: map[string]*portGroup{}}
	}
	return desired{groups: map[string]*portGroup{portSetKey(testPorts): g}}
}

// testSlice parses "name:p1,p2!" into a slice of testSvc.
func testSlice(spec string) *discoveryv1.EndpointSlice {
	name, eps, _ := strings.Cut(spec, ":")
	s := newSlice(testSvc, testPorts)
	s.Metadata.Name = name
	s.Metadata.Uid = name + "-uid"
	s.Metadata.ResourceVersion = "7"
	if eps == "" {
		s.Ports = nil // a placeholder
	}
	for _, e := range strings.Split(eps, ",") {
		if e != "" {
			s.Endpoints = append(s.Endpoints, testEndpoint(e))
		}
	}
	return s
}

// describe renders slices as "name:p1,p2!" ("+" for a new slice's name).
func describe(ss []*discoveryv1.EndpointSlice) string {
	var out []string
	for _, s := range ss {
		name := s.GetMetadata().GetName()
		if name == "" {
			name = "+"
		}
		var eps []string
		for _, ep := range s.GetEndpoints() {
			e := ep.GetTargetRef().GetName()
			if !ep.GetConditions().GetReady() {
				e += "!"
			}
			eps = append(eps, e)
		}
		out = append(out, name+":"+strings.Join(eps, ","))
	}
	return strings.Join(out, " ")
}

func pods(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i+1)
	}
	return out
}

func TestPlan(t *testing.T) {
	cases := []struct {
		name                   string
		want                   desired
		existing               []string
		max                    int
		create, update, delete string
	}{
		{name: "new service", want: wantOf("p1", "p2", "p3"), create: "+:p1,p2,p3"},
		{name: "nothing changed", want: wantOf("p1", "p2"), existing: []string{"a:p2,p1"}},
		{name: "a condition changed: updated in place, in its order", want: wantOf("p1!", "p2"), existing: []string{"a:p2,p1"}, update: "a:p2,p1!"},
		{name: "one gone, one new: the same slice", want: wantOf("p1", "p3"), existing: []string{"a:p1,p2"}, update: "a:p1,p3"},
		{name: "new endpoints go to the unchanged slice they fill best", max: 4,
			want: wantOf("p1", "p2", "p3", "p4", "p5", "p6", "p7"), existing: []string{"a:p1,p2", "b:p3,p4,p5"}, update: "a:p1,p2,p6,p7"},
		{name: "changed slices are filled first, the fullest first", max: 3,
			want: wantOf("p1!", "p3!", "p4", "p5", "p6"), existing: []string{"a:p1", "b:p2,p3,p6"}, update: "b:p3!,p6,p4 a:p1!,p5"},
		{name: "all gone: the slice becomes the placeholder", want: wantOf(), existing: []string{"a:p1,p2"}, update: "a:"},
		{name: "the placeholder stays", want: wantOf(), existing: []string{"a:"}},
		{name: "no endpoints, no slice: a placeholder", want: wantOf(), create: "+:"},
		{name: "the placeholder is reused", want: wantOf("p1"), existing: []string{"a:"}, update: "a:p1"},
		{name: "an emptied slice is deleted", want: wantOf("p1"), existing: []string{"a:p1", "b:p2"}, delete: "b:p2"},
		{name: "250 endpoints", max: 100, want: wantOf(pods("p", 250)...), create: "+:100 +:100 +:50"},
		{name: "duplicate endpoints across slices kept once", want: wantOf("p1", "p2"), existing: []string{"a:p1,p2", "b:p2"}, delete: "b:p2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var existing []*discoveryv1.EndpointSlice
			for _, e := range tc.existing {
				existing = append(existing, testSlice(e))
			}
			if tc.max == 0 {
				tc.max = 100
			}
			p := plan(testSvc, tc.want, existing, tc.max)
			check := func(what, want string, got []*discoveryv1.EndpointSlice) {
				t.Helper()
				d := describe(got)
				if strings.Contains(want, ":100") || strings.Contains(want, ":50") {
					d = sizes(got)
				}
				if d != want {
					t.Errorf("%s: %q, want %q", what, d, want)
				}
			}
			check("create", tc.create, p.Create)
			check("update", tc.update, p.Update)
			check("delete", tc.delete, p.Delete)
			for _, s := range p.Update {
				if s.GetMetadata().GetResourceVersion() != "7" {
					t.Errorf("update of %s without the stored resourceVersion", s.GetMetadata().GetName())
				}
			}
		})
	}
}

func sizes(ss []*discoveryv1.EndpointSlice) string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("+:%d", len(s.GetEndpoints())))
	}
	return strings.Join(out, " ")
}

// TestPlanForeignSlices: a slice of an older Service of the same name (not
// owned by this one) is deleted, not reused; a slice whose port set no pod
// has any more is reused for the new port set; labels that differ from the
// Service's are updated.
func TestPlanForeignSlices(t *testing.T) {
	old := testSlice("old:p1")
	old.Metadata.OwnerReferences[0].Uid = "older-uid"
	p := plan(testSvc, wantOf("p1"), []*discoveryv1.EndpointSlice{old}, 100)
	if describe(p.Create) != "+:p1" || describe(p.Delete) != "old:p1" || len(p.Update) != 0 {
		t.Errorf("foreign slice: create %q update %q delete %q, want +:p1, -, old:p1", describe(p.Create), describe(p.Update), describe(p.Delete))
	}

	other := testSlice("a:p1")
	other.Ports[0].Port = proto.Int32(81)
	p = plan(testSvc, wantOf("p1"), []*discoveryv1.EndpointSlice{other}, 100)
	if len(p.Create) != 0 || len(p.Delete) != 0 || describe(p.Update) != "a:p1" || p.Update[0].GetPorts()[0].GetPort() != 80 {
		t.Errorf("port change: create %q update %q delete %q, want a:p1 updated to port 80", describe(p.Create), describe(p.Update), describe(p.Delete))
	}

	relabelled := testSlice("a:p1")
	relabelled.Metadata.Labels["tier"] = "old"
	p = plan(testSvc, wantOf("p1"), []*discoveryv1.EndpointSlice{relabelled}, 100)
	if describe(p.Update) != "a:p1" || p.Update[0].GetMetadata().GetLabels()["tier"] != "" {
		t.Errorf("labels: update %q with labels %v, want a:p1 without tier", describe(p.Update), p.Update)
	}
}

func TestSliceLabels(t *testing.T) {
	svc := proto.Clone(testSvc).(*corev1.Service)
	svc.Metadata.Labels = map[string]string{"tier": "web", LabelServiceName: "spoof", LabelManagedBy: "spoof"}
	svc.Spec.ClusterIp = ClusterIPNone
	got, changed := sliceLabels(nil, svc)
	want := map[string]string{"tier": "web", LabelServiceName: "web", LabelManagedBy: ControllerName, LabelHeadless: ""}
	if !changed || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("labels %v (changed %v), want %v", got, changed, want)
	}
	if _, changed := sliceLabels(want, svc); changed {
		t.Errorf("the same labels reported changed")
	}
	svc.Spec.ClusterIp = ""
	if got, _ := sliceLabels(nil, svc); got[LabelHeadless] != "" || len(got) != 3 {
		t.Errorf("a Service whose clusterIP is not allocated yet labelled headless: %v", got)
	}
}
