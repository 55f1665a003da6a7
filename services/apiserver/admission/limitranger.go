package admission

import (
	"context"
	"sort"
	"strings"

	"skiff.dev/internal/client"
	"skiff.dev/internal/field"
	"skiff.dev/internal/validation"
	corev1 "skiff.dev/proto/core/v1"
)

// LimitRangerName is the plugin's flag name.
const LimitRangerName = "LimitRanger"

// LimitRangerAnnotation records on a pod which defaults LimitRanger set.
const LimitRangerAnnotation = "kubernetes.io/limit-ranger"

// limitRanger applies the LimitRanges of a pod's namespace: Admit fills the
// requests and limits a container leaves out from the type-Container
// items' defaultRequest and default; Validate refuses a pod outside the
// min, max and maxLimitRequestRatio bounds (per Container and per Pod).
// Pods only, on create: a pod's resources cannot change afterwards.
type limitRanger struct {
	limitRanges *perNamespace[*corev1.LimitRange, *corev1.LimitRangeList]
}

func newLimitRanger(d *Deps) (any, error) {
	return &limitRanger{limitRanges: newPerNamespace(d, LimitRangerName, client.LimitRanges(d.Loopback))}, nil
}

// podCreate returns the pod of a pod create, or nil.
func podCreate(a *Attributes) *corev1.Pod {
	if a.Operation != Create || !a.resourceIs("", "pods") {
		return nil
	}
	p, _ := a.Object.(*corev1.Pod)
	return p
}

// applicable returns the pod a creates and its namespace's LimitRanges;
// nothing when a is not a pod create or there is no LimitRange.
func (l *limitRanger) applicable(ctx context.Context, a *Attributes) (*corev1.Pod, []*corev1.LimitRange, error) {
	pod := podCreate(a)
	if pod == nil {
		return nil, nil, nil
	}
	lrs, err := l.limitRanges.get(ctx, a.Namespace)
	return pod, lrs, err
}

func (l *limitRanger) Admit(ctx context.Context, a *Attributes) error {
	pod, lrs, err := l.applicable(ctx, a)
	if err != nil || len(lrs) == 0 {
		return err
	}
	var set []string
	for _, lr := range lrs {
		for _, it := range lr.GetSpec().GetLimits() {
			if it.GetType() != "Container" {
				continue
			}
			limits, requests := containerDefaults(it)
			if len(limits) == 0 && len(requests) == 0 {
				continue
			}
			for _, c := range pod.GetSpec().GetContainers() {
				set = append(set, applyDefaults(c, limits, requests)...)
			}
			for _, c := range pod.GetSpec().GetInitContainers() {
				set = append(set, applyDefaults(c, limits, requests)...)
			}
		}
	}
	if len(set) > 0 {
		sort.Strings(set)
		if pod.Metadata.Annotations == nil {
			pod.Metadata.Annotations = map[string]string{}
		}
		pod.Metadata.Annotations[LimitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(set, "; ")
	}
	return nil
}

// containerDefaults are a Container item's effective defaults, as
// Kubernetes defaults a LimitRange: a default limit is max when unset; a
// default request is the default limit, else min, when unset.
func containerDefaults(it *corev1.LimitRangeItem) (limits, requests map[string]string) {
	limits, requests = map[string]string{}, map[string]string{}
	for k, v := range it.GetMax() {
		limits[k] = v
	}
	for k, v := range it.GetDefault() {
		limits[k] = v
	}
	for k, v := range it.GetMin() {
		requests[k] = v
	}
	for k, v := range limits {
		requests[k] = v
	}
	for k, v := range it.GetDefaultRequest() {
		requests[k] = v
	}
	return limits, requests
}

// applyDefaults gives c the limits and requests it does not set, and says
// which it set ("cpu request for container web").
func applyDefaults(c *corev1.Container, limits, requests map[string]string) []string {
	var set []string
	if c.Resources == nil {
		c.Resources = &corev1.ResourceRequirements{}
	}
	r := c.Resources
	for k, v := range limits {
		if _, ok := r.Limits[k]; !ok {
			if r.Limits == nil {
				r.Limits = map[string]string{}
			}
			r.Limits[k] = v
			set = append(set, k+" limit for container "+c.Name)
		}
	}
	for k, v := range requests {
		if _, ok := r.Requests[k]; !ok {
			if r.Requests == nil {
				r.Requests = map[string]string{}
			}
			r.Requests[k] = v
			set = append(set, k+" request for container "+c.Name)
		}
	}
	return set
}

func (l *limitRanger) Validate(ctx context.Context, a *Attributes) error {
	pod, lrs, err := l.applicable(ctx, a)
	if err != nil || len(lrs) == 0 {
		return err
	}
	var errs field.ErrorList
	for _, lr := range lrs {
		errs = append(errs, validation.PodLimitRange(pod, lr)...)
	}
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Field + ": " + e.Detail
	}
	return a.Forbidden("%s", strings.Join(msgs, "; "))
}
