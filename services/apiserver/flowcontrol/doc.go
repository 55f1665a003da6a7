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
// seats of each kind (--max-requests-inflight read-only, by default 4 per
// CPU; --max-mutating-requests-inflight mutating), so a flood in the
// workload level cannot take the seats of the cluster's own components.
//
// A request needs seats by its estimated work (estimate.go, as Kubernetes'
// list work estimator): a List one per 100 objects it reads, counted in
// the watch cache, at least 1 and at most 10; any other request one. It
// takes them at once when they are free (one short lock; a Get allocates
// nothing), unless its user would then hold more than all but a quarter
// (rounded up) of the level's seats of that kind: with two seats or more,
// one user never takes them all, and a flood cannot make the next user
// wait for a seat. Otherwise it waits in its flow's queue, a flow being
// one user name; when seats free, the queues are served round-robin
// (queue.go), one request per flow in turn, so a user with one waiting
// request waits behind at most one request of each other user, however
// many the others queued. A request wider than the free seats keeps the
// seats freed after it for itself until it fits, so Lists are not starved
// by small requests. A queue holds at most
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
