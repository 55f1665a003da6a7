// Package webhook is what the admission webhook plugins need besides the
// chain: which requests a registered webhook wants (rules.go, Kubernetes'
// matching of operations, groups, versions, resources with subresources
// and scope), the webhooks compiled from the Mutating- and
// ValidatingWebhookConfiguration objects (hooks.go: selectors parsed once),
// and the gRPC connections to the webhook servers, one per address and CA,
// closed when no webhook uses them any more (clients.go). Calling a webhook
// and judging its answer is the plugins' part (package admission,
// webhooks.go). No informers here: the plugins feed it configurations.
package webhook
