package describe

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"skiff.dev/internal/printers"
	appsv1 "skiff.dev/proto/apps/v1"
)

// daemonSet describes a DaemonSet as kubectl's DaemonSetDescriber does:
// metadata, selector and node selector, the status counts of nodes, its
// pods' phases (rel.Pods: the pods it controls) and the pod template.
func (p *out) daemonSet(ds *appsv1.DaemonSet, rel Related) {
	m, spec, st := ds.GetMetadata(), ds.GetSpec(), ds.GetStatus()
	p.meta(m, true)
	p.kv(0, "Selector", printers.FormatSelector(spec.GetSelector()))
	p.kv(0, "Node-Selector", formatLabels(spec.GetTemplate().GetSpec().GetNodeSelector()))
	p.multi(0, "Labels", m.GetLabels(), "=")
	p.multi(0, "Annotations", m.GetAnnotations(), ": ")
	p.kv(0, "Desired Number of Nodes Scheduled", st.GetDesiredNumberScheduled())
	p.kv(0, "Current Number of Nodes Scheduled", st.GetCurrentNumberScheduled())
	p.kv(0, "Number of Nodes Scheduled with Up-to-date Pods", st.GetUpdatedNumberScheduled())
	p.kv(0, "Number of Nodes Scheduled with Available Pods", st.GetNumberAvailable())
	p.kv(0, "Number of Nodes Misscheduled", st.GetNumberMisscheduled())
	phases := map[string]int{}
	for _, pod := range rel.Pods {
		phases[pod.GetStatus().GetPhase()]++
	}
	p.kv(0, "Pods Status", fmt.Sprintf("%d Running / %d Waiting / %d Succeeded / %d Failed",
		phases["Running"], phases["Pending"]+phases[""], phases["Succeeded"], phases["Failed"]))
	p.template(spec.GetTemplate())
}

// formatLabels is Kubernetes' labels.FormatLabels: k=v pairs sorted by key,
// comma-separated; "<none>" for none.
func formatLabels(l map[string]string) string {
	if len(l) == 0 {
		return "<none>"
	}
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}
