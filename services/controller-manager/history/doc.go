// Package history is Kubernetes' controller history (pkg/controller/history)
// for Skiff: the ControllerRevisions in which the DaemonSet and StatefulSet
// controllers keep every template they have run, so that a rollout can be
// followed and undone.
//
// A revision is named <owner>-<hash>, the hash being FNV-32 of its data and
// of the owner's collision count (safe-encoded as rand.SafeEncodeString
// does); it carries the owner's template labels plus
// controller.kubernetes.io/hash, a controller ownerReference to the owner
// and a revision number. Two revisions are equal when their hashes and data
// are.
//
// What it owns: the pure functions (NewControllerRevision,
// HashControllerRevision, EqualRevision, FindEqualRevisions,
// SortControllerRevisions, NextRevision, ToTruncate) and History, the
// effects over the typed client: listing an owner's revisions from an
// informer, creating one (bumping the collision count on a hash collision
// as Kubernetes does), adopting, renumbering, deleting and truncating to
// revisionHistoryLimit. What the data holds (for the DaemonSet and
// StatefulSet: the patch {"spec":{"template":...}}) is the caller's; see
// TemplatePatch and TemplateFromPatch. It starts no goroutine.
package history
