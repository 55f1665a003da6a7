// Package quota is ResourceQuota's arithmetic, shared by the ResourceQuota
// admission plugin (which charges an object before it is stored) and the
// resourcequota controller (which recomputes status.used from the objects
// that exist): what one object uses, which quotas cover it, and whether a
// charge fits. Pure functions over messages and quantities; no I/O.
package quota

import (
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/podresources"
	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
)

// The compute resources a quota may cap (a pod's summed requests and limits;
// "cpu" and "memory" are the requests).
const (
	RequestsCPU    = "requests.cpu"
	RequestsMemory = "requests.memory"
	LimitsCPU      = "limits.cpu"
	LimitsMemory   = "limits.memory"
	CPU            = "cpu"
	Memory         = "memory"
)

// legacyCounts are the core resources also counted under their bare name
// ("pods", "configmaps"), besides "count/<resource>".
var legacyCounts = map[string]bool{
	"pods": true, "configmaps": true, "services": true, "secrets": true,
	"resourcequotas": true, "replicationcontrollers": true, "persistentvolumeclaims": true,
}

// CountKey is the object-count resource of a kind: "count/pods",
// "count/deployments.apps".
func CountKey(group, resource string) string {
	if group == "" {
		return "count/" + resource
	}
	return "count/" + resource + "." + group
}

// Usage is what one object of group/resource uses: 1 of its count (and
// of its bare name for the core kinds that have one), and for a pod that
// has not finished, its cpu and memory requests and limits (0 when it sets
// none). A finished pod (Succeeded, Failed) uses nothing.
func Usage(group, resource string, obj proto.Message) map[string]quantity.Quantity {
	one, _ := quantity.NewQuantity(1, quantity.DecimalSI)
	u := map[string]quantity.Quantity{CountKey(group, resource): one}
	if group == "" && legacyCounts[resource] {
		u[resource] = one
	}
	if pod, ok := obj.(*corev1.Pod); ok && group == "" && resource == "pods" {
		if Terminal(pod) {
			return map[string]quantity.Quantity{}
		}
		// Unparsable quantities (validation refuses them) count as 0.
		requests, _ := podresources.Requests(pod.GetSpec())
		limits, _ := podresources.Limits(pod.GetSpec())
		for _, r := range [...]struct {
			from    map[string]quantity.Quantity
			name    string
			targets []string
		}{
			{requests, "cpu", []string{RequestsCPU, CPU}},
			{requests, "memory", []string{RequestsMemory, Memory}},
			{limits, "cpu", []string{LimitsCPU}},
			{limits, "memory", []string{LimitsMemory}},
		} {
			// Zero when unset: a quota of compute resources covers every
			// pod (and refuses one whose usage it cannot count).
			q := r.from[r.name]
			for _, t := range r.targets {
				u[t] = q
			}
		}
	}
	return u
}

// Terminal says whether a pod has finished (it no longer counts).
func Terminal(p *corev1.Pod) bool {
	ph := p.GetStatus().GetPhase()
	return ph == "Succeeded" || ph == "Failed"
}

// Covered keeps the entries of usage that hard limits.
func Covered(hard map[string]string, usage map[string]quantity.Quantity) map[string]quantity.Quantity {
	var out map[string]quantity.Quantity
	for k, q := range usage {
		if _, ok := hard[k]; ok {
			if out == nil {
				out = map[string]quantity.Quantity{}
			}
			out[k] = q
		}
	}
	return out
}

// MissingRequests names, for a pod under a quota that limits compute
// resources, the resources some container does not set ("requests.cpu"),
// with those containers: Kubernetes refuses such a pod, whose usage the
// quota could not count. Empty when all is set.
func MissingRequests(hard map[string]string, pod *corev1.Pod) []string {
	var out []string
	for _, key := range []string{RequestsCPU, CPU, RequestsMemory, Memory, LimitsCPU, LimitsMemory} {
		if _, ok := hard[key]; !ok {
			continue
		}
		kind, res, found := strings.Cut(key, ".")
		if !found {
			kind, res = "requests", key
		}
		var missing []string
		for _, cs := range [][]*corev1.Container{pod.GetSpec().GetInitContainers(), pod.GetSpec().GetContainers()} {
			for _, c := range cs {
				list := c.GetResources().GetRequests()
				if kind == "limits" {
					list = c.GetResources().GetLimits()
				}
				if _, ok := list[res]; !ok {
					missing = append(missing, c.GetName())
				}
			}
		}
		if len(missing) > 0 {
			out = append(out, kind+"."+res+" for: "+strings.Join(missing, ","))
		}
	}
	return dedupe(out)
}

func dedupe(xs []string) []string {
	slices.Sort(xs)
	return slices.Compact(xs)
}

// Exceeded checks a charge of delta against a quota's hard limits and used
// amounts. It returns the resources over their limit (sorted), and the
// resources hard limits that used does not report yet (the controller has
// not computed them), which make the check impossible.
func Exceeded(hard, used map[string]string, delta map[string]quantity.Quantity) (over, unknown []string) {
	for _, k := range slices.Sorted(maps.Keys(delta)) {
		h, ok := hard[k]
		if !ok {
			continue
		}
		hq, err := quantity.Parse(h)
		if err != nil {
			continue // validation refuses such a quota
		}
		u, ok := used[k]
		if !ok {
			unknown = append(unknown, k)
			continue
		}
		uq, err := quantity.Parse(u)
		if err != nil {
			unknown = append(unknown, k)
			continue
		}
		sum, err := uq.Add(delta[k])
		if err != nil || sum.Cmp(hq) > 0 {
			over = append(over, k)
		}
	}
	return over, unknown
}

// Add returns used + delta for the resources hard limits; the other
// entries of used are kept as they are.
func Add(hard, used map[string]string, delta map[string]quantity.Quantity) map[string]string {
	out := make(map[string]string, len(used)+len(delta))
	maps.Copy(out, used)
	for k, d := range delta {
		if _, ok := hard[k]; !ok {
			continue
		}
		u, err := quantity.Parse(used[k])
		if err != nil || u.IsZero() {
			out[k] = d.String() // in the format of the object's quantity ("256Mi", not "268435456")
			continue
		}
		if sum, err := u.Add(d); err == nil {
			out[k] = sum.String()
		}
	}
	return out
}

// Format writes resources as Kubernetes' quota messages do:
// "pods=1,requests.cpu=500m", sorted by name. keys chooses which.
func Format(keys []string, values func(k string) string) string {
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+values(k))
	}
	return strings.Join(parts, ",")
}

// Sum adds usages.
func Sum(into, u map[string]quantity.Quantity) {
	for k, q := range u {
		if s, err := into[k].Add(q); err == nil {
			into[k] = s
		}
	}
}
