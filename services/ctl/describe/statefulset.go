package describe

import (
	"fmt"
	"slices"
	"strings"

	"skiff.dev/internal/printers"
	"skiff.dev/internal/storageclass"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
)

// statefulSet describes a StatefulSet as kubectl's StatefulSetDescriber
// does: metadata, selector, desired and total replicas, the update
// strategy (partition and maxUnavailable of a rolling update), its pods'
// phases (rel.Pods: the pods it controls), the pod template and the claim
// templates.
func (p *out) statefulSet(ss *appsv1.StatefulSet, rel Related) {
	m, spec, st := ss.GetMetadata(), ss.GetSpec(), ss.GetStatus()
	p.meta(m, true)
	p.kv(0, "CreationTimestamp", formatTime(m.GetCreationTimestamp()))
	p.kv(0, "Selector", printers.FormatSelector(spec.GetSelector()))
	p.multi(0, "Labels", m.GetLabels(), "=")
	p.multi(0, "Annotations", m.GetAnnotations(), ": ")
	p.kv(0, "Replicas", fmt.Sprintf("%d desired | %d total", spec.GetReplicas(), st.GetReplicas()))
	p.kv(0, "Update Strategy", spec.GetUpdateStrategy().GetType())
	if ru := spec.GetUpdateStrategy().GetRollingUpdate(); ru != nil && ru.Partition != nil {
		p.kv(1, "Partition", ru.GetPartition())
		if ru.GetMaxUnavailable().GetValue() != nil {
			p.kv(1, "MaxUnavailable", intOrString(ru.GetMaxUnavailable()))
		}
	}
	phases := map[string]int{}
	for _, pod := range rel.Pods {
		phases[pod.GetStatus().GetPhase()]++
	}
	p.kv(0, "Pods Status", fmt.Sprintf("%d Running / %d Waiting / %d Succeeded / %d Failed",
		phases["Running"], phases["Pending"]+phases[""], phases["Succeeded"], phases["Failed"]))
	p.template(spec.GetTemplate())
	p.claimTemplates(spec.GetVolumeClaimTemplates())
}

// claimTemplates is kubectl's describeVolumeClaimTemplates.
func (p *out) claimTemplates(templates []*corev1.PersistentVolumeClaim) {
	if len(templates) == 0 {
		p.kv(0, "Volume Claims", "<none>")
		return
	}
	p.line(0, "Volume Claims:")
	for _, c := range templates {
		cm, cs := c.GetMetadata(), c.GetSpec()
		p.kv(1, "Name", cm.GetName())
		p.kv(1, "StorageClass", storageclass.ClaimClass(c))
		p.multi(1, "Labels", cm.GetLabels(), "=")
		p.multi(1, "Annotations", cm.GetAnnotations(), ": ")
		p.kv(1, "Capacity", orDefault(cs.GetResources().GetRequests()["storage"], "<default>"))
		p.kv(1, "Access Modes", "["+strings.Join(slices.Clone(cs.GetAccessModes()), " ")+"]")
	}
}
