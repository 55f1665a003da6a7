// Package events records Events about API objects, as client-go's record
// package does, for controllers to report what they did and why:
//
//	b, err := events.NewBroadcaster(events.Config{Client: client.Events(conn), Component: "deployment-controller"})
//	go b.Run(ctx)
//	defer b.Shutdown()
//	rec := b.NewRecorder("")
//	rec.Eventf(deploy, events.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s to %d", name, n)
//
// Recording never blocks: a Recorder builds the Event (timestamped on the
// injected clock) and puts it on a bounded queue (10,000 events); when the
// queue is full the event is dropped and counted. One goroutine,
// Broadcaster.Run, takes events off the queue in order and, per event:
//
//  1. spam filter: a token bucket per (source, involved object), burst 25,
//     refilled by one token every 5 minutes (Kubernetes' defaults); an event
//     without a token is dropped and counted;
//  2. names it <involved name>.<hex unix nanoseconds>, the nanoseconds kept
//     increasing in the order recorded so that names are unique;
//  3. hands it to one of a pool of writers (8 by default), chosen by a hash
//     of its aggregation key (involved object, type, reason, message and
//     source): the writes about one aggregated event are made by one
//     writer, in the order recorded, never concurrently, while different
//     events are written in parallel.
//
// The writer then does the I/O:
//
//  4. aggregation: an event identical to one written less than 10 minutes
//     before its own time (same aggregation key) is not created again: the
//     stored Event's count is incremented and its lastTimestamp set, with
//     an Update at its resourceVersion (on a conflict it is read again and
//     incremented once more; if it was deleted, a new Event is created
//     under the repeat's name). The last 4096 written events are
//     remembered for this;
//  5. otherwise a new Event, in the involved object's namespace ("default"
//     for cluster-scoped objects), is created.
//
// A write that fails is logged, counted and not retried. Shutdown stops
// recording and waits until Run and its writers have written what was
// queued; cancelling Run's context abandons it instead.
//
// The package owns the events_* metrics. It does not read events back,
// garbage-collect them (the apiserver's business), or write the new-style
// (events.k8s.io, eventTime) fields.
package events
