// Package ephemeral holds what an ephemeral container shares with a
// container, for the code that treats it as one: validation checks its
// common fields as a container's, and the node agent starts it through
// the same path as the pod's containers (Kubernetes converts the
// EphemeralContainerCommon the same way). It owns no rules of its own:
// what ephemeral containers may not do is validation's; that they are
// started once and never restarted is the node agent's.
package ephemeral

import corev1 "skiff.dev/proto/core/v1"

// Container is ec as a container: the fields they share, copied (slices
// and messages shared with ec, not cloned). stdinOnce and
// targetContainerName have no container field; the caller reads them
// from ec.
func Container(ec *corev1.EphemeralContainer) *corev1.Container {
	if ec == nil {
		return nil
	}
	return &corev1.Container{
		Name:                     ec.GetName(),
		Image:                    ec.GetImage(),
		Command:                  ec.GetCommand(),
		Args:                     ec.GetArgs(),
		WorkingDir:               ec.GetWorkingDir(),
		EnvFrom:                  ec.GetEnvFrom(),
		Env:                      ec.GetEnv(),
		VolumeMounts:             ec.GetVolumeMounts(),
		ImagePullPolicy:          ec.GetImagePullPolicy(),
		SecurityContext:          ec.GetSecurityContext(),
		TerminationMessagePath:   ec.GetTerminationMessagePath(),
		TerminationMessagePolicy: ec.GetTerminationMessagePolicy(),
		Stdin:                    ec.GetStdin(),
		Tty:                      ec.GetTty(),
	}
}

// Find returns the ephemeral container of spec named name, or nil.
func Find(spec *corev1.PodSpec, name string) *corev1.EphemeralContainer {
	for _, ec := range spec.GetEphemeralContainers() {
		if ec.GetName() == name {
			return ec
		}
	}
	return nil
}
