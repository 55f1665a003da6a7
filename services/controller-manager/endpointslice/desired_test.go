package endpointslice

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// testPod is a pod of testSvc on node-a with IP ip, Running and ready.
func testPod(name, ip string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Namespace: "ns", Name: name, Uid: name + "-uid", Labels: map[string]string{"app": "web"}},
		Spec: &corev1.PodSpec{NodeName: "node-a", Containers: []*corev1.Container{{Name: "c", Ports: []*corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080}, {Name: "dns", ContainerPort: 5353, Protocol: "UDP"},
		}}}},
		Status: &corev1.PodStatus{Phase: "Running", PodIp: ip, Conditions: []*corev1.PodCondition{{Type: "Ready", Status: "True"}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func notReady(p *corev1.Pod)    { p.Status.Conditions[0].Status = "False" }
func terminating(p *corev1.Pod) { p.Metadata.DeletionTimestamp = timestamppb.Now() }

var nodeA = &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{LabelTopologyZone: "z1"}}}

func nodes(name string) (*corev1.Node, bool) {
	if name == "node-a" {
		return nodeA, true
	}
	return nil, false
}

// TestEndpointConditions: ready, serving and terminating as Kubernetes
// sets them, with and without publishNotReadyAddresses.
func TestEndpointConditions(t *testing.T) {
	cases := []struct {
		name            string
		pod             *corev1.Pod
		publishNotReady bool
		want            string // ready serving terminating, as "rst" with "-" for false
	}{
		{"ready", testPod("p", "10.0.0.1"), false, "rs-"},
		{"not ready", testPod("p", "10.0.0.1", notReady), false, "---"},
		{"ready, terminating", testPod("p", "10.0.0.1", terminating), false, "-st"},
		{"not ready, terminating", testPod("p", "10.0.0.1", notReady, terminating), false, "--t"},
		{"not ready, published", testPod("p", "10.0.0.1", notReady), true, "r--"},
		{"terminating, published", testPod("p", "10.0.0.1", notReady, terminating), true, "r-t"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := proto.Clone(testSvc).(*corev1.Service)
			svc.Spec.PublishNotReadyAddresses = tc.publishNotReady
			ep := podToEndpoint(tc.pod, nodeA, svc, []string{"10.0.0.1"})
			c := ep.GetConditions()
			got := []byte("---")
			if c.GetReady() {
				got[0] = 'r'
			}
			if c.GetServing() {
				got[1] = 's'
			}
			if c.GetTerminating() {
				got[2] = 't'
			}
			if string(got) != tc.want || c.Ready == nil || c.Serving == nil || c.Terminating == nil {
				t.Errorf("conditions %s (%v), want %s, all three set", got, c, tc.want)
			}
		})
	}
}

// TestDesiredEndpoints: which pods are endpoints, and their port sets.
func TestDesiredEndpoints(t *testing.T) {
	svcWith := func(publish bool, ports ...*corev1.ServicePort) *corev1.Service {
		svc := proto.Clone(testSvc).(*corev1.Service)
		svc.Spec.Ports = ports
		svc.Spec.PublishNotReadyAddresses = publish
		return svc
	}
	named := func(name, target, protocol string) *corev1.ServicePort {
		return &corev1.ServicePort{Name: name, Port: 80, Protocol: protocol, TargetPort: &metav1.IntOrString{Value: &metav1.IntOrString_StrVal{StrVal: target}}}
	}
	numbered := &corev1.ServicePort{Name: "n", Port: 80, TargetPort: &metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: 9000}}}
	unset := &corev1.ServicePort{Name: "u", Port: 81}
	cases := []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		want string // "portset=pods" sorted, ";"-separated
	}{
		{"number, unset (the port), name", svcWith(false, numbered, unset, named("h", "http", "")),
			[]*corev1.Pod{testPod("a", "10.0.0.1")}, `"h"/"TCP"/8080/-,"n"/"TCP"/9000/-,"u"/"TCP"/81/-=a`},
		{"a name of another protocol does not resolve", svcWith(false, named("d", "dns", "TCP")),
			[]*corev1.Pod{testPod("a", "10.0.0.1")}, `=a`},
		{"a name with its protocol resolves", svcWith(false, named("d", "dns", "UDP")),
			[]*corev1.Pod{testPod("a", "10.0.0.1")}, `"d"/"UDP"/5353/-=a`},
		{"pods left out: no IP, finished, IPv6 only", svcWith(false, numbered), []*corev1.Pod{
			testPod("a", "10.0.0.1"), testPod("noip", ""),
			testPod("done", "10.0.0.2", func(p *corev1.Pod) { p.Status.Phase = "Succeeded" }),
			testPod("failed", "10.0.0.3", func(p *corev1.Pod) { p.Status.Phase = "Failed" }),
			testPod("v6", "fd00::1"),
		}, `"n"/"TCP"/9000/-=a`},
		{"a pod on an unknown node is left out", svcWith(false, numbered), []*corev1.Pod{
			testPod("a", "10.0.0.1"), testPod("lost", "10.0.0.2", func(p *corev1.Pod) { p.Spec.NodeName = "gone" }),
		}, `"n"/"TCP"/9000/-=a`},
		{"unless not-ready addresses are published", svcWith(true, numbered), []*corev1.Pod{
			testPod("a", "10.0.0.1"), testPod("lost", "10.0.0.2", func(p *corev1.Pod) { p.Spec.NodeName = "gone" }),
		}, `"n"/"TCP"/9000/-=a,lost`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := desiredEndpoints(tc.svc, tc.pods, nodes)
			var parts []string
			for key, g := range d.groups {
				var names []string
				for _, ep := range g.endpoints {
					names = append(names, ep.GetTargetRef().GetName())
				}
				slices.Sort(names)
				parts = append(parts, key+"="+strings.Join(names, ","))
			}
			slices.Sort(parts)
			if got := strings.Join(parts, ";"); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestEndpointFields: address, node, zone, target and hostname.
func TestEndpointFields(t *testing.T) {
	p := testPod("a", "10.0.0.1", func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "a-host", "web" })
	ep := podToEndpoint(p, nodeA, testSvc, ipv4Addresses(p.GetStatus()))
	if ep.GetHostname() != "a-host" || ep.GetZone() != "z1" || ep.GetNodeName() != "node-a" ||
		strings.Join(ep.GetAddresses(), ",") != "10.0.0.1" ||
		!proto.Equal(ep.GetTargetRef(), &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "a", Uid: "a-uid"}) {
		t.Errorf("endpoint %v", ep)
	}
	p.Spec.Subdomain = "other"
	if ep := podToEndpoint(p, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "node-a"}}, testSvc, []string{"10.0.0.1"}); ep.Hostname != nil || ep.Zone != nil {
		t.Errorf("hostname %v and zone %v set for a pod of another subdomain on a node without zone", ep.Hostname, ep.Zone)
	}
}
