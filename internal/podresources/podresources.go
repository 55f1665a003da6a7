// Package podresources is what a pod asks of a node, computed once for
// every part of Skiff that counts it: the scheduler (whether the pod fits
// a node), ResourceQuota (what the pod uses) and LimitRange's Pod bounds.
// It is Kubernetes' PodRequests and PodLimits
// (k8s.io/component-helpers/resource) with native sidecars (KEP-753): pure
// functions over the pod's spec, no I/O.
//
// The containers run together, so their amounts add up; init containers
// run one at a time before them, so only the largest counts; sidecars
// (init containers with restartPolicy Always) start among the init
// containers and keep running, so each adds to the main containers and to
// every init container started after it:
//
//	pod = max( sum(containers) + sum(sidecars),
//	           max over init container i of: i's amount + sum(sidecars before i) )
//
// where a sidecar's own term is the sum of the sidecars up to and including
// it, plus the pod's overhead (spec.overhead, set from its RuntimeClass;
// overhead.go). The package does not decide quality of service (package
// qos).
package podresources

import (
	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
)

// IsSidecar reports whether c is a sidecar: an init container with
// restartPolicy Always (the only value the field takes).
func IsSidecar(c *corev1.Container) bool {
	return c.GetRestartPolicy() == "Always"
}

// Requests is the pod's effective request per resource. An unparsable
// quantity (validation refuses them) counts as zero; the first one met is
// returned as the error, the rest is still counted.
//
// The pod's overhead (spec.overhead, its RuntimeClass's) is added, as
// Kubernetes' PodRequests does.
func Requests(spec *corev1.PodSpec) (map[string]quantity.Quantity, error) {
	total, err := aggregate(spec, func(c *corev1.Container) map[string]string { return c.GetResources().GetRequests() })
	return withOverhead(total, spec, true, err)
}

// Limits is the pod's effective limit per resource, by the same arithmetic
// as Requests over the containers' limits (a container that sets no limit
// adds nothing). The overhead is added to the resources that have a
// limit, as Kubernetes' PodLimits does.
func Limits(spec *corev1.PodSpec) (map[string]quantity.Quantity, error) {
	total, err := aggregate(spec, func(c *corev1.Container) map[string]string { return c.GetResources().GetLimits() })
	return withOverhead(total, spec, false, err)
}

func aggregate(spec *corev1.PodSpec, list func(*corev1.Container) map[string]string) (map[string]quantity.Quantity, error) {
	var firstErr error
	parse := func(c *corev1.Container) map[string]quantity.Quantity {
		l := list(c)
		if len(l) == 0 {
			return nil
		}
		out := make(map[string]quantity.Quantity, len(l))
		for k, v := range l {
			q, err := quantity.Parse(v)
			if err != nil {
				if firstErr == nil {
					firstErr = &parseError{resource: k, container: c.GetName(), err: err}
				}
				continue
			}
			out[k] = q
		}
		return out
	}
	total := map[string]quantity.Quantity{}
	for _, c := range spec.GetContainers() {
		add(total, parse(c))
	}
	sidecars := map[string]quantity.Quantity{} // the sidecars started so far
	initMax := map[string]quantity.Quantity{}
	for _, c := range spec.GetInitContainers() {
		own := parse(c)
		if IsSidecar(c) {
			add(total, own)
			add(sidecars, own)
			setMax(initMax, sidecars)
			continue
		}
		use := make(map[string]quantity.Quantity, len(own)+len(sidecars))
		add(use, own)
		add(use, sidecars)
		setMax(initMax, use)
	}
	setMax(total, initMax)
	return total, firstErr
}

func add(into, v map[string]quantity.Quantity) {
	for k, q := range v {
		if sum, err := into[k].Add(q); err == nil {
			into[k] = sum
		}
	}
}

func setMax(into, v map[string]quantity.Quantity) {
	for k, q := range v {
		if cur, ok := into[k]; !ok || q.Cmp(cur) > 0 {
			into[k] = q
		}
	}
}

type parseError struct {
	resource, container string
	err                 error
}

func (e *parseError) Error() string {
	return "container " + e.container + ": resource \"" + e.resource + "\": " + e.err.Error()
}

func (e *parseError) Unwrap() error { return e.err }
