package endpointslice_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/endpointslice"
	"skiff.dev/services/controller-manager/garbagecollector"
	"skiff.dev/services/controller-manager/manager/managertest"
)

var web = map[string]string{"app": "web"}

// TestThreePods: a Service and its three pods make one slice with three
// endpoints, each with its address, conditions, node, zone and target; the
// slice has the Service's port resolved, its labels and a controller
// reference to it. Pods the selector does not match, pods without an IP
// and finished pods are no endpoints.
func TestThreePods(t *testing.T) {
	c := start(t, endpointslice.Options{})
	c.node(t, "node-a", "zone-1")
	c.node(t, "node-b", "")
	svc := c.service(t, "web", web, port("http", 80, 8080))
	pods := []*corev1.Pod{
		c.pod(t, podSpec{name: "web-0", labels: web, node: "node-a", ip: "10.244.1.10", ready: true, hostname: "web-0", sub: "web"}),
		c.pod(t, podSpec{name: "web-1", labels: web, node: "node-a", ip: "10.244.1.11", ready: true}),
		c.pod(t, podSpec{name: "web-2", labels: web, node: "node-b", ip: "10.244.2.10", ready: false}),
	}
	c.pod(t, podSpec{name: "other", labels: map[string]string{"app": "other"}, node: "node-a", ip: "10.244.1.12", ready: true})
	c.pod(t, podSpec{name: "web-noip", labels: web, node: "node-a", ready: true})
	c.pod(t, podSpec{name: "web-done", labels: web, node: "node-b", ip: "10.244.2.11", phase: "Succeeded"})

	c.awaitEndpoints(t, "web",
		endpoint{"web-0", true, true, false}, endpoint{"web-1", true, true, false}, endpoint{"web-2", false, false, false})

	ss := c.slicesOf("web")
	s := ss[0]
	m := s.GetMetadata()
	if !strings.HasPrefix(m.GetName(), "web-") || m.GetGenerateName() != "web-" {
		t.Errorf("slice name %q (generateName %q), want web-<suffix>", m.GetName(), m.GetGenerateName())
	}
	wantLabels := map[string]string{
		"tier":                         "backend",
		endpointslice.LabelServiceName: "web",
		endpointslice.LabelManagedBy:   endpointslice.ControllerName,
	}
	if !maps.Equal(m.GetLabels(), wantLabels) {
		t.Errorf("labels %v, want %v", m.GetLabels(), wantLabels)
	}
	wantOwner := &metav1.OwnerReference{ApiVersion: "v1", Kind: "Service", Name: "web", Uid: svc.GetMetadata().GetUid(),
		Controller: proto.Bool(true), BlockOwnerDeletion: proto.Bool(true)}
	if refs := m.GetOwnerReferences(); len(refs) != 1 || !proto.Equal(refs[0], wantOwner) {
		t.Errorf("owner references %v, want [%v]", refs, wantOwner)
	}
	if s.GetAddressType() != "IPv4" {
		t.Errorf("addressType %q, want IPv4", s.GetAddressType())
	}
	wantPorts := []*discoveryv1.EndpointPort{{Name: proto.String("http"), Protocol: proto.String("TCP"), Port: proto.Int32(8080)}}
	if len(s.GetPorts()) != 1 || !proto.Equal(s.GetPorts()[0], wantPorts[0]) {
		t.Errorf("ports %v, want %v", s.GetPorts(), wantPorts)
	}
	byPod := map[string]*discoveryv1.Endpoint{}
	for _, ep := range s.GetEndpoints() {
		byPod[ep.GetTargetRef().GetName()] = ep
	}
	want := map[string]*discoveryv1.Endpoint{
		"web-0": {Addresses: []string{"10.244.1.10"}, NodeName: proto.String("node-a"), Zone: proto.String("zone-1"), Hostname: proto.String("web-0"),
			Conditions: &discoveryv1.EndpointConditions{Ready: proto.Bool(true), Serving: proto.Bool(true), Terminating: proto.Bool(false)}},
		"web-1": {Addresses: []string{"10.244.1.11"}, NodeName: proto.String("node-a"), Zone: proto.String("zone-1"),
			Conditions: &discoveryv1.EndpointConditions{Ready: proto.Bool(true), Serving: proto.Bool(true), Terminating: proto.Bool(false)}},
		"web-2": {Addresses: []string{"10.244.2.10"}, NodeName: proto.String("node-b"),
			Conditions: &discoveryv1.EndpointConditions{Ready: proto.Bool(false), Serving: proto.Bool(false), Terminating: proto.Bool(false)}},
	}
	for _, p := range pods {
		pm := p.GetMetadata()
		want[pm.GetName()].TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pm.GetName(), Uid: pm.GetUid()}
	}
	if len(byPod) != len(want) {
		t.Errorf("endpoints of %d pods, want %d", len(byPod), len(want))
	}
	for name, w := range want {
		if !proto.Equal(byPod[name], w) {
			t.Errorf("endpoint of %s:\n%s\nwant:\n%s", name, prototext.Format(byPod[name]), prototext.Format(w))
		}
	}
	if got := c.Metric("endpoint_slice_controller_endpoints_desired"); got != 3 {
		t.Errorf("endpoint_slice_controller_endpoints_desired = %v, want 3", got)
	}
	if got := c.Metric("endpoint_slice_controller_changes_total", "operation", "create"); got != 1 {
		t.Errorf("endpoint_slice_controller_changes_total{operation=create} = %v, want 1", got)
	}
}

// TestNamedTargetPort: a targetPort naming a container port resolves per
// pod; pods whose port resolves to another number are in another slice,
// and a pod without a port of that name is in a slice without that port,
// as Kubernetes groups endpoints by their port set.
func TestNamedTargetPort(t *testing.T) {
	c := start(t, endpointslice.Options{})
	c.node(t, "node-a", "")
	c.service(t, "web", web, port("http", 80, "http"))
	c.pod(t, podSpec{name: "a", labels: web, node: "node-a", ip: "10.0.0.1", ready: true, ports: map[string]int32{"http": 8080}})
	c.pod(t, podSpec{name: "b", labels: web, node: "node-a", ip: "10.0.0.2", ready: true, ports: map[string]int32{"http": 8080, "metrics": 9100}})
	c.pod(t, podSpec{name: "c", labels: web, node: "node-a", ip: "10.0.0.3", ready: true, ports: map[string]int32{"http": 9090}})
	c.pod(t, podSpec{name: "d", labels: web, node: "node-a", ip: "10.0.0.4", ready: true, ports: map[string]int32{"web": 8080}})

	c.Await(patience, "one slice per port set", func() (bool, string) {
		got := map[string]string{}
		for _, s := range c.slicesOf("web") {
			var ports, pods []string
			for _, p := range s.GetPorts() {
				ports = append(ports, fmt.Sprintf("%s:%d", p.GetName(), p.GetPort()))
			}
			for _, ep := range s.GetEndpoints() {
				pods = append(pods, ep.GetTargetRef().GetName())
			}
			got[strings.Join(ports, ",")] += strings.Join(pods, ",")
		}
		want := map[string]string{"http:8080": "a,b", "http:9090": "c", "": "d"}
		return maps.Equal(got, want), fmt.Sprintf("ports -> pods %v, want %v", got, want)
	})
}

// TestPodChanges: a pod that is no longer ready, one being deleted, one
// deleted, one relabelled and a changed selector all show in the slice,
// which is updated in place; a deleted Service's slices have its
// controller reference, and the garbage collector deletes them.
func TestPodChanges(t *testing.T) {
	c := start(t, endpointslice.Options{})
	c.node(t, "node-a", "")
	c.service(t, "web", web, port("http", 80, 8080))
	for i := range 4 {
		c.pod(t, podSpec{name: fmt.Sprintf("p%d", i), labels: web, node: "node-a", ip: fmt.Sprintf("10.0.0.%d", i+1), ready: true})
	}
	c.awaitEndpoints(t, "web", endpoint{"p0", true, true, false}, endpoint{"p1", true, true, false}, endpoint{"p2", true, true, false}, endpoint{"p3", true, true, false})
	first := c.slicesOf("web")[0].GetMetadata().GetName()

	c.setReady(t, "p0", false)
	c.awaitEndpoints(t, "web", endpoint{"p0", false, false, false}, endpoint{"p1", true, true, false}, endpoint{"p2", true, true, false}, endpoint{"p3", true, true, false})

	// A graceful delete: the pod stays, terminating, until its agent
	// (there is none) finishes it.
	if _, err := client.Pods(c.Conn).Delete(c.Ctx, &metav1.DeleteRequest{Namespace: ns, Name: "p1"}); err != nil {
		t.Fatal(err)
	}
	c.awaitEndpoints(t, "web", endpoint{"p0", false, false, false}, endpoint{"p1", false, true, true}, endpoint{"p2", true, true, false}, endpoint{"p3", true, true, false})

	if _, err := client.Pods(c.Conn).Delete(c.Ctx, &metav1.DeleteRequest{Namespace: ns, Name: "p0", GracePeriodSeconds: proto.Int64(0)}); err != nil {
		t.Fatal(err)
	}
	c.awaitEndpoints(t, "web", endpoint{"p1", false, true, true}, endpoint{"p2", true, true, false}, endpoint{"p3", true, true, false})

	p2, err := client.Pods(c.Conn).Get(c.Ctx, ns, "p2")
	if err != nil {
		t.Fatal(err)
	}
	p2.Metadata.Labels = map[string]string{"app": "web-canary"}
	if _, err := client.Pods(c.Conn).Update(c.Ctx, p2); err != nil {
		t.Fatal(err)
	}
	c.awaitEndpoints(t, "web", endpoint{"p1", false, true, true}, endpoint{"p3", true, true, false})

	svc, err := client.Services(c.Conn).Get(c.Ctx, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.Selector = map[string]string{"app": "web-canary"}
	if _, err := client.Services(c.Conn).Update(c.Ctx, svc); err != nil {
		t.Fatal(err)
	}
	c.awaitEndpoints(t, "web", endpoint{"p2", true, true, false})
	if ss := c.slicesOf("web"); len(ss) != 1 || ss[0].GetMetadata().GetName() != first {
		t.Errorf("slices %v, want the first one, %s, updated in place", names(ss), first)
	}
	if got := c.Metric("endpoint_slice_controller_changes_total", "operation", "create"); got != 1 {
		t.Errorf("creates = %v, want 1 (every change an update)", got)
	}

	// The Service goes: its slice is owned by it, and the garbage
	// collector, run here, deletes it.
	if _, err := client.Services(c.Conn).Delete(c.Ctx, &metav1.DeleteRequest{Namespace: ns, Name: "web"}); err != nil {
		t.Fatal(err)
	}
	if ref := c.slicesOf("web")[0].GetMetadata().GetOwnerReferences()[0]; ref.GetUid() != svc.GetMetadata().GetUid() || !ref.GetController() {
		t.Fatalf("slice owner %v, want a controller reference to the Service (uid %s)", ref, svc.GetMetadata().GetUid())
	}
	gc := garbagecollector.New(c.Manager, garbagecollector.Options{})
	c.Manager.Informers.Start(c.Ctx) // the informers the collector added
	c.GoErr(gc.Run)
	c.Await(patience, "the Service's slices deleted", func() (bool, string) {
		ss := c.slicesOf("web")
		return len(ss) == 0, fmt.Sprintf("slices %v", names(ss))
	})
}

// TestTwoHundredFiftyPods: 250 endpoints make three slices of at most 100.
func TestTwoHundredFiftyPods(t *testing.T) {
	c := start(t, endpointslice.Options{})
	c.node(t, "node-a", "")
	var specs []podSpec
	for i := range 250 {
		specs = append(specs, podSpec{name: fmt.Sprintf("p%03d", i), labels: web, node: "node-a", ip: fmt.Sprintf("10.0.%d.%d", i/200, i%200+1), ready: true})
	}
	c.pods(t, specs)
	c.service(t, "web", web, port("http", 80, 8080))
	c.Await(patience, "250 endpoints", func() (bool, string) {
		eps, n := c.endpointsOf("web")
		return len(eps) == 250, fmt.Sprintf("%d endpoints in %d slices", len(eps), n)
	})
	ss := c.slicesOf("web")
	var sizes []int
	for _, s := range ss {
		sizes = append(sizes, len(s.GetEndpoints()))
	}
	if len(ss) != 3 {
		t.Errorf("%d slices of sizes %v, want 3", len(ss), sizes)
	}
	for _, n := range sizes {
		if n > 100 {
			t.Errorf("slice sizes %v: more than 100 in one", sizes)
		}
	}
}

// TestServicesLeftAlone: a Service without a selector and an ExternalName
// Service get no slices from the controller, and a slice someone else
// manages for the former is left as it is.
func TestServicesLeftAlone(t *testing.T) {
	c := start(t, endpointslice.Options{Workers: 1})
	c.node(t, "node-a", "")
	c.pod(t, podSpec{name: "p", labels: web, node: "node-a", ip: "10.0.0.1", ready: true})
	c.service(t, "manual", nil, port("http", 80, 8080))
	if _, err := client.Services(c.Conn).Create(c.Ctx, &corev1.Service{
		Metadata: &metav1.ObjectMeta{Namespace: ns, Name: "ext"},
		Spec:     &corev1.ServiceSpec{Type: "ExternalName", ExternalName: "example.com", Selector: web},
	}); err != nil {
		t.Fatal(err)
	}
	mine, err := client.EndpointSlices(c.Conn).Create(c.Ctx, &discoveryv1.EndpointSlice{
		Metadata: &metav1.ObjectMeta{Namespace: ns, Name: "manual-1", Labels: map[string]string{
			endpointslice.LabelServiceName: "manual", endpointslice.LabelManagedBy: "someone-else"}},
		AddressType: "IPv4",
		Endpoints:   []*discoveryv1.Endpoint{{Addresses: []string{"192.0.2.1"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// A Service with a selector, created last: once it has its slice,
	// the controller has synced the two others (the queue is FIFO and
	// one worker runs).
	c.service(t, "web", web, port("http", 80, 8080))
	c.awaitEndpoints(t, "web", endpoint{"p", true, true, false})
	if ss := c.slicesOf("ext"); len(ss) != 0 {
		t.Errorf("ExternalName Service got slices %v", names(ss))
	}
	got, err := client.EndpointSlices(c.Conn).Get(c.Ctx, ns, "manual-1")
	if err != nil || got.GetMetadata().GetResourceVersion() != mine.GetMetadata().GetResourceVersion() {
		t.Errorf("the manual slice changed: %v (err %v)", got, err)
	}
}

// TestDeletedSliceIsWrittenAgain: a managed slice someone deletes is
// created again.
func TestDeletedSliceIsWrittenAgain(t *testing.T) {
	c := start(t, endpointslice.Options{})
	c.node(t, "node-a", "")
	c.service(t, "web", web, port("http", 80, 8080))
	c.pod(t, podSpec{name: "p", labels: web, node: "node-a", ip: "10.0.0.1", ready: true})
	c.awaitEndpoints(t, "web", endpoint{"p", true, true, false})
	old := c.slicesOf("web")[0].GetMetadata().GetName()
	if _, err := client.EndpointSlices(c.Conn).Delete(c.Ctx, &metav1.DeleteRequest{Namespace: ns, Name: old}); err != nil {
		t.Fatal(err)
	}
	c.Await(patience, "a new slice", func() (bool, string) {
		ss := c.slicesOf("web")
		return len(ss) == 1 && ss[0].GetMetadata().GetName() != old && len(ss[0].GetEndpoints()) == 1, fmt.Sprintf("slices %v", names(ss))
	})
}

func names(ss []*discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%s(%d)", s.GetMetadata().GetName(), len(s.GetEndpoints())))
	}
	return out
}

// TestNodeEvents: a pod bound to a Node the cache does not have is left
// out until the Node is created; a Node's new zone reaches its endpoints.
// The controller's clock does not move: no delayed sync can stand in for
// the syncs the Node events cause.
func TestNodeEvents(t *testing.T) {
	env := managertest.Start(t)
	env.Manager.Clock = workqueue.NewFakeClock(time.Now())
	c := startOn(t, env, endpointslice.Options{})
	c.node(t, "node-a", "")
	c.service(t, "web", web, port("http", 80, 8080))
	// "late" comes first: the sync that shows "a" has seen it.
	c.pod(t, podSpec{name: "late", labels: web, node: "node-late", ip: "10.0.0.2", ready: true})
	c.pod(t, podSpec{name: "a", labels: web, node: "node-a", ip: "10.0.0.1", ready: true})
	c.awaitEndpoints(t, "web", endpoint{"a", true, true, false})

	c.node(t, "node-late", "zone-2")
	c.awaitEndpoints(t, "web", endpoint{"a", true, true, false}, endpoint{"late", true, true, false})

	n, err := client.Nodes(c.Conn).Get(c.Ctx, "", "node-a")
	if err != nil {
		t.Fatal(err)
	}
	n.Metadata.Labels = map[string]string{endpointslice.LabelTopologyZone: "zone-1"}
	if _, err := client.Nodes(c.Conn).Update(c.Ctx, n); err != nil {
		t.Fatal(err)
	}
	c.Await(patience, "zones on the endpoints", func() (bool, string) {
		zones := map[string]string{}
		for _, s := range c.slicesOf("web") {
			for _, ep := range s.GetEndpoints() {
				zones[ep.GetTargetRef().GetName()] = ep.GetZone()
			}
		}
		want := map[string]string{"a": "zone-1", "late": "zone-2"}
		return maps.Equal(zones, want), fmt.Sprintf("zones %v, want %v", zones, want)
	})
}
