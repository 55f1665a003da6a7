package plugins

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"skiff.dev/internal/labels"
	corev1 "skiff.dev/proto/core/v1"
	policyv1 "skiff.dev/proto/policy/v1"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

// Candidate sampling, as Kubernetes' DefaultPreemptionArgs defaults: the
// dry runs stop once this share of the nodes (at least the absolute
// number) gave a candidate, so a big cluster is not searched whole.
const (
	MinCandidateNodesPercentage = 10
	MinCandidateNodesAbsolute   = 100
)

// Messages of a preemption that could not help, as Kubernetes words them.
const (
	msgPreemptionNever     = "not eligible due to preemptionPolicy=Never."
	msgTerminatingVictim   = "not eligible due to a terminating pod on the nominated node."
	msgNoVictims           = "No preemption victims found for incoming pod"
	msgPreemptionNotHelpul = "Preemption is not helpful for scheduling"
)

// DefaultPreemption is the PostFilter that makes room for a pod that fits
// nowhere by evicting lower-priority pods, as Kubernetes' plugin of the
// same name: it dry-runs, on a sample of the nodes where only removable
// pods stand in the way, the smallest set of lower-priority victims that
// lets the pod fit (respecting PodDisruptionBudgets where it can), picks
// the node whose eviction costs least (pickOneNode), and asks the
// Preempter to nominate the pod there and evict the victims. The pod is
// then retried and binds once they are gone.
type DefaultPreemption struct {
	h framework.Handle

	mu   sync.Mutex
	rand *rand.Rand
}

// NewDefaultPreemption builds the plugin (it takes no args).
func NewDefaultPreemption(_ any, h framework.Handle) (framework.Plugin, error) {
	return &DefaultPreemption{h: h, rand: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}, nil
}

// Name implements framework.Plugin.
func (*DefaultPreemption) Name() string { return config.DefaultPreemption }

// PostFilter implements framework.PostFilterPlugin.
func (pl *DefaultPreemption) PostFilter(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, d *framework.Diagnosis) (string, *framework.Status) {
	node, s := pl.preempt(ctx, state, pod, d)
	if msg := s.Message(); msg != "" {
		return node, framework.NewStatus(s.Code(), "preemption: "+msg)
	}
	return node, s
}

func (pl *DefaultPreemption) preempt(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, d *framework.Diagnosis) (string, *framework.Status) {
	snap := pl.h.Snapshot()
	if ok, msg := EligibleToPreempt(pod, snap, d); !ok {
		return "", framework.NewStatus(framework.Unschedulable, msg)
	}
	potential, unresolvable := potentialNodes(snap, d)
	if len(potential) == 0 {
		return "", framework.NewStatus(framework.Unschedulable, fitMessage(snap.NumNodes(), map[string]int{msgPreemptionNotHelpul: unresolvable}))
	}
	pl.mu.Lock()
	offset := pl.rand.IntN(len(potential))
	pl.mu.Unlock()
	candidates, reasons := pl.dryRun(ctx, state, pod, potential, offset, NumCandidates(len(potential)))
	if len(candidates) == 0 {
		if unresolvable > 0 {
			reasons[msgPreemptionNotHelpul] += unresolvable
		}
		return "", framework.NewStatus(framework.Unschedulable, fitMessage(snap.NumNodes(), reasons))
	}
	best := PickOneNode(candidates)
	pre := pl.h.Preempter()
	if pre == nil {
		return "", framework.NewStatus(framework.Error, "no preempter to evict the victims")
	}
	if err := pre.Preempt(ctx, pod, best.Node, best.Victims); err != nil {
		return "", framework.AsStatus(fmt.Errorf("preempting on node %s: %w", best.Node, err))
	}
	return best.Node, nil
}

// fitMessage words the nodes' reasons as a FitError does.
func fitMessage(numNodes int, reasons map[string]int) string {
	d := framework.Diagnosis{NodeToStatus: map[string]*framework.Status{}}
	i := 0
	for r, n := range reasons {
		for range n {
			d.NodeToStatus[fmt.Sprint(i)] = framework.NewStatus(framework.Unschedulable, r)
			i++
		}
	}
	return (&framework.FitError{NumAllNodes: numNodes, Diagnosis: d}).Error()
}

// EligibleToPreempt says whether pod may preempt: not when its
// preemptionPolicy is Never, nor while a lower-priority pod it preempted
// is still terminating on its nominated node (unless that node no longer
// suits it at all), as Kubernetes' PodEligibleToPreemptOthers.
func EligibleToPreempt(pod *framework.PodInfo, snap *framework.Snapshot, d *framework.Diagnosis) (bool, string) {
	spec := pod.Pod.GetSpec()
	if spec.GetPreemptionPolicy() == "Never" {
		return false, msgPreemptionNever
	}
	nominated := pod.Pod.GetStatus().GetNominatedNodeName()
	if nominated == "" {
		return true, ""
	}
	if s, ok := d.NodeToStatus[nominated]; ok && s.Code() == framework.UnschedulableAndUnresolvable {
		return true, ""
	}
	if ni := snap.Get(nominated); ni != nil {
		for _, p := range ni.Pods {
			if p.Priority() < pod.Priority() && TerminatingByPreemption(p.Pod) {
				return false, msgTerminatingVictim
			}
		}
	}
	return true, ""
}

// TerminatingByPreemption says whether p is being deleted because the
// scheduler preempted it (its DisruptionTarget condition says so).
func TerminatingByPreemption(p *corev1.Pod) bool {
	if p.GetMetadata().GetDeletionTimestamp() == nil {
		return false
	}
	for _, c := range p.GetStatus().GetConditions() {
		if c.GetType() == "DisruptionTarget" && c.GetStatus() == "True" && c.GetReason() == "PreemptionByScheduler" {
			return true
		}
	}
	return false
}

// potentialNodes are the nodes where removing pods could help: those a
// filter rejected as Unschedulable (not UnschedulableAndUnresolvable, nor
// left out by PreFilter). It also counts the others.
func potentialNodes(snap *framework.Snapshot, d *framework.Diagnosis) (out []*framework.NodeInfo, unresolvable int) {
	for _, n := range snap.List() {
		s, ok := d.NodeToStatus[n.Name()]
		if !ok || s.Code() == framework.UnschedulableAndUnresolvable {
			unresolvable++
			continue
		}
		out = append(out, n)
	}
	return out, unresolvable
}

// NumCandidates is how many candidate nodes the dry runs look for among
// n potential ones: 10% of them, at least 100, at most n.
func NumCandidates(n int) int {
	c := n * MinCandidateNodesPercentage / 100
	if c < MinCandidateNodesAbsolute {
		c = MinCandidateNodesAbsolute
	}
	return min(c, n)
}

// Candidate is a node where evicting Victims lets the pod fit.
type Candidate struct {
	Node    string
	Victims []*framework.PodInfo
	// NumPDBViolations counts the victims whose eviction a budget does
	// not allow.
	NumPDBViolations int
}

// dryRun selects victims on the potential nodes in parallel, from offset
// on, until want candidates are found (of which at least one violates no
// budget) or every node was tried. It also counts the reasons of nodes
// that gave none.
func (pl *DefaultPreemption) dryRun(ctx context.Context, state *framework.CycleState, pod *framework.PodInfo, nodes []*framework.NodeInfo, offset, want int) ([]Candidate, map[string]int) {
	pdbs := pl.h.PDBs()
	var mu sync.Mutex
	var nonViolating, violating []Candidate
	reasons := map[string]int{}
	n := len(nodes)
	pl.h.Parallelizer().ForEachChunk(n, func(lo, hi int) bool {
		for i := lo; i < hi; i++ {
			ni := nodes[(offset+i)%n].Clone()
			victims, nViolating, s := SelectVictimsOnNode(ctx, pl.h, state.Clone(), pod, ni, pdbs)
			mu.Lock()
			switch {
			case s.IsSuccess() && len(victims) > 0:
				c := Candidate{Node: ni.Name(), Victims: victims, NumPDBViolations: nViolating}
				if nViolating == 0 {
					nonViolating = append(nonViolating, c)
				} else {
					violating = append(violating, c)
				}
			case s.IsSuccess():
				// It fits without evicting anything (a pod left since
				// the cycle's filters ran): nothing to preempt, a cheap
				// candidate still.
				nonViolating = append(nonViolating, Candidate{Node: ni.Name()})
			default:
				for _, r := range s.Reasons() {
					reasons[r]++
				}
			}
			enough := len(nonViolating) > 0 && len(nonViolating)+len(violating) >= want
			mu.Unlock()
			if enough {
				return false
			}
		}
		return true
	})
	return append(nonViolating, violating...), reasons
}

// SelectVictimsOnNode finds the fewest, least important pods of lower
// priority whose removal from ni lets pod fit, as Kubernetes'
// selectVictimsOnNode: remove every lower-priority pod; if pod still does
// not fit, the node is no candidate; else add them back one by one, most
// important first (those whose eviction would violate a budget before the
// others), keeping out only those without which pod no longer fits. Each
// removal and addition goes to the PreFilter plugins' state too (their
// PreFilterExtensions), so that pod affinity and topology spread see the
// node as it would be. ni and state are changed (pass clones). The
// victims come most important first, with how many of them violate a
// budget.
func SelectVictimsOnNode(ctx context.Context, h framework.Handle, state *framework.CycleState, pod *framework.PodInfo, ni *framework.NodeInfo, pdbs []*policyv1.PodDisruptionBudget) ([]*framework.PodInfo, int, *framework.Status) {
	remove := func(p *framework.PodInfo) *framework.Status {
		ni.RemovePod(p)
		return h.RunPreFilterExtensionRemovePod(ctx, state, pod, p, ni)
	}
	add := func(p *framework.PodInfo) *framework.Status {
		ni.AddPod(p)
		return h.RunPreFilterExtensionAddPod(ctx, state, pod, p, ni)
	}
	var potential []*framework.PodInfo
	for _, p := range slices.Clone(ni.Pods) {
		if p.Priority() < pod.Priority() {
			potential = append(potential, p)
			if s := remove(p); !s.IsSuccess() {
				return nil, 0, s
			}
		}
	}
	if len(potential) == 0 {
		return nil, 0, framework.NewStatus(framework.UnschedulableAndUnresolvable, msgNoVictims)
	}
	if s := h.RunFilterWithNominatedPods(ctx, state, pod, ni); !s.IsSuccess() {
		return nil, 0, s
	}
	slices.SortStableFunc(potential, moreImportantFirst)
	violating, nonViolating := splitByPDBViolation(potential, pdbs)
	var victims []*framework.PodInfo
	numViolating := 0
	reprieve := func(p *framework.PodInfo) (fits bool, s *framework.Status) {
		if s := add(p); !s.IsSuccess() {
			return false, s
		}
		s = h.RunFilterWithNominatedPods(ctx, state, pod, ni)
		if s.Code() == framework.Error {
			return false, s
		}
		if !s.IsSuccess() {
			if s := remove(p); !s.IsSuccess() {
				return false, s
			}
			victims = append(victims, p)
			return false, nil
		}
		return true, nil
	}
	for _, p := range violating {
		fits, s := reprieve(p)
		if s != nil {
			return nil, 0, s
		}
		if !fits {
			numViolating++
		}
	}
	for _, p := range nonViolating {
		if _, s := reprieve(p); s != nil {
			return nil, 0, s
		}
	}
	slices.SortStableFunc(victims, moreImportantFirst)
	return victims, numViolating, nil
}

// moreImportantFirst orders pods by priority, highest first, then by
// start time, earliest first (Kubernetes' MoreImportantPod).
func moreImportantFirst(a, b *framework.PodInfo) int {
	if pa, pb := a.Priority(), b.Priority(); pa != pb {
		if pa > pb {
			return -1
		}
		return 1
	}
	return startTime(a).Compare(startTime(b))
}

// startTime is the pod's status.startTime, or its creation when it has
// none yet (a pod not started counts as started now: least important).
func startTime(p *framework.PodInfo) time.Time {
	if st := p.Pod.GetStatus().GetStartTime(); st != nil {
		return st.AsTime()
	}
	if ct := p.Pod.GetMetadata().GetCreationTimestamp(); ct != nil {
		return ct.AsTime()
	}
	return time.Time{}
}

// splitByPDBViolation splits pods (in order) into those whose eviction,
// with the ones before them, a PodDisruptionBudget does not allow, and the
// others, as Kubernetes' filterPodsWithPDBViolation: each matching budget
// (same namespace, a non-empty selector matching the pod's labels, the pod
// not already among its disrupted pods) allows status.disruptionsAllowed
// evictions.
func splitByPDBViolation(pods []*framework.PodInfo, pdbs []*policyv1.PodDisruptionBudget) (violating, nonViolating []*framework.PodInfo) {
	if len(pdbs) == 0 {
		return nil, pods
	}
	allowed := make([]int32, len(pdbs))
	selectors := make([]*labels.Selector, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.GetStatus().GetDisruptionsAllowed()
		if sel, err := labels.FromProto(pdb.GetSpec().GetSelector()); err == nil && !sel.Empty() && !sel.IsNothing() {
			selectors[i] = &sel
		}
	}
	for _, p := range pods {
		m := p.Pod.GetMetadata()
		violated := false
		if len(m.GetLabels()) > 0 {
			for i, pdb := range pdbs {
				if selectors[i] == nil || pdb.GetMetadata().GetNamespace() != m.GetNamespace() || !selectors[i].Matches(m.GetLabels()) {
					continue
				}
				if _, ok := pdb.GetStatus().GetDisruptedPods()[m.GetName()]; ok {
					continue
				}
				allowed[i]--
				if allowed[i] < 0 {
					violated = true
				}
			}
		}
		if violated {
			violating = append(violating, p)
		} else {
			nonViolating = append(nonViolating, p)
		}
	}
	return violating, nonViolating
}

// PickOneNode chooses among candidates as Kubernetes'
// pickOneNodeForPreemption: a node without victims at once; else the
// fewest budget violations, then the lowest highest-victim priority, then
// the smallest sum of victim priorities, then the fewest victims, then
// the latest start among the highest-priority victims, then the first.
func PickOneNode(candidates []Candidate) Candidate {
	for _, c := range candidates {
		if len(c.Victims) == 0 {
			return c
		}
	}
	best := candidates
	narrow := func(score func(c Candidate) int64) {
		top := int64(math.MinInt64)
		var kept []Candidate
		for _, c := range best {
			switch s := score(c); {
			case s > top:
				top, kept = s, []Candidate{c}
			case s == top:
				kept = append(kept, c)
			}
		}
		best = kept
	}
	narrow(func(c Candidate) int64 { return -int64(c.NumPDBViolations) })
	if len(best) > 1 {
		narrow(func(c Candidate) int64 { return -int64(c.Victims[0].Priority()) })
	}
	if len(best) > 1 {
		narrow(func(c Candidate) int64 {
			var sum int64
			for _, v := range c.Victims {
				// Shifted so that negative priorities still add up.
				sum += int64(v.Priority()) + int64(math.MaxInt32) + 1
			}
			return -sum
		})
	}
	if len(best) > 1 {
		narrow(func(c Candidate) int64 { return -int64(len(c.Victims)) })
	}
	if len(best) > 1 {
		narrow(func(c Candidate) int64 {
			// The earliest start among the highest-priority victims;
			// the node where that is latest wins.
			top := c.Victims[0].Priority()
			earliest := startTime(c.Victims[0])
			for _, v := range c.Victims[1:] {
				if v.Priority() == top && startTime(v).Before(earliest) {
					earliest = startTime(v)
				}
			}
			return earliest.UnixNano()
		})
	}
	return best[0]
}
