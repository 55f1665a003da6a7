// Package admission is the apiserver's admission chain: after
// authentication and authorization let a write through, the registry asks
// the chain whether the object fits the cluster's rules. The order, for
// every Create, Update and UpdateStatus (package registry calls it):
//
//	defaults -> mutating plugins (Admit, in --enable-admission-plugins order)
//	         -> the kind's validation
//	         -> validating plugins (Validate, same order) -> etcd
//
// Deletes and subresources (binding, scale) pass the validating plugins only.
//
// A plugin is a small Go value: it implements MutationInterface, or
// ValidationInterface, or both, and is registered by name in plugins.go
// (one file per plugin). Plugins that need API objects (namespaces, limit
// ranges, quotas, webhook configurations) read them from informers on the
// apiserver's loopback connection, started by Chain.Start in a post-start
// hook.
//
//	admission.go                 Attributes, the plugin interfaces
//	chain.go                     the ordered chain, its metrics
//	plugins.go                   the catalogue of plugins by name
//	options.go                   --enable-admission-plugins and friends
//	namespacelifecycle.go        no objects in missing or terminating namespaces
//	limitranger.go               LimitRange defaults and bounds for pods
//	defaulttolerationseconds.go  not-ready/unreachable tolerations for pods
//	resourcequota.go             ResourceQuota, charged before the object is stored
//	priority.go                  Priority: pods' priority from their PriorityClass
//	webhooks.go                  Mutating/ValidatingAdmissionWebhook
//
// Sub-packages: quota (usage arithmetic shared with the resourcequota
// controller) and webhook (rule matching and the gRPC calls). The package
// owns no storage: the registry calls it, and it talks to the API through
// the loopback like any client.
package admission
