// Package deployment is the Deployment controller: it rolls a Deployment's
// pod template out through ReplicaSets, as Kubernetes' deployment
// controller does, and reports the rollout in the Deployment's status.
//
// For each pod template the Deployment has had there is one ReplicaSet,
// named <deployment>-<hash> (PodTemplateHash), whose template, selector and
// labels carry pod-template-hash=<hash>, controlled by the Deployment and
// numbered by the deployment.kubernetes.io/revision annotation. The
// ReplicaSet running the current template is the new one; the others are
// old. One sync (Reconcile of a Deployment's key) does, in order:
//
//  1. claim: adopt orphan ReplicaSets the selector matches, release ours
//     it no longer matches (claim.go);
//  2. paused / resumed: the Progressing condition says so; a paused
//     Deployment only scales (sync.go scale);
//  3. rollback: the legacy apps/v1beta1 annotation
//     deprecated.deployment.rollback.to copies a revision's template back
//     into the spec (deployutil.RollbackTemplate is the same lookup for clients);
//  4. scaling: a changed spec.replicas resizes the ReplicaSets, in
//     proportion during a rolling update;
//  5. rollout: one step of RollingUpdate (new ReplicaSet up within
//     maxSurge, an old ReplicaSet counting for the pods it still has while
//     they are more than its size, so that the pods never exceed
//     replicas+maxSurge; old ones down within maxUnavailable) or Recreate (old ones
//     to 0, wait for their pods to go, new one up), then old ReplicaSets
//     beyond revisionHistoryLimit are deleted;
//  6. status: counts from the ReplicaSets, conditions Available and
//     Progressing (with progressDeadlineSeconds, checked again by a delayed
//     requeue).
//
// Files follow that flow: controller.go (wiring, event handlers), sync.go
// (the sync and its effects), claim.go, and the pure decisions, table
// tested: rollout.go (the maxSurge/maxUnavailable arithmetic), status.go
// (status and conditions), revision.go (revisions, rollback, history),
// hash.go (the template hash).
//
// The controller reads Deployments, ReplicaSets and pods from the shared
// informers only. It never creates or deletes pods (the ReplicaSet
// controller does) and never deletes a Deployment's ReplicaSets when the
// Deployment goes (the garbage collector does, through ownerReferences).
package deployment
