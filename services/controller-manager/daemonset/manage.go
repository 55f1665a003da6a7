package daemonset

import (
	"slices"
	"sort"
	"time"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// Node is what a sync knows of one node: its name and what it says of the
// DaemonSet.
type Node struct {
	Name string
	Fit  Fit
}

// State is the input of the decisions of one sync: the DaemonSet, the hash
// of its current template, the nodes that exist (sorted by name) and the
// DaemonSet's pods by target node (TargetNode), each list sorted by
// byCreation.
type State struct {
	DS    *appsv1.DaemonSet
	Hash  string
	Nodes []Node
	Pods  map[string][]*corev1.Pod
	Now   time.Time
	// InBackoff says whether node's last failed pod was deleted too
	// recently to delete another (nil: never).
	InBackoff func(node string) bool
}

// Plan is what a sync does to pods.
type Plan struct {
	CreateOn []string      // nodes to create a pod on
	Delete   []*corev1.Pod // pods to delete
	Failed   []*corev1.Pod // of Delete, the failed pods (a FailedDaemonPod event each)
	// BackedOff are nodes whose failed pod waits for its backoff: the
	// DaemonSet is looked at again when it ends.
	BackedOff []string
}

// Empty reports whether the plan does nothing.
func (p Plan) Empty() bool { return len(p.CreateOn) == 0 && len(p.Delete) == 0 }

// byCreation orders a node's daemon pods as Kubernetes'
// podByCreationTimestampAndPhase: bound pods first, then oldest first, then
// by name.
func byCreation(a, b *corev1.Pod) int {
	ab, bb := a.GetSpec().GetNodeName() != "", b.GetSpec().GetNodeName() != ""
	if ab != bb {
		if ab {
			return -1
		}
		return 1
	}
	ta, tb := a.GetMetadata().GetCreationTimestamp().AsTime(), b.GetMetadata().GetCreationTimestamp().AsTime()
	if c := ta.Compare(tb); c != 0 {
		return c
	}
	if a.GetMetadata().GetName() < b.GetMetadata().GetName() {
		return -1
	}
	if a.GetMetadata().GetName() > b.GetMetadata().GetName() {
		return 1
	}
	return 0
}

// allowsSurge: a rolling update with a non-zero maxSurge.
func allowsSurge(ds *appsv1.DaemonSet) bool {
	st := ds.GetSpec().GetUpdateStrategy()
	if st.GetType() != "RollingUpdate" {
		return false
	}
	n, err := scaledValue(st.GetRollingUpdate().GetMaxSurge(), 1, true)
	return err == nil && n > 0
}

// Manage is Kubernetes' manage step (podsShouldBeOnNode for every node,
// then the pods waiting to be scheduled to nodes that are gone): the pods
// to create and delete so that each node that should run a daemon pod has
// exactly one (two while a surge replaces one) and no other node has any.
func Manage(s State) Plan {
	var plan Plan
	surge := allowsSurge(s.DS)
	minReady := s.DS.GetSpec().GetMinReadySeconds()
	for _, n := range s.Nodes {
		pods := s.Pods[n.Name]
		switch {
		case n.Fit.ShouldRun && len(pods) == 0:
			plan.CreateOn = append(plan.CreateOn, n.Name)
		case n.Fit.ShouldContinueRunning:
			var running []*corev1.Pod
			for _, p := range pods {
				if p.GetMetadata().GetDeletionTimestamp() != nil {
					continue
				}
				switch p.GetStatus().GetPhase() {
				case "Failed":
					if s.InBackoff != nil && s.InBackoff(n.Name) {
						plan.BackedOff = append(plan.BackedOff, n.Name)
						continue
					}
					plan.Delete = append(plan.Delete, p)
					plan.Failed = append(plan.Failed, p)
				case "Succeeded":
					plan.Delete = append(plan.Delete, p)
				default:
					running = append(running, p)
				}
			}
			if len(running) <= 1 {
				break
			}
			if !surge {
				// Keep the oldest.
				plan.Delete = append(plan.Delete, running[1:]...)
				break
			}
			// Two pods may stay only while the oldest new one is not yet
			// available and the oldest old one is ready; otherwise the
			// new one is kept.
			var newest, oldest *corev1.Pod
			for _, p := range running {
				if p.GetMetadata().GetLabels()[RevisionLabel] == s.Hash {
					if newest == nil {
						newest = p
						continue
					}
				} else if oldest == nil {
					oldest = p
					continue
				}
				plan.Delete = append(plan.Delete, p)
			}
			if newest != nil && oldest != nil {
				if !controllerutil.IsPodReady(oldest) || controllerutil.IsPodAvailable(newest, minReady, s.Now) {
					plan.Delete = append(plan.Delete, oldest)
				}
			}
		case len(pods) > 0:
			for _, p := range pods {
				if p.GetMetadata().GetDeletionTimestamp() == nil {
					plan.Delete = append(plan.Delete, p)
				}
			}
		}
	}
	// Pods not bound yet whose node is gone would never be scheduled.
	exists := make(map[string]bool, len(s.Nodes))
	for _, n := range s.Nodes {
		exists[n.Name] = true
	}
	for _, name := range sortedKeys(s.Pods) {
		if exists[name] {
			continue
		}
		for _, p := range s.Pods[name] {
			if p.GetSpec().GetNodeName() == "" && p.GetMetadata().GetDeletionTimestamp() == nil {
				plan.Delete = append(plan.Delete, p)
			}
		}
	}
	return plan
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// groupByNode groups pods by TargetNode, each group sorted by byCreation.
// Pods with no target node are left out.
func groupByNode(pods []*corev1.Pod) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if n := TargetNode(p); n != "" {
			out[n] = append(out[n], p)
		}
	}
	for _, ps := range out {
		slices.SortFunc(ps, byCreation)
	}
	return out
}
