package validation

import (
	"slices"

	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
)

// containerRestartPolicies are the values a container's restartPolicy may
// take: Always, on an init container, makes it a sidecar (Kubernetes'
// native sidecars, KEP-753). Skiff lacks restartPolicyRules, so Never and
// OnFailure (which need them in Kubernetes) are refused.
var containerRestartPolicies = []string{"Always"}

// containerRestartPolicy checks a container's restartPolicy as Kubernetes
// does: only an init container may set it, and only to Always.
func containerRestartPolicy(c *corev1.Container, p *field.Path, isInit bool) field.ErrorList {
	if c.RestartPolicy == nil {
		return nil
	}
	if !isInit {
		return field.ErrorList{field.Forbidden(p, "may not be set for non-init containers")}
	}
	return supportedSet(*c.RestartPolicy, containerRestartPolicies, p)
}

// containerProbes checks a container's liveness, readiness and startup
// probes. A regular init container runs to completion and may have none; a
// sidecar keeps running and may have all three, like an app container.
func containerProbes(c *corev1.Container, p *field.Path, isInit bool) field.ErrorList {
	if isInit && c.GetRestartPolicy() != "Always" {
		var errs field.ErrorList
		for _, pr := range []struct {
			name string
			set  bool
		}{
			{"livenessProbe", c.LivenessProbe != nil},
			{"readinessProbe", c.ReadinessProbe != nil},
			{"startupProbe", c.StartupProbe != nil},
		} {
			if pr.set {
				errs = append(errs, field.Forbidden(p.Child(pr.name), "may not be set for init containers without restartPolicy=Always"))
			}
		}
		return errs
	}
	errs := probe(c.LivenessProbe, p.Child("livenessProbe"), false)
	errs = append(errs, probe(c.ReadinessProbe, p.Child("readinessProbe"), true)...)
	return append(errs, probe(c.StartupProbe, p.Child("startupProbe"), false)...)
}

// supportedSet is supported for a field that is set: the empty string is
// not a default there but a value, and unsupported.
func supportedSet(v string, allowed []string, p *field.Path) field.ErrorList {
	if slices.Contains(allowed, v) {
		return nil
	}
	return field.ErrorList{field.NotSupported(p, v, allowed)}
}
