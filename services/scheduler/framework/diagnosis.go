package framework

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Diagnosis records why a pod fits nowhere.
type Diagnosis struct {
	// NodeToStatus holds each rejected node's status, naming the plugin.
	NodeToStatus map[string]*Status
	// UnschedulablePlugins are the plugins that rejected the pod somewhere
	// (the queue could use them to know which events may help).
	UnschedulablePlugins map[string]struct{}
	// PreFilterMsg is set when a PreFilter plugin rejected the pod for
	// every node.
	PreFilterMsg string
	// PostFilterMsg is what the PostFilter plugins said.
	PostFilterMsg string
}

// NoteRejectedAll records a rejection of every node by one status (a
// PreFilter rejection, or nodes excluded by a PreFilterResult).
func (d *Diagnosis) NoteRejectedAll(nodes []*NodeInfo, s *Status) {
	if d.NodeToStatus == nil {
		d.NodeToStatus = make(map[string]*Status, len(nodes))
	}
	for _, n := range nodes {
		if _, ok := d.NodeToStatus[n.Name()]; !ok {
			d.NodeToStatus[n.Name()] = s
		}
	}
	d.addPlugin(s.Plugin())
}

// FitError is the error of a pod that fits on no node; its message is the
// FailedScheduling event's.
type FitError struct {
	Pod         *PodInfo
	NumAllNodes int
	Diagnosis   Diagnosis
}

// ReasonCount is how many nodes gave one reason.
type ReasonCount struct {
	Reason string
	Count  int
}

// Histogram counts the nodes per reason, most frequent first (then by
// reason), as the FailedScheduling message lists them. A node rejected for
// two reasons (cpu and memory) counts under both.
func (d *Diagnosis) Histogram() []ReasonCount {
	counts := map[string]int{}
	for _, s := range d.NodeToStatus {
		for _, r := range s.Reasons() {
			counts[r]++
		}
	}
	out := make([]ReasonCount, 0, len(counts))
	for r, c := range counts {
		out = append(out, ReasonCount{Reason: r, Count: c})
	}
	slices.SortFunc(out, func(a, b ReasonCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Reason, b.Reason)
	})
	return out
}

// ErrNoNodesAvailable is the message when the cluster has no node at all.
const ErrNoNodesAvailable = "no nodes available to schedule pods"

// Error is the explanation, as Kubernetes words it:
//
//	0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}.
func (e *FitError) Error() string {
	if e.NumAllNodes == 0 {
		return ErrNoNodesAvailable
	}
	var b strings.Builder
	fmt.Fprintf(&b, "0/%d nodes are available:", e.NumAllNodes)
	if m := e.Diagnosis.PreFilterMsg; m != "" {
		b.WriteString(" ")
		b.WriteString(m)
		b.WriteString(".")
	} else {
		hist := e.Diagnosis.Histogram()
		for i, rc := range hist {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(" ")
			b.WriteString(strconv.Itoa(rc.Count))
			b.WriteString(" ")
			b.WriteString(rc.Reason)
		}
		b.WriteString(".")
	}
	if m := e.Diagnosis.PostFilterMsg; m != "" {
		b.WriteString(" ")
		b.WriteString(m)
	}
	return b.String()
}
