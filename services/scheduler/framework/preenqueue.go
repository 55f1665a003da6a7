package framework

// PreEnqueuePlugin decides whether a pod may enter the scheduling queue at
// all: a pod that fails it waits outside the queue, untried, until an
// update of it passes (SchedulingGates holds pods with scheduling gates).
// PreEnqueue must be cheap: it runs in the informer's handler.
type PreEnqueuePlugin interface {
	Plugin
	PreEnqueue(pod *PodInfo) *Status
}
