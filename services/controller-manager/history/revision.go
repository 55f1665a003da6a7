package history

import (
	"bytes"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/object"
	appsv1 "skiff.dev/proto/apps/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// ControllerRevisionHashLabel is the label holding a revision's hash
// (Kubernetes' history.ControllerRevisionHashLabel).
const ControllerRevisionHashLabel = "controller.kubernetes.io/hash"

// PodRevisionLabel is the label on a DaemonSet's or StatefulSet's pods
// naming the revision they run (apps.ControllerRevisionHashLabelKey).
const PodRevisionLabel = "controller-revision-hash"

// safeAlphabet is Kubernetes' rand.SafeEncodeString alphabet: no vowels and
// no look-alike characters.
const safeAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// Kind is the apiVersion and kind of a revision's owner, for its
// ownerReference.
type Kind struct {
	APIVersion string
	Kind       string
}

// ControllerRevisionName is prefix-hash, the prefix cut to 223 characters
// so that the name stays a valid DNS subdomain.
func ControllerRevisionName(prefix, hash string) string {
	if len(prefix) > 223 {
		prefix = prefix[:223]
	}
	return prefix + "-" + hash
}

// NewControllerRevision returns a revision of parent holding data: parent's
// namespace, templateLabels plus the hash label, a controller ownerReference
// to parent (of kind parentKind), the revision number and a name made from
// the hash of data and collisionCount.
func NewControllerRevision(parent object.Object, parentKind Kind, templateLabels map[string]string, data []byte, revision int64, collisionCount *int32) *appsv1.ControllerRevision {
	pm := parent.GetMetadata()
	labels := maps.Clone(templateLabels)
	if labels == nil {
		labels = map[string]string{}
	}
	cr := &appsv1.ControllerRevision{
		ApiVersion: "apps/v1",
		Kind:       "ControllerRevision",
		Metadata: &metav1.ObjectMeta{
			Namespace: pm.GetNamespace(),
			Labels:    labels,
			OwnerReferences: []*metav1.OwnerReference{{
				ApiVersion:         parentKind.APIVersion,
				Kind:               parentKind.Kind,
				Name:               pm.GetName(),
				Uid:                pm.GetUid(),
				Controller:         proto.Bool(true),
				BlockOwnerDeletion: proto.Bool(true),
			}},
		},
		Data:     slices.Clone(data),
		Revision: revision,
	}
	hash := HashControllerRevision(cr, collisionCount)
	cr.Metadata.Name = ControllerRevisionName(pm.GetName(), hash)
	cr.Metadata.Labels[ControllerRevisionHashLabel] = hash
	return cr
}

// HashControllerRevision is FNV-32 of the revision's data followed by the
// decimal collision count (when not nil), safe-encoded, as Kubernetes'.
func HashControllerRevision(cr *appsv1.ControllerRevision, probe *int32) string {
	h := fnv.New32()
	h.Write(cr.GetData())
	if probe != nil {
		h.Write([]byte(strconv.FormatInt(int64(*probe), 10)))
	}
	return SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// SafeEncodeString maps each byte of s into the safe alphabet, as
// Kubernetes' rand.SafeEncodeString.
func SafeEncodeString(s string) string {
	out := make([]byte, len(s))
	for i := range len(s) {
		out[i] = safeAlphabet[int(s[i])%len(safeAlphabet)]
	}
	return string(out)
}

// EqualRevision reports whether two revisions hold the same data: their
// hash labels, when both have one, must match, and their data must be equal
// byte for byte. Nil revisions are equal only to each other.
func EqualRevision(a, b *appsv1.ControllerRevision) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ha, oka := a.GetMetadata().GetLabels()[ControllerRevisionHashLabel]
	hb, okb := b.GetMetadata().GetLabels()[ControllerRevisionHashLabel]
	if oka && okb && ha != hb {
		return false
	}
	return bytes.Equal(a.GetData(), b.GetData())
}

// FindEqualRevisions returns the revisions equal to needle.
func FindEqualRevisions(revisions []*appsv1.ControllerRevision, needle *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, r := range revisions {
		if EqualRevision(r, needle) {
			out = append(out, r)
		}
	}
	return out
}

// SortControllerRevisions sorts revisions by revision number, then by
// creation time, then by name (Kubernetes' byRevision).
func SortControllerRevisions(revisions []*appsv1.ControllerRevision) {
	slices.SortStableFunc(revisions, func(a, b *appsv1.ControllerRevision) int {
		if a.GetRevision() != b.GetRevision() {
			if a.GetRevision() < b.GetRevision() {
				return -1
			}
			return 1
		}
		ta, tb := a.GetMetadata().GetCreationTimestamp().AsTime(), b.GetMetadata().GetCreationTimestamp().AsTime()
		if c := ta.Compare(tb); c != 0 {
			return c
		}
		if a.GetMetadata().GetName() < b.GetMetadata().GetName() {
			return -1
		}
		if a.GetMetadata().GetName() > b.GetMetadata().GetName() {
			return 1
		}
		return 0
	})
}

// NextRevision is one more than the highest revision number of revisions
// (which SortControllerRevisions has sorted), 1 when there is none.
func NextRevision(revisions []*appsv1.ControllerRevision) int64 {
	if len(revisions) == 0 {
		return 1
	}
	return revisions[len(revisions)-1].GetRevision() + 1
}

// ToTruncate returns the revisions to delete so that at most limit of the
// revisions not named in live remain: the oldest first. revisions are
// sorted by SortControllerRevisions; live revisions (the current and update
// revisions, those pods still run) are never returned.
func ToTruncate(revisions []*appsv1.ControllerRevision, live map[string]bool, limit int32) []*appsv1.ControllerRevision {
	var old []*appsv1.ControllerRevision
	for _, r := range revisions {
		if !live[r.GetMetadata().GetName()] {
			old = append(old, r)
		}
	}
	n := len(old) - int(max(limit, 0))
	if n <= 0 {
		return nil
	}
	return old[:n]
}
