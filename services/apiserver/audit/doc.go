// Package audit writes the audit log: one JSON line per request saying who
// did what to which object and with which result, shaped as Kubernetes'
// audit.k8s.io/v1 Event, at the level chosen by flag:
//
//	None             nothing
//	Metadata         user, verb, resource, namespace, name, result, times
//	Request          and the request message (protojson)
//	RequestResponse  and the response message (protojson)
//
// The request chain calls Log.Audit once a request has finished; Audit
// hands the event to a bounded buffer and returns at once: a writer
// goroutine (Log.Run, started by a post-start hook) encodes and appends
// the events to the file, several per write(2) when they come fast, never
// an event split over two writes. When the buffer is full the event is
// dropped, not waited for, and counted in apiserver_audit_error_total
// (a request never blocks on the disk). When Run's context ends it writes
// what is buffered and the events that still come are written at once by
// their requests (the server is stopping).
//
// Health checks are not audited. It owns the file it appends to and no
// policy beyond the level and the omitted verbs.
package audit
