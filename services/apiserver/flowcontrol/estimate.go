package flowcontrol

import (
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/server"
)

// The work estimate of a request, as Kubernetes' API Priority and Fairness
// makes it (list_work_estimator.go): a List takes one seat per
// objectsPerSeat objects it reads, at least one and at most maxSeats (or
// the seats one flow may hold, if fewer); every other request takes one.
// A List of 500 ConfigMaps holds five seats while it executes, so one
// user's large Lists cannot take the CPU of a small machine with few
// requests, while a user's small List still finds a seat free.
const (
	objectsPerSeat = 100
	maxSeats       = 10
)

// ObjectCounter counts the objects a List of resource (in API group
// group) in namespace ("" for all namespaces, or a cluster-scoped
// resource) would read, up to upTo: counting further cannot change the
// estimate. ok is false when the resource is not known (no estimate: one
// seat). The apiserver counts them in its watch caches.
type ObjectCounter func(group, resource, namespace string, upTo int) (n int, ok bool)

// estimate is the seats ri's request would take, before the pool bounds
// it (seats.width). A List without a selector reads its limit's worth of
// objects, or all of them if fewer; with a label or field selector it
// reads every object in its namespace to find its limit's worth of matches.
func (l *Limiter) estimate(ri *server.RequestInfo) int {
	if ri.Verb != "list" || l.objects == nil {
		return 1
	}
	upTo := maxSeats * objectsPerSeat
	if opts, ok := ri.Object.(*metav1.ListOptions); ok && ri.LabelSelector == "" && ri.FieldSelector == "" {
		if limit := opts.GetLimit(); limit > 0 && limit < int64(upTo) {
			upTo = int(limit)
		}
	}
	n, ok := l.objects(ri.APIGroup, ri.Resource, ri.Namespace, upTo)
	if !ok {
		return 1
	}
	return max(1, (min(n, upTo)+objectsPerSeat-1)/objectsPerSeat)
}
