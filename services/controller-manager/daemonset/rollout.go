package daemonset

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// scaledValue is an IntOrString as a count: an int as is, "n%" as n% of
// total, rounded up or down.
func scaledValue(v *metav1.IntOrString, total int, roundUp bool) (int, error) {
	switch x := v.GetValue().(type) {
	case nil:
		return 0, nil
	case *metav1.IntOrString_IntVal:
		return int(x.IntVal), nil
	case *metav1.IntOrString_StrVal:
		s, ok := strings.CutSuffix(x.StrVal, "%")
		if !ok {
			return 0, fmt.Errorf("invalid value %q: not a percentage", x.StrVal)
		}
		pct, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("invalid value %q: %w", x.StrVal, err)
		}
		f := float64(pct) * float64(total) / 100
		if roundUp {
			return int(math.Ceil(f)), nil
		}
		return int(math.Floor(f)), nil
	}
	return 0, fmt.Errorf("unknown IntOrString variant %T", v.GetValue())
}

// Bounds are a rolling update's maxSurge and maxUnavailable as counts of
// the desired number of pods (percentages rounded up; both 0 is taken as
// maxUnavailable 1, as Kubernetes' updatedDesiredNodeCounts).
func Bounds(s State) (maxSurge, maxUnavailable, desired int, err error) {
	for _, n := range s.Nodes {
		if n.Fit.ShouldRun {
			desired++
		}
	}
	ru := s.DS.GetSpec().GetUpdateStrategy().GetRollingUpdate()
	if maxUnavailable, err = scaledValue(ru.GetMaxUnavailable(), desired, true); err != nil {
		return 0, 0, 0, fmt.Errorf("maxUnavailable: %w", err)
	}
	if maxSurge, err = scaledValue(ru.GetMaxSurge(), desired, true); err != nil {
		return 0, 0, 0, fmt.Errorf("maxSurge: %w", err)
	}
	if maxSurge == 0 && maxUnavailable == 0 {
		maxUnavailable = 1
	}
	return maxSurge, maxUnavailable, desired, nil
}

// updatedOnNode splits a node's pods not being deleted into the one running
// the current template and the one running an older one; ok is false when
// there is more than one of either (Manage prunes them first).
func updatedOnNode(pods []*corev1.Pod, hash string) (newPod, oldPod *corev1.Pod, ok bool) {
	for _, p := range pods {
		if p.GetMetadata().GetDeletionTimestamp() != nil {
			continue
		}
		if p.GetMetadata().GetLabels()[RevisionLabel] == hash {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = p
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = p
		}
	}
	return newPod, oldPod, true
}

// RollingUpdate is Kubernetes' rollingUpdate step, run when Manage has
// nothing to do. Without surge it deletes old pods (Manage then creates
// their replacements) so that at most maxUnavailable nodes are without an
// available pod, old pods that are unavailable anyway first; with surge it
// creates new pods beside old available ones on at most maxSurge nodes at
// once (at once on nodes whose old pod is unavailable), and deletes an old
// pod once the new one beside it is available.
func RollingUpdate(s State) (Plan, error) {
	maxSurge, maxUnavailable, _, err := Bounds(s)
	if err != nil {
		return Plan{}, err
	}
	minReady := s.DS.GetSpec().GetMinReadySeconds()
	available := func(p *corev1.Pod) bool { return controllerutil.IsPodAvailable(p, minReady, s.Now) }
	fit := make(map[string]Fit, len(s.Nodes))
	nodes := map[string]bool{}
	for _, n := range s.Nodes {
		fit[n.Name] = n.Fit
		if n.Fit.ShouldRun {
			nodes[n.Name] = true
		}
	}
	for n := range s.Pods {
		nodes[n] = true
	}
	var plan Plan
	if maxSurge == 0 {
		numUnavailable := 0
		var replace, candidates []*corev1.Pod
		for _, name := range sortedKeys(nodes) {
			newPod, oldPod, ok := updatedOnNode(s.Pods[name], s.Hash)
			switch {
			case !ok:
				numUnavailable++
			case oldPod == nil && newPod == nil, oldPod != nil && newPod != nil:
				numUnavailable++
			case newPod != nil:
				if !available(newPod) {
					numUnavailable++
				}
			default:
				switch {
				case !available(oldPod):
					replace = append(replace, oldPod)
				case numUnavailable >= maxUnavailable:
				default:
					candidates = append(candidates, oldPod)
				}
			}
		}
		room := min(max(maxUnavailable-numUnavailable, 0), len(candidates))
		plan.Delete = append(replace, candidates[:room]...)
		return plan, nil
	}

	numSurge := 0
	var allowed, candidates []string
	for _, name := range sortedKeys(nodes) {
		newPod, oldPod, ok := updatedOnNode(s.Pods[name], s.Hash)
		if !ok {
			numSurge++
			continue
		}
		switch {
		case oldPod == nil:
			// Manage creates the pod a node lacks.
		case newPod == nil:
			switch {
			case !available(oldPod):
				if !fit[name].ShouldRun {
					plan.Delete = append(plan.Delete, oldPod)
					continue
				}
				allowed = append(allowed, name)
			case numSurge >= maxSurge:
			default:
				candidates = append(candidates, name)
			}
		default:
			if !available(newPod) {
				numSurge++
				continue
			}
			plan.Delete = append(plan.Delete, oldPod)
		}
	}
	room := min(max(maxSurge-numSurge, 0), len(candidates))
	plan.CreateOn = append(allowed, candidates[:room]...)
	return plan, nil
}
