// Package resourcequota is Skiff's resource quota controller, after
// Kubernetes' pkg/controller/resourcequota: it keeps each ResourceQuota's
// status (hard: a copy of spec.hard; used: what the namespace holds) true.
//
// The ResourceQuota admission plugin in the apiserver charges every create
// to status.used before the object is stored, so that parallel creates
// never exceed a quota; this controller is the other half: it recomputes
// used from the objects that exist, which gives back what deleted objects,
// finished pods and creates that failed after their charge had taken
// (controller.go). A quota is recomputed
//
//   - when it is created, or its spec.hard differs from status.hard (a new
//     quota has no usage yet, and admission refuses what it covers until
//     then);
//   - when an object it may count is deleted, or a pod finishes (pods,
//     configmaps, replicasets and deployments are watched);
//   - every SyncPeriod (default 5 minutes, --resource-quota-sync-period),
//     for everything else.
//
// Usage is counted by listing the namespace's objects of each kind the
// quota names (package dynamic: any served kind, "count/<resource>.<group>")
// and summing package internal/quota's Usage, the same arithmetic the
// admission plugin charges with. status is written with the quota's
// resourceVersion as precondition: a charge that landed meanwhile makes the
// write fail and the quota is computed again.
package resourcequota
