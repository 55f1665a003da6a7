package defaults

import (
	"google.golang.org/protobuf/proto"

	admissionregistrationv1 "skiff.dev/proto/admissionregistration/v1"
	corev1 "skiff.dev/proto/core/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
)

const rbacGroup = "rbac.authorization.k8s.io"

// ServiceAccount, LimitRange and ResourceQuota have no defaults.
func ServiceAccount(*corev1.ServiceAccount) {}
func LimitRange(*corev1.LimitRange)         {}
func ResourceQuota(*corev1.ResourceQuota)   {}

// subjects defaults a User or Group subject's apiGroup, as Kubernetes does.
func subjects(subs []*rbacv1.Subject) {
	for _, s := range subs {
		if s.ApiGroup == "" && (s.Kind == "User" || s.Kind == "Group") {
			s.ApiGroup = rbacGroup
		}
	}
}

func roleRef(r *rbacv1.RoleRef) {
	if r != nil && r.ApiGroup == "" {
		r.ApiGroup = rbacGroup
	}
}

func Role(*rbacv1.Role)               {}
func ClusterRole(*rbacv1.ClusterRole) {}

// RoleBinding defaults subjects' and roleRef's apiGroup.
func RoleBinding(b *rbacv1.RoleBinding) {
	subjects(b.Subjects)
	roleRef(b.RoleRef)
}

// ClusterRoleBinding defaults subjects' and roleRef's apiGroup.
func ClusterRoleBinding(b *rbacv1.ClusterRoleBinding) {
	subjects(b.Subjects)
	roleRef(b.RoleRef)
}

// webhook defaults: failurePolicy Fail, timeout 10 s, every rule's scope "*".
func webhook(failurePolicy *string, timeout **int32, rules []*admissionregistrationv1.RuleWithOperations) {
	if *failurePolicy == "" {
		*failurePolicy = "Fail"
	}
	if *timeout == nil {
		*timeout = proto.Int32(10)
	}
	for _, r := range rules {
		if r.Scope == "" {
			r.Scope = "*"
		}
	}
}

// MutatingWebhookConfiguration defaults every webhook (reinvocationPolicy Never).
func MutatingWebhookConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration) {
	for _, w := range c.Webhooks {
		webhook(&w.FailurePolicy, &w.TimeoutSeconds, w.Rules)
		if w.ReinvocationPolicy == "" {
			w.ReinvocationPolicy = "Never"
		}
	}
}

// ValidatingWebhookConfiguration defaults every webhook.
func ValidatingWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
	for _, w := range c.Webhooks {
		webhook(&w.FailurePolicy, &w.TimeoutSeconds, w.Rules)
	}
}
