package defaults

import corev1 "skiff.dev/proto/core/v1"

// lifecycle defaults a container's hooks' httpGet actions as a probe's.
func lifecycle(l *corev1.Lifecycle) {
	if l == nil {
		return
	}
	httpGetAction(l.GetPostStart().GetHttpGet())
	httpGetAction(l.GetPreStop().GetHttpGet())
}

// httpGetAction: path "/" and scheme HTTP, as Kubernetes'
// SetDefaults_HTTPGetAction.
func httpGetAction(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = "HTTP"
	}
}

// grpcAction: the service "" (the server's overall health), set, as
// Kubernetes' SetDefaults_Probe does.
func grpcAction(g *corev1.GRPCAction) {
	if g != nil && g.Service == nil {
		s := ""
		g.Service = &s
	}
}
