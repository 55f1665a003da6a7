package deployment

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "skiff.dev/proto/apps/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// This file is the rollout arithmetic, pure: from the Deployment's bounds and
// what each ReplicaSet has, which ReplicaSets to scale to what. It follows
// Kubernetes' pkg/controller/deployment (rolling.go, recreate.go, sync.go's
// scale) and deployment/util.

// Strategy types.
const (
	RollingUpdate = "RollingUpdate"
	Recreate      = "Recreate"
)

// rsState is what the arithmetic knows of one ReplicaSet.
type rsState struct {
	Name string
	// Created orders ReplicaSets (oldest first, then by name).
	Created time.Time
	// Replicas is spec.replicas, the size the Deployment controller sets.
	Replicas int32
	// Current, Ready and Available are the ReplicaSet controller's counts
	// (status.replicas, readyReplicas, availableReplicas). Available counts
	// pods ready for minReadySeconds.
	Current, Ready, Available int32
	// Desired and MaxReplicas are the desired-replicas and max-replicas
	// annotations: the Deployment's replicas and replicas+maxSurge when the
	// ReplicaSet was last scaled (-1 when absent or malformed).
	Desired, MaxReplicas int32
}

// available is the ReplicaSet's available pods that survive its current
// size: the ReplicaSet controller removes unavailable pods first, and a
// status written before a scale-down may count pods about to go.
func (r rsState) available() int32 { return max(min(r.Available, r.Replicas), 0) }

// step is one scaling decision.
type step struct {
	Name     string
	From, To int32
}

func (s step) String() string { return fmt.Sprintf("%s %d->%d", s.Name, s.From, s.To) }

// bounds are a Deployment's rollout bounds, resolved to counts.
type bounds struct {
	Replicas int32
	// MaxSurge is how many pods above Replicas may exist during a rolling
	// update; 0 for Recreate.
	MaxSurge int32
	// MaxUnavailable is how many of Replicas may be unavailable during a
	// rolling update, at most Replicas; 0 for Recreate and when Replicas is 0.
	MaxUnavailable int32
}

// MinAvailable is the number of available pods a rolling update keeps.
func (b bounds) MinAvailable() int32 { return b.Replicas - b.MaxUnavailable }

// boundsOf resolves d's replicas and rolling-update bounds.
func boundsOf(d *appsv1.Deployment) (bounds, error) {
	b := bounds{Replicas: replicasOf(d)}
	st := d.GetSpec().GetStrategy()
	if st.GetType() != RollingUpdate && st.GetType() != "" {
		return b, nil
	}
	ru := st.GetRollingUpdate()
	surge, unavailable, err := resolveFenceposts(ru.GetMaxSurge(), ru.GetMaxUnavailable(), b.Replicas)
	if err != nil {
		return b, err
	}
	b.MaxSurge = surge
	if b.Replicas > 0 {
		b.MaxUnavailable = min(unavailable, b.Replicas)
	}
	return b, nil
}

// replicasOf is spec.replicas, 1 when unset (the apiserver defaults it).
func replicasOf(d *appsv1.Deployment) int32 {
	if r := d.GetSpec().Replicas; r != nil {
		return *r
	}
	return 1
}

// resolveFenceposts scales maxSurge (rounding up) and maxUnavailable
// (rounding down) against replicas; unset values count as 0, and when both
// come out 0, maxUnavailable is 1 so that a rollout can make progress (as
// Kubernetes' ResolveFenceposts).
func resolveFenceposts(maxSurge, maxUnavailable *metav1.IntOrString, replicas int32) (surge, unavailable int32, err error) {
	surge, err = scaledValue(maxSurge, replicas, true)
	if err != nil {
		return 0, 0, fmt.Errorf("maxSurge: %w", err)
	}
	unavailable, err = scaledValue(maxUnavailable, replicas, false)
	if err != nil {
		return 0, 0, fmt.Errorf("maxUnavailable: %w", err)
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, unavailable, nil
}

// scaledValue is an IntOrString as a count: an int as is, "n%" as n% of
// total rounded up or down. Unset is 0.
func scaledValue(v *metav1.IntOrString, total int32, roundUp bool) (int32, error) {
	switch x := v.GetValue().(type) {
	case nil:
		return 0, nil
	case *metav1.IntOrString_IntVal:
		if x.IntVal < 0 {
			return 0, fmt.Errorf("%d: must not be negative", x.IntVal)
		}
		return x.IntVal, nil
	case *metav1.IntOrString_StrVal:
		s, ok := strings.CutSuffix(x.StrVal, "%")
		if !ok {
			return 0, fmt.Errorf("%q: not an integer or a percentage", x.StrVal)
		}
		pct, err := strconv.ParseInt(s, 10, 64)
		if err != nil || pct < 0 {
			return 0, fmt.Errorf("%q: not a non-negative percentage", x.StrVal)
		}
		scaled := float64(pct) * float64(total) / 100
		if roundUp {
			scaled = math.Ceil(scaled)
		} else {
			scaled = math.Floor(scaled)
		}
		return int32(min(scaled, math.MaxInt32)), nil
	}
	return 0, fmt.Errorf("unknown IntOrString variant %T", v.GetValue())
}

func sumReplicas(rses []rsState) (n int32) {
	for _, r := range rses {
		n += r.Replicas
	}
	return n
}

// byAge sorts ReplicaSets oldest first (ties by name), as Kubernetes'
// ReplicaSetsByCreationTimestamp.
func byAge(a, b rsState) int {
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// newRSReplicas is the size of the new ReplicaSet in the next step of a
// rolling update: up to replicas, without the total going above
// replicas+maxSurge (Kubernetes' NewRSNewReplicas). all includes newRS.
// Unlike Kubernetes, which sums the ReplicaSets' sizes, a ReplicaSet
// counts for the pods its controller last counted when they are more than
// its size: an old ReplicaSet just scaled down still has its pods until its
// controller has deleted them, and growing the new one meanwhile would
// make more than replicas+maxSurge pods.
func newRSReplicas(b bounds, newRS rsState, all []rsState) int32 {
	maxTotal := b.Replicas + b.MaxSurge
	var current int32
	for _, r := range all {
		current += max(r.Replicas, r.Current)
	}
	if current >= maxTotal {
		return newRS.Replicas
	}
	return newRS.Replicas + max(min(maxTotal-current, b.Replicas-newRS.Replicas), 0)
}

// planRolling decides the next step of a rolling update (Kubernetes'
// rolloutRolling): scale the new ReplicaSet up within replicas+maxSurge if
// it can (or down to replicas if it is above); otherwise scale the old ones
// down as far as availability allows, keeping at least replicas-maxUnavailable
// available pods: first the old ReplicaSets' unavailable pods (so that they
// cannot block the rollout), then available ones, oldest ReplicaSets first.
// It returns nil when there is nothing to do.
func planRolling(b bounds, newRS rsState, old []rsState) []step {
	all := append(slices.Clone(old), newRS)
	// Scale up the new ReplicaSet, if we can.
	switch {
	case newRS.Replicas > b.Replicas:
		return []step{{newRS.Name, newRS.Replicas, b.Replicas}}
	case newRS.Replicas < b.Replicas:
		if n := newRSReplicas(b, newRS, all); n != newRS.Replicas {
			return []step{{newRS.Name, newRS.Replicas, n}}
		}
	}
	return planScaleDownOld(b, newRS, old)
}

// planScaleDownOld is Kubernetes' reconcileOldReplicaSets.
func planScaleDownOld(b bounds, newRS rsState, old []rsState) []step {
	old = slices.Clone(old)
	slices.SortStableFunc(old, byAge)
	oldPods := sumReplicas(old)
	if oldPods == 0 {
		return nil
	}
	allPods := oldPods + newRS.Replicas
	newUnavailable := newRS.Replicas - newRS.available()
	maxScaledDown := allPods - b.MinAvailable() - newUnavailable
	if maxScaledDown <= 0 {
		return nil
	}
	from := make([]int32, len(old))
	for i := range old {
		from[i] = old[i].Replicas
	}

	// Clean up unhealthy replicas first, else they block the rollout.
	var cleaned int32
	for i := range old {
		if cleaned >= maxScaledDown {
			break
		}
		r := &old[i]
		unhealthy := r.Replicas - r.available()
		if r.Replicas == 0 || unhealthy == 0 {
			continue
		}
		n := min(maxScaledDown-cleaned, unhealthy)
		r.Replicas -= n
		cleaned += n
	}

	// Then scale down available replicas, down to minAvailable.
	available := newRS.available()
	for _, r := range old {
		available += r.available()
	}
	if excess := available - b.MinAvailable(); excess > 0 {
		var scaled int32
		for i := range old {
			if scaled >= excess {
				break
			}
			r := &old[i]
			if r.Replicas == 0 {
				continue
			}
			n := min(r.Replicas, excess-scaled)
			r.Replicas -= n
			scaled += n
		}
	}

	var steps []step
	for i, r := range old {
		if r.Replicas != from[i] {
			steps = append(steps, step{r.Name, from[i], r.Replicas})
		}
	}
	return steps
}

// recreatePhase is where a Recreate rollout stands.
type recreatePhase int

const (
	// recreateScaleDown: old ReplicaSets still have replicas; scale them to 0.
	recreateScaleDown recreatePhase = iota
	// recreateWait: old ReplicaSets are at 0 but old pods still run.
	recreateWait
	// recreateScaleUp: no old pod is left; create or scale up the new ReplicaSet.
	recreateScaleUp
)

// planRecreate decides the next step of a Recreate rollout (Kubernetes'
// rolloutRecreate): all old ReplicaSets to 0, then wait until no old pod
// runs, then the new ReplicaSet (nil until created) to replicas.
func planRecreate(b bounds, newRS *rsState, old []rsState, oldPodsRunning bool) (recreatePhase, []step) {
	var steps []step
	for _, r := range old {
		if r.Replicas != 0 {
			steps = append(steps, step{r.Name, r.Replicas, 0})
		}
	}
	if len(steps) > 0 {
		return recreateScaleDown, steps
	}
	if oldPodsRunning {
		return recreateWait, nil
	}
	if newRS != nil && newRS.Replicas != b.Replicas {
		steps = []step{{newRS.Name, newRS.Replicas, b.Replicas}}
	}
	return recreateScaleUp, steps
}

// planScale resizes the ReplicaSets of a Deployment whose replicas changed
// (Kubernetes' scale in sync.go). newRS may be nil (a paused Deployment
// whose template changed). With one active ReplicaSet (or none: then the
// newest), that one gets all replicas; when the new ReplicaSet is saturated,
// old ones go to 0; otherwise, during a rolling update, the difference
// between replicas+maxSurge and the ReplicaSets' total is spread across the
// active ReplicaSets in proportion to their size at the time they were last
// scaled (their max-replicas annotation). statusReplicas is the Deployment's
// status.replicas, the fallback proportion base.
func planScale(b bounds, rolling bool, newRS *rsState, old []rsState, statusReplicas int32) []step {
	if r := activeOrLatest(newRS, old); r != nil {
		if r.Replicas == b.Replicas {
			return nil
		}
		return []step{{r.Name, r.Replicas, b.Replicas}}
	}
	if newRS != nil && newRS.Replicas == b.Replicas && newRS.Desired == b.Replicas && newRS.Available == b.Replicas {
		var steps []step
		for _, r := range old {
			if r.Replicas > 0 {
				steps = append(steps, step{r.Name, r.Replicas, 0})
			}
		}
		return steps
	}
	if !rolling {
		return nil
	}
	var active []rsState
	for _, r := range old {
		if r.Replicas > 0 {
			active = append(active, r)
		}
	}
	if newRS != nil && newRS.Replicas > 0 {
		active = append(active, *newRS)
	}
	allowed := int32(0)
	if b.Replicas > 0 {
		allowed = b.Replicas + b.MaxSurge
	}
	toAdd := allowed - sumReplicas(active)
	if toAdd == 0 || len(active) == 0 {
		return nil
	}
	// Largest first; among equals, scale up newer ones first and scale down
	// older ones first.
	slices.SortStableFunc(active, func(x, y rsState) int {
		if c := cmp.Compare(y.Replicas, x.Replicas); c != 0 {
			return c
		}
		if toAdd > 0 {
			return byAge(y, x)
		}
		return byAge(x, y)
	})
	maxReplicas := b.Replicas + b.MaxSurge
	sizes := make([]int32, len(active))
	var added int32
	for i, r := range active {
		p := proportion(r, b.Replicas, maxReplicas, statusReplicas, toAdd, added)
		sizes[i] = r.Replicas + p
		added += p
	}
	// The rounding leftover goes to the largest.
	sizes[0] = max(sizes[0]+toAdd-added, 0)
	var steps []step
	for i, r := range active {
		if sizes[i] != r.Replicas {
			steps = append(steps, step{r.Name, r.Replicas, sizes[i]})
		}
	}
	return steps
}

// activeOrLatest returns the only active (replicas > 0) ReplicaSet, the
// newest one if none is active, or nil if several are (Kubernetes'
// FindActiveOrLatest).
func activeOrLatest(newRS *rsState, old []rsState) *rsState {
	var active []rsState
	for _, r := range old {
		if r.Replicas > 0 {
			active = append(active, r)
		}
	}
	if newRS != nil && newRS.Replicas > 0 {
		active = append(active, *newRS)
	}
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		if len(old) == 0 {
			return nil
		}
		newest := slices.MaxFunc(old, byAge)
		return &newest
	case 1:
		return &active[0]
	}
	return nil
}

// proportion is how many of toAdd (minus the added so far) go to r
// (Kubernetes' GetProportion).
func proportion(r rsState, replicas, maxReplicas, statusReplicas, toAdd, added int32) int32 {
	if r.Replicas == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	var fraction int32
	if replicas == 0 {
		fraction = -r.Replicas
	} else {
		before := r.MaxReplicas
		if before <= 0 {
			before = statusReplicas
		}
		if before <= 0 {
			before = max(r.Replicas, 1)
		}
		fraction = int32(math.Round(float64(r.Replicas)*float64(maxReplicas)/float64(before))) - r.Replicas
	}
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}
