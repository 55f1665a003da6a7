package validation

import (
	"strings"
	"testing"

	"skiff.dev/internal/defaults"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// debugPod is a defaulted pod with containers app and init container
// setup, and ecs.
func debugPod(ecs ...*corev1.EphemeralContainer) *corev1.Pod {
	p := &corev1.Pod{Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: &corev1.PodSpec{
		Containers:          []*corev1.Container{{Name: "app", Image: "nginx"}},
		InitContainers:      []*corev1.Container{{Name: "setup", Image: "busybox"}},
		Volumes:             []*corev1.Volume{{Name: "data", EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		EphemeralContainers: ecs,
	}}
	defaults.Pod(p)
	return p
}

func TestEphemeralContainers(t *testing.T) {
	for _, tc := range []struct {
		name string
		ecs  []*corev1.EphemeralContainer
		want string // "" for valid
	}{
		{"targets an app container", []*corev1.EphemeralContainer{{Name: "d", Image: "busybox", TargetContainerName: "app"}}, ""},
		{"targets an init container", []*corev1.EphemeralContainer{{Name: "d", Image: "busybox", TargetContainerName: "setup"}}, ""},
		{"no target", []*corev1.EphemeralContainer{{Name: "d", Image: "busybox"}}, ""},
		{"unknown target", []*corev1.EphemeralContainer{{Name: "d", Image: "busybox", TargetContainerName: "db"}},
			`spec.ephemeralContainers[0].targetContainerName: Not found: "db"`},
		{"name of an init container", []*corev1.EphemeralContainer{{Name: "setup", Image: "busybox"}},
			`spec.ephemeralContainers[0].name: Duplicate value: "setup"`},
		{"bad name", []*corev1.EphemeralContainer{{Name: "Debug_1", Image: "busybox"}},
			`spec.ephemeralContainers[0].name: Invalid value: "Debug_1"`},
		{"bad pull policy", []*corev1.EphemeralContainer{{Name: "d", Image: "busybox", ImagePullPolicy: "Sometimes"}},
			`spec.ephemeralContainers[0].imagePullPolicy: Unsupported value: "Sometimes"`},
		{"subPath", []*corev1.EphemeralContainer{{Name: "d", Image: "busybox", VolumeMounts: []*corev1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "x"}}}},
			`spec.ephemeralContainers[0].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container`},
		{"nil", []*corev1.EphemeralContainer{nil}, `spec.ephemeralContainers[0]: Required value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Pod(debugPod(tc.ecs...))
			if tc.want == "" {
				if len(errs) > 0 {
					t.Errorf("want valid, got %v", errs)
				}
				return
			}
			if !strings.Contains(errs.Error(), tc.want) {
				t.Errorf("errors %q do not say %q", errs.Error(), tc.want)
			}
		})
	}
}

func TestPodCreateRefusesEphemeralContainers(t *testing.T) {
	p := debugPod(&corev1.EphemeralContainer{Name: "d", Image: "busybox"})
	if errs := Pod(p); len(errs) > 0 {
		t.Errorf("Pod (every write): %v", errs)
	}
	if got := PodCreate(p).Error(); got != "spec.ephemeralContainers: Forbidden: cannot be set on create" {
		t.Errorf("PodCreate: %q", got)
	}
	if errs := PodCreate(debugPod()); len(errs) > 0 {
		t.Errorf("PodCreate without: %v", errs)
	}
}

func TestPodEphemeralContainersUpdate(t *testing.T) {
	old := debugPod(&corev1.EphemeralContainer{Name: "d", Image: "busybox"})
	added := debugPod(&corev1.EphemeralContainer{Name: "e", Image: "busybox"}, &corev1.EphemeralContainer{Name: "d", Image: "busybox"})
	if errs := PodEphemeralContainersUpdate(added, old); len(errs) > 0 {
		t.Errorf("an addition, in another order: %v", errs)
	}
	changed := debugPod(&corev1.EphemeralContainer{Name: "d", Image: "busybox", Tty: true})
	if got := PodEphemeralContainersUpdate(changed, old).Error(); !strings.Contains(got, `existing ephemeral containers "d" may not be changed`) || !strings.Contains(got, "changed: tty") {
		t.Errorf("a change: %q", got)
	}
	mirror := debugPod()
	mirror.Metadata.Annotations = map[string]string{"kubernetes.io/config.mirror": "x"}
	if got := PodEphemeralContainersUpdate(mirror, mirror).Error(); got != ": Forbidden: static pods do not support ephemeral containers" {
		t.Errorf("a static pod: %q", got)
	}
}
