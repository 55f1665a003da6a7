package defaults

import (
	"testing"

	corev1 "skiff.dev/proto/core/v1"
)

func TestEphemeralContainerDefaults(t *testing.T) {
	s := &corev1.PodSpec{EphemeralContainers: []*corev1.EphemeralContainer{
		{Name: "latest", Image: "busybox", Env: []*corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
		{Name: "tagged", Image: "busybox:1.36", ImagePullPolicy: "Never", TerminationMessagePath: "/tmp/msg", TerminationMessagePolicy: "FallbackToLogsOnError"},
		nil,
	}}
	PodSpec(s)
	l, tg := s.EphemeralContainers[0], s.EphemeralContainers[1]
	if l.ImagePullPolicy != "Always" || l.TerminationMessagePath != DefaultTerminationMessagePath || l.TerminationMessagePolicy != "File" {
		t.Errorf("busybox: %v", l)
	}
	if got := l.Env[0].ValueFrom.FieldRef.ApiVersion; got != "v1" {
		t.Errorf("fieldRef apiVersion %q, want v1", got)
	}
	if tg.ImagePullPolicy != "Never" || tg.TerminationMessagePath != "/tmp/msg" || tg.TerminationMessagePolicy != "FallbackToLogsOnError" {
		t.Errorf("the client's values were not kept: %v", tg)
	}
}
