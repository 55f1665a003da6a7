// Package flowcontrol limits the requests the apiserver executes at once
// and queues the others fairly per user, so that one flooding client (even
// an administrator) cannot starve the others; in the manner of Kubernetes'
// API Priority and Fairness, simplified.
//
// A request is classified (classify.go) by its user into a flow schema
// and so a priority level:
//
//	flow schema              priority level  who
//	exempt                   (none)          the apiserver's own loopback (system:apiserver)
//	system-nodes             system          group system:nodes (node agents)
//	kube-scheduler           system          system:kube-scheduler
//	kube-controller-manager  system          system:kube-controller-manager
//	global-default           workload        everyone else
//
// and by its verb into read-only (get, list, watch, non-resource calls)
// or mutating (create, update, delete). Each priority level has its own
// seats of each kind (--max-requests-inflight read-only,
// --max-mutating-requests-inflight mutating), so a flood in the workload
// level cannot take the seats of the cluster's own components.
//
// A request takes a free seat at once (one short lock, no allocation),
// unless its user already holds all but a quarter (rounded up) of the
// level's seats of that kind: with two seats or more, one user never
// takes them all, and a flood cannot make the next user wait for a seat.
// Otherwise it waits in its
// flow's queue, a flow being one user name; when a seat frees, the queues
// are served round-robin (queue.go), one request per flow in turn, so a
// user with one waiting request waits behind at most one request of each
// other user, however many the others queued. A queue holds at most
// --flowcontrol-queue-length requests and a request waits at most
// --flowcontrol-max-wait (or until its deadline); past either it is
// refused with TooManyRequests (gRPC ResourceExhausted) whose details carry
// retryAfterSeconds, also sent as a "retry-after" trailer. The Go client
// honours it (skiff.dev/internal/client.RetryThrottled).
//
// Watches and log streams hold their seat only until they are established
// (the request chain releases it then). Metrics: metrics.go.
//
// It owns no goroutine. It does not authenticate: it trusts
// RequestInfo.User as the chain's authenticator set it.
package flowcontrol
