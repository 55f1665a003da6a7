package describe

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"skiff.dev/internal/printers"
	corev1 "skiff.dev/proto/core/v1"
)

// PersistentVolume writes the description of a PersistentVolume as
// kubectl's describe does, followed by its events.
func PersistentVolume(w io.Writer, pv *corev1.PersistentVolume, events []*corev1.Event, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := &out{w: tw, now: now}
	p.persistentVolume(pv)
	p.events(events)
	return tw.Flush()
}

// PersistentVolumeClaim writes the description of a claim as kubectl's
// describe does: pods are the claim's namespace's pods, of which those
// whose volumes name the claim are listed as "Used By".
func PersistentVolumeClaim(w io.Writer, pvc *corev1.PersistentVolumeClaim, pods []*corev1.Pod, events []*corev1.Event, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := &out{w: tw, now: now}
	p.persistentVolumeClaim(pvc, pods)
	p.events(events)
	return tw.Flush()
}

func (p *out) persistentVolume(pv *corev1.PersistentVolume) {
	m, spec, st := pv.GetMetadata(), pv.GetSpec(), pv.GetStatus()
	p.meta(m, false)
	p.multi(0, "Labels", m.GetLabels(), "=")
	p.multi(0, "Annotations", m.GetAnnotations(), ": ")
	p.kv(0, "Finalizers", "["+strings.Join(m.GetFinalizers(), " ")+"]")
	p.kv(0, "StorageClass", spec.GetStorageClassName())
	if m.GetDeletionTimestamp() != nil {
		p.kv(0, "Status", fmt.Sprintf("Terminating (lasts %s)", humanSince(p.now, m.GetDeletionTimestamp().AsTime())))
	} else {
		p.kv(0, "Status", st.GetPhase())
	}
	claim := ""
	if ref := spec.GetClaimRef(); ref != nil {
		claim = ref.GetNamespace() + "/" + ref.GetName()
	}
	p.kv(0, "Claim", claim)
	p.kv(0, "Reclaim Policy", spec.GetPersistentVolumeReclaimPolicy())
	p.kv(0, "Access Modes", printers.AccessModes(spec.GetAccessModes()))
	p.kv(0, "VolumeMode", orDefault(spec.GetVolumeMode(), "Filesystem"))
	p.kv(0, "Capacity", spec.GetCapacity()["storage"])
	if na := spec.GetNodeAffinity(); na == nil {
		p.kv(0, "Node Affinity", "<none>")
	} else {
		p.line(0, "Node Affinity:\t")
		p.line(1, "Required Terms:\t")
		terms := na.GetRequired().GetNodeSelectorTerms()
		if len(terms) == 0 {
			p.line(2, "<none>")
		}
		for i, t := range terms {
			var exprs []string
			for _, e := range t.GetMatchExpressions() {
				exprs = append(exprs, fmt.Sprintf("%s %s [%s]", e.GetKey(), strings.ToLower(e.GetOperator()), strings.Join(e.GetValues(), ", ")))
			}
			for _, e := range t.GetMatchFields() {
				exprs = append(exprs, fmt.Sprintf("%s %s [%s]", e.GetKey(), strings.ToLower(e.GetOperator()), strings.Join(e.GetValues(), ", ")))
			}
			p.kv(2, fmt.Sprintf("Term %d", i), strings.Join(exprs, "\n"+strings.Repeat(" ", 20)))
		}
	}
	p.kv(0, "Message", st.GetMessage())
	p.line(0, "Source:")
	switch {
	case spec.GetLocal() != nil:
		p.kv(1, "Type", "LocalVolume (a persistent volume backed by local storage on a node)")
		p.kv(1, "Path", spec.GetLocal().GetPath())
	case spec.GetHostPath() != nil:
		p.kv(1, "Type", "HostPath (bare host directory volume)")
		p.kv(1, "Path", spec.GetHostPath().GetPath())
		p.kv(1, "HostPathType", spec.GetHostPath().GetType())
	}
}

func (p *out) persistentVolumeClaim(pvc *corev1.PersistentVolumeClaim, pods []*corev1.Pod) {
	m, spec, st := pvc.GetMetadata(), pvc.GetSpec(), pvc.GetStatus()
	p.meta(m, true)
	p.kv(0, "StorageClass", spec.GetStorageClassName())
	if m.GetDeletionTimestamp() != nil {
		p.kv(0, "Status", fmt.Sprintf("Terminating (lasts %s)", humanSince(p.now, m.GetDeletionTimestamp().AsTime())))
	} else {
		p.kv(0, "Status", st.GetPhase())
	}
	p.kv(0, "Volume", spec.GetVolumeName())
	p.multi(0, "Labels", m.GetLabels(), "=")
	p.multi(0, "Annotations", m.GetAnnotations(), ": ")
	p.kv(0, "Finalizers", "["+strings.Join(m.GetFinalizers(), " ")+"]")
	// Capacity and access modes are the bound volume's, shown once bound.
	p.kv(0, "Capacity", st.GetCapacity()["storage"])
	p.kv(0, "Access Modes", printers.AccessModes(st.GetAccessModes()))
	p.kv(0, "VolumeMode", orDefault(spec.GetVolumeMode(), "Filesystem"))
	var users []string
	for _, pod := range pods {
		if pod.GetMetadata().GetNamespace() != m.GetNamespace() {
			continue
		}
		if slices.ContainsFunc(pod.GetSpec().GetVolumes(), func(v *corev1.Volume) bool {
			return v.GetPersistentVolumeClaim().GetClaimName() == m.GetName()
		}) {
			users = append(users, pod.GetMetadata().GetName())
		}
	}
	slices.Sort(users)
	if len(users) == 0 {
		p.kv(0, "Used By", "<none>")
	} else {
		p.kv(0, "Used By", strings.Join(users, "\n\t"))
	}
}

func humanSince(now, t time.Time) string {
	return printers.HumanDuration(now.Sub(t))
}
