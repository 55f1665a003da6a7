package endpointslice_test

import (
	"fmt"
	"slices"
	"testing"

	"skiff.dev/services/controller-manager/endpointslice"
	"skiff.dev/services/controller-manager/manager/managertest"
)

// TestRestartAdoptsSlices: a controller started anew (its own informers,
// an empty tracker) adopts the slices there are: no duplicates, no writes
// for the Services that did not change (one with two slices, one with
// only its placeholder), and one update, in place, for the Service whose
// pod changed while no controller ran.
func TestRestartAdoptsSlices(t *testing.T) {
	c := start(t, endpointslice.Options{})
	c.node(t, "node-a", "")
	big := map[string]string{"app": "big"}
	c.service(t, "web", web, port("http", 80, 8080))
	c.service(t, "big", big, port("http", 80, 8080))
	c.service(t, "empty", map[string]string{"app": "none"}, port("http", 80, 8080))
	var want []endpoint
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		c.pod(t, podSpec{name: name, labels: web, node: "node-a", ip: fmt.Sprintf("10.0.0.%d", i+1), ready: true})
		want = append(want, endpoint{name, true, true, false})
	}
	for i := range 150 {
		c.pod(t, podSpec{name: fmt.Sprintf("big-%03d", i), labels: big, node: "node-a", ip: fmt.Sprintf("10.0.1.%d", i+1), ready: true})
	}
	c.awaitEndpoints(t, "web", want...)
	c.Await(patience, "big's 150 endpoints and empty's placeholder", func() (bool, string) {
		eps, n := c.endpointsOf("big")
		_, m := c.endpointsOf("empty")
		return len(eps) == 150 && n == 2 && m == 1, fmt.Sprintf("big: %d endpoints in %d slices; empty: %d slices", len(eps), n, m)
	})
	before := map[string][]string{}
	for _, svc := range []string{"web", "big", "empty"} {
		before[svc] = names(c.slicesOf(svc))
	}
	c.Stop()

	c.setReady(t, "web-0", false)
	// A new controller-manager: its own informers, metrics and tracker.
	c2 := startOn(t, managertest.NewEnv(t, c.Server, c.Conn, c.Logger), endpointslice.Options{})
	want[0] = endpoint{"web-0", false, false, false}
	c2.awaitEndpoints(t, "web", want...)
	// Each Service syncs when the controller starts, and again a second
	// later because its slices, not written by this controller, were added
	// to the cache.
	c2.Await(patience, "two syncs of each Service", func() (bool, string) {
		n := c2.Metric("endpoint_slice_controller_syncs_total", "result", "success")
		return n >= 6, fmt.Sprintf("%v syncs", n)
	})
	for _, op := range []string{"create", "delete"} {
		if n := c2.Metric("endpoint_slice_controller_changes_total", "operation", op); n != 0 {
			t.Errorf("%v slices %sd after the restart, want none", n, op)
		}
	}
	if n := c2.Metric("endpoint_slice_controller_changes_total", "operation", "update"); n != 1 {
		t.Errorf("%v slices updated after the restart, want 1 (web's)", n)
	}
	for _, svc := range []string{"big", "empty"} {
		if got := names(c2.slicesOf(svc)); !slices.Equal(got, before[svc]) {
			t.Errorf("%s's slices %v after the restart, want %v as they were", svc, got, before[svc])
		}
	}
	got, wantNames := names(c2.slicesOf("web")), before["web"]
	if len(got) != 1 || got[0] != wantNames[0] {
		t.Errorf("web's slices %v after the restart, want %v updated in place", got, wantNames)
	}
}
