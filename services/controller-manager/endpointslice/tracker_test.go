package endpointslice

import (
	"testing"
	"time"

	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func trackedSlice(uid, rv string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{Metadata: &metav1.ObjectMeta{Uid: uid, ResourceVersion: rv,
		Labels: map[string]string{LabelServiceName: "web", LabelManagedBy: ControllerName}}}
}

// TestTracker: the cache is stale while it misses a slice written, shows
// one at an older version, or still has one deleted; the controller's own
// writes need no sync, others' do.
func TestTracker(t *testing.T) {
	const svc = "ns/web"
	now := time.Unix(1000, 0)
	tr := newTracker(func() time.Time { return now })
	if tr.stale(svc, nil) {
		t.Error("stale with nothing written")
	}
	tr.wrote(svc, trackedSlice("a", "10"))
	steps := []struct {
		name   string
		cached []*discoveryv1.EndpointSlice
		stale  bool
	}{
		{"the write not cached yet", nil, true},
		{"cached at an older version", []*discoveryv1.EndpointSlice{trackedSlice("a", "9")}, true},
		{"cached at the version written", []*discoveryv1.EndpointSlice{trackedSlice("a", "10")}, false},
		{"cached at a newer version (someone else's write)", []*discoveryv1.EndpointSlice{trackedSlice("a", "12")}, false},
	}
	for _, s := range steps {
		if got := tr.stale(svc, s.cached); got != s.stale {
			t.Errorf("%s: stale %v, want %v", s.name, got, s.stale)
		}
	}
	if !tr.ownWrite(svc, trackedSlice("a", "10")) || tr.ownWrite(svc, trackedSlice("a", "12")) || tr.ownWrite(svc, trackedSlice("b", "3")) {
		t.Error("ownWrite: want true for the version written only")
	}

	tr.deleting(svc, trackedSlice("a", "10"))
	if !tr.stale(svc, []*discoveryv1.EndpointSlice{trackedSlice("a", "10")}) {
		t.Error("a deleted slice still cached: want stale")
	}
	if tr.stale(svc, nil) {
		t.Error("a deleted slice gone from the cache: want not stale")
	}
	if !tr.gone(svc, trackedSlice("a", "10")) {
		t.Error("the controller's own deletion reported unexpected")
	}
	if tr.gone(svc, trackedSlice("b", "3")) {
		t.Error("someone else's deletion reported expected")
	}
	if !tr.wake(svc) || tr.wake(svc) {
		t.Error("wake: want true once after a stale sync")
	}
	tr.wrote(svc, trackedSlice("c", "20"))
	tr.forgetService(svc)
	if tr.stale(svc, nil) {
		t.Error("stale after the Service was forgotten")
	}

	// A write the cache never shows stops counting after trackTTL.
	tr.wrote(svc, trackedSlice("d", "30"))
	now = now.Add(trackTTL)
	if !tr.stale(svc, nil) {
		t.Error("not stale within trackTTL")
	}
	now = now.Add(time.Second)
	if tr.stale(svc, nil) {
		t.Error("still stale after trackTTL")
	}
}

// TestTrackerEventsDuringWrites: events seen while writes are in flight
// are judged when the writes have returned: the controller's own write
// and deletion are not foreign, someone else's change is.
func TestTrackerEventsDuringWrites(t *testing.T) {
	const svc = "ns/web"
	tr := newTracker(time.Now)

	tr.startWrites(svc)
	if !tr.ownWrite(svc, trackedSlice("a", "10")) || !tr.gone(svc, trackedSlice("b", "5")) {
		t.Fatal("events during writes: want them held")
	}
	tr.wrote(svc, trackedSlice("a", "10")) // the responses come after
	tr.deleting(svc, trackedSlice("b", "5"))
	if tr.endWrites(svc) {
		t.Error("the controller's own write and deletion judged foreign")
	}
	if tr.stale(svc, []*discoveryv1.EndpointSlice{trackedSlice("a", "10")}) {
		t.Error("stale after the held events were judged")
	}

	tr.startWrites(svc)
	tr.ownWrite(svc, trackedSlice("c", "11")) // not written by the controller
	if !tr.endWrites(svc) {
		t.Error("someone else's slice judged the controller's own")
	}
}
