package scheduler

import (
	"go.uber.org/zap"

	"skiff.dev/services/scheduler/framework"
	"skiff.dev/services/scheduler/plugins"
)

// preEnqueuePlugins decide whether a pod may enter the queue at all
// (Kubernetes' PreEnqueue extension point, which its default profile
// fills with SchedulingGates alone).
func preEnqueuePlugins() []framework.PreEnqueuePlugin {
	return []framework.PreEnqueuePlugin{plugins.SchedulingGatesPlugin{}}
}

// preEnqueue reports whether pi may be queued. A pod that may not waits
// outside the queue: an update that lets it pass (its last scheduling
// gate removed) queues it. Its PodScheduled=False SchedulingGated
// condition was written by the apiserver when it was created.
func (s *Scheduler) preEnqueue(pi *framework.PodInfo) bool {
	for _, pl := range preEnqueuePlugins() {
		if st := pl.PreEnqueue(pi); !st.IsSuccess() {
			if ce := s.log.Check(zap.DebugLevel, "pod not queued"); ce != nil {
				ce.Write(zap.String("pod", pi.Key()), zap.String("plugin", pl.Name()), zap.String("reason", st.Message()))
			}
			return false
		}
	}
	return true
}
