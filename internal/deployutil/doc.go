// Package deployutil holds the facts about a Deployment's revisions that
// the Deployment controller and its clients (skiffctl rollout history and
// undo) share: the revision annotation and its parsing, the
// pod-template-hash label, and which ReplicaSet's template a rollback
// puts back (RollbackTemplate, the lookup `kubectl rollout undo` does).
//
// It owns reading revisions; it does not write them, scale ReplicaSets or
// talk to the apiserver: that is the controller's
// (skiff.dev/services/controller-manager/deployment).
package deployutil
