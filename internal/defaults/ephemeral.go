package defaults

import corev1 "skiff.dev/proto/core/v1"

// ephemeralContainer defaults an ephemeral container as Kubernetes'
// SetDefaults_EphemeralContainer: as a container (imagePullPolicy from
// the tag, the termination message path and policy, fieldRef apiVersion
// v1); it has no ports, probes or lifecycle to default.
func ephemeralContainer(ec *corev1.EphemeralContainer) {
	if ec == nil {
		return
	}
	c := &corev1.Container{Image: ec.Image, ImagePullPolicy: ec.ImagePullPolicy, Env: ec.Env,
		TerminationMessagePath: ec.TerminationMessagePath, TerminationMessagePolicy: ec.TerminationMessagePolicy}
	container(c, false)
	ec.ImagePullPolicy = c.ImagePullPolicy
	ec.TerminationMessagePath = c.TerminationMessagePath
	ec.TerminationMessagePolicy = c.TerminationMessagePolicy
}
