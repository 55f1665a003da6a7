package validation

import (
	"fmt"

	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// defaultGracePeriod is terminationGracePeriodSeconds when a spec has none
// (defaulting sets it; validation of an undefaulted spec assumes it).
const defaultGracePeriod = 30

// containerLifecycle validates an app container's lifecycle hooks (postStart
// and preStop), as Kubernetes' validateLifecycle: each handler has exactly
// one action, and a sleep lasts no longer than the pod's grace period.
func containerLifecycle(c *corev1.Container, grace *int64, p *field.Path) field.ErrorList {
	if c.GetLifecycle() == nil {
		return nil
	}
	return lifecycle(c.GetLifecycle(), grace, p.Child("lifecycle"))
}

// initContainerLifecycle validates an init container's lifecycle: only a
// restartable one (a sidecar, restartPolicy Always) may have hooks.
func initContainerLifecycle(c *corev1.Container, grace *int64, p *field.Path) field.ErrorList {
	if c.GetLifecycle() == nil {
		return nil
	}
	if c.GetRestartPolicy() != "Always" {
		return field.ErrorList{field.Forbidden(p.Child("lifecycle"), "may not be set for init containers without restartPolicy=Always")}
	}
	return lifecycle(c.GetLifecycle(), grace, p.Child("lifecycle"))
}

func lifecycle(l *corev1.Lifecycle, grace *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h := l.GetPostStart(); h != nil {
		errs = append(errs, lifecycleHandler(h, grace, p.Child("postStart"))...)
	}
	if h := l.GetPreStop(); h != nil {
		errs = append(errs, lifecycleHandler(h, grace, p.Child("preStop"))...)
	}
	return errs
}

// lifecycleHandler checks one hook: exactly one of exec, httpGet,
// tcpSocket and sleep. tcpSocket passes, as in Kubernetes, where it is kept
// for compatibility and fails when the hook runs.
func lifecycleHandler(h *corev1.LifecycleHandler, grace *int64, p *field.Path) field.ErrorList {
	return oneHandler(p,
		handler{"exec", h.Exec != nil, func(p *field.Path) field.ErrorList { return execAction(h.Exec, p) }},
		handler{"httpGet", h.HttpGet != nil, func(p *field.Path) field.ErrorList { return httpGetAction(h.HttpGet, p) }},
		handler{"tcpSocket", h.TcpSocket != nil, func(p *field.Path) field.ErrorList { return portNumOrName(h.TcpSocket.Port, p.Child("port")) }},
		handler{"sleep", h.Sleep != nil, func(p *field.Path) field.ErrorList { return sleepAction(h.Sleep, grace, p) }})
}

// sleepAction: 0 up to the pod's terminationGracePeriodSeconds (Kubernetes
// allows 0 since PodLifecycleSleepActionAllowZero).
func sleepAction(s *corev1.SleepAction, grace *int64, p *field.Path) field.ErrorList {
	g := int64(defaultGracePeriod)
	if grace != nil {
		g = *grace
	}
	if s.Seconds < 0 || s.Seconds > g {
		return field.ErrorList{field.Invalid(p, s.Seconds, fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", g))}
	}
	return nil
}

// httpGetAction checks an httpGet handler of a probe or hook: a path, a
// port number or name, the scheme and the headers' names.
func httpGetAction(h *corev1.HTTPGetAction, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	errs = append(errs, portNumOrName(h.Port, p.Child("port"))...)
	errs = append(errs, supported(h.Scheme, httpSchemes, p.Child("scheme"))...)
	for i, hdr := range h.HttpHeaders {
		errs = append(errs, invalidEach(p.Child("httpHeaders").Index(i).Child("name"), hdr.GetName(), isHTTPHeaderName(hdr.GetName()))...)
	}
	return errs
}

// grpcAction checks a grpc probe: a port number (names are not allowed,
// as in Kubernetes); any service name.
func grpcAction(g *corev1.GRPCAction, p *field.Path) field.ErrorList {
	return portNumOrName(&metav1.IntOrString{Value: &metav1.IntOrString_IntVal{IntVal: g.Port}}, p.Child("port"))
}
