package statefulset

import (
	"slices"

	"google.golang.org/protobuf/proto"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// The persistentVolumeClaimRetentionPolicy is carried out by owner
// references on the claims, which the garbage collector follows, as in
// Kubernetes:
//
//	whenScaled Retain, whenDeleted Retain: no reference from us
//	whenScaled Retain, whenDeleted Delete: the set controls the claim
//	whenScaled Delete, whenDeleted Retain: a scaled-down pod controls it
//	whenScaled Delete, whenDeleted Delete: the set while the ordinal is in
//	                                       range, the pod once scaled down
//
// So a claim of a pod removed by a scale-down goes with the pod (Delete),
// and the claims of a deleted set go with it (Delete); otherwise they stay.

const (
	retain  = "Retain"
	deleteP = "Delete"
)

func retentionPolicy(set *appsv1.StatefulSet) (whenDeleted, whenScaled string) {
	rp := set.GetSpec().GetPersistentVolumeClaimRetentionPolicy()
	whenDeleted, whenScaled = rp.GetWhenDeleted(), rp.GetWhenScaled()
	if whenDeleted != deleteP {
		whenDeleted = retain
	}
	if whenScaled != deleteP {
		whenScaled = retain
	}
	return whenDeleted, whenScaled
}

// ref is what a claim's owner reference is matched on: apiVersion, kind,
// name (and uid, to tell a stale one).
type ref struct{ apiVersion, kind, name, uid string }

func setRef(set *appsv1.StatefulSet) ref {
	m := set.GetMetadata()
	return ref{setKind.APIVersion, setKind.Kind, m.GetName(), m.GetUid()}
}

func podRef(p *corev1.Pod) ref {
	m := p.GetMetadata()
	return ref{"v1", "Pod", m.GetName(), m.GetUid()}
}

func (r ref) matches(o *metav1.OwnerReference) bool {
	return o.GetApiVersion() == r.apiVersion && o.GetKind() == r.kind && o.GetName() == r.name
}

func (r ref) ownerReference() *metav1.OwnerReference {
	return &metav1.OwnerReference{ApiVersion: r.apiVersion, Kind: r.kind, Name: r.name, Uid: r.uid,
		Controller: proto.Bool(true), BlockOwnerDeletion: proto.Bool(true)}
}

// hasStaleRef says whether the claim has a reference to r's object with
// another uid (an earlier set or pod of the name, or a pod not created
// yet).
func hasStaleRef(c *corev1.PersistentVolumeClaim, r ref) bool {
	for _, o := range c.GetMetadata().GetOwnerReferences() {
		if r.matches(o) {
			return o.GetUid() != r.uid
		}
	}
	return false
}

func hasRef(c *corev1.PersistentVolumeClaim, uid string) bool {
	return uid != "" && slices.ContainsFunc(c.GetMetadata().GetOwnerReferences(), func(o *metav1.OwnerReference) bool { return o.GetUid() == uid })
}

// hasUnexpectedController says whether, under a policy that deletes, the
// claim is controlled by something other than the set and the pod (or by
// an earlier set or pod of their names).
func hasUnexpectedController(c *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, p *corev1.Pod) bool {
	whenDeleted, whenScaled := retentionPolicy(set)
	if whenDeleted == retain && whenScaled == retain {
		return false
	}
	sr, pr := setRef(set), podRef(p)
	for _, o := range c.GetMetadata().GetOwnerReferences() {
		switch {
		case sr.matches(o):
			if o.GetUid() != sr.uid {
				return true
			}
		case pr.matches(o):
			if o.GetUid() != pr.uid {
				return true
			}
		case o.GetController():
			return true
		}
	}
	return false
}

// claimOwnersUpToDate is Kubernetes' isClaimOwnerUpToDate: whether the
// claim's references from the set and the pod are what the retention
// policy wants. Claims with stale references or another controller are
// left alone (reported up to date).
func claimOwnersUpToDate(c *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, p *corev1.Pod) bool {
	sr, pr := setRef(set), podRef(p)
	if hasStaleRef(c, sr) || hasStaleRef(c, pr) {
		return true
	}
	if hasUnexpectedController(c, set, p) {
		return !hasRef(c, sr.uid) && !hasRef(c, pr.uid)
	}
	for _, o := range c.GetMetadata().GetOwnerReferences() {
		if (o.GetUid() == sr.uid || o.GetUid() == pr.uid && pr.uid != "") && !o.GetController() {
			return false // ours, but not as controller
		}
	}
	wantSet, wantPod := wantedOwners(set, p)
	return hasRef(c, sr.uid) == wantSet && hasRef(c, pr.uid) == wantPod
}

// wantedOwners says whether the policy wants the set and the pod to own the
// pod's claims.
func wantedOwners(set *appsv1.StatefulSet, p *corev1.Pod) (wantSet, wantPod bool) {
	whenDeleted, whenScaled := retentionPolicy(set)
	scaledDown := !inRange(set, ordinalOf(p))
	switch {
	case whenScaled == retain && whenDeleted == deleteP:
		return true, false
	case whenScaled == deleteP && whenDeleted == retain:
		return false, scaledDown && p.GetMetadata().GetUid() != ""
	case whenScaled == deleteP && whenDeleted == deleteP:
		return !scaledDown, scaledDown && p.GetMetadata().GetUid() != ""
	}
	return false, false
}

// withClaimOwners is Kubernetes' updateClaimOwnerRefForSetAndPod: a copy of
// the claim whose references to the set and the pod are replaced by those
// the policy wants (none if another controller has the claim).
func withClaimOwners(c *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, p *corev1.Pod) *corev1.PersistentVolumeClaim {
	out := proto.Clone(c).(*corev1.PersistentVolumeClaim)
	if out.Metadata == nil {
		out.Metadata = &metav1.ObjectMeta{}
	}
	sr, pr := setRef(set), podRef(p)
	unexpected := hasUnexpectedController(c, set, p)
	out.Metadata.OwnerReferences = slices.DeleteFunc(out.Metadata.OwnerReferences, func(o *metav1.OwnerReference) bool {
		return sr.matches(o) || pr.matches(o)
	})
	if unexpected {
		return out
	}
	wantSet, wantPod := wantedOwners(set, p)
	if wantSet {
		out.Metadata.OwnerReferences = append(out.Metadata.OwnerReferences, sr.ownerReference())
	}
	if wantPod {
		out.Metadata.OwnerReferences = append(out.Metadata.OwnerReferences, pr.ownerReference())
	}
	return out
}

// claimIsStale is Kubernetes' PodClaimIsStale for one claim: under
// whenScaled Delete, a claim still owned by an earlier pod of the ordinal
// (being deleted with it) must not be reused by the new pod: its creation
// waits.
func claimIsStale(c *corev1.PersistentVolumeClaim, set *appsv1.StatefulSet, p *corev1.Pod) bool {
	if _, whenScaled := retentionPolicy(set); whenScaled == retain {
		return false
	}
	return hasStaleRef(c, podRef(p))
}
