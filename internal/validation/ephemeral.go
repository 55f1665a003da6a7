package validation

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/ephemeral"
	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
)

// Ephemeral containers, as Kubernetes validates them: added to a running
// pod through the ephemeralcontainers subresource only (never on create,
// never in a template), each checked as a container, named uniquely
// among all the pod's containers, targeting one of the pod's containers
// or init containers, and never changed or removed once added. The
// fields Kubernetes forbids them (ports, resources, probes, lifecycle,
// restartPolicy...) are not in Skiff's EphemeralContainer at all; of
// what remains, volume mounts may not use subPath.

// mirrorPodAnnotation marks a static pod's mirror, which may not have
// ephemeral containers.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

const notForEphemeral = "cannot be set for an Ephemeral Container"

// ephemeralContainers validates spec.ephemeralContainers of a pod spec at
// path.
func ephemeralContainers(spec *corev1.PodSpec, vols map[string]bool, path *field.Path) field.ErrorList {
	if len(spec.EphemeralContainers) == 0 {
		return nil
	}
	targets := map[string]bool{} // the containers and init containers
	names := map[string]bool{}   // every name taken so far
	for _, c := range append(spec.GetContainers(), spec.GetInitContainers()...) {
		targets[c.GetName()] = true
		names[c.GetName()] = true
	}
	var errs field.ErrorList
	ep := path.Child("ephemeralContainers")
	for i, ec := range spec.EphemeralContainers {
		ip := ep.Index(i)
		if ec == nil {
			errs = append(errs, field.Required(ip, ""))
			continue
		}
		errs = append(errs, container(ephemeral.Container(ec), ip, names, vols, spec.HostNetwork, false)...)
		if t := ec.TargetContainerName; t != "" && !targets[t] {
			errs = append(errs, field.NotFound(ip.Child("targetContainerName"), t))
		}
		for j, m := range ec.VolumeMounts {
			if m.GetSubPath() != "" {
				errs = append(errs, field.Forbidden(ip.Child("volumeMounts").Index(j).Child("subPath"), notForEphemeral))
			}
		}
	}
	return errs
}

// PodCreate is what only a new pod must satisfy (after Pod): no
// ephemeral containers, which are added later through the subresource.
func PodCreate(p *corev1.Pod) field.ErrorList {
	if len(p.GetSpec().GetEphemeralContainers()) > 0 {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "ephemeralContainers"), "cannot be set on create")}
	}
	return nil
}

// PodEphemeralContainersUpdate validates a write of the
// ephemeralcontainers subresource: the new pod as any pod, its metadata
// unchanged where it must be, and the ephemeral containers it had still
// there, unchanged (only additions). The caller has kept everything but
// spec.ephemeralContainers as it was.
func PodEphemeralContainersUpdate(newP, oldP *corev1.Pod) field.ErrorList {
	errs := ObjectMetaUpdate(newP.GetMetadata(), oldP.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, Pod(newP)...)
	if _, ok := oldP.GetMetadata().GetAnnotations()[mirrorPodAnnotation]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	// By name: a patch need not keep the order.
	byName := map[string]*corev1.EphemeralContainer{}
	for _, ec := range newP.GetSpec().GetEphemeralContainers() {
		byName[ec.GetName()] = ec
	}
	sp := field.NewPath("spec", "ephemeralContainers")
	for _, old := range oldP.GetSpec().GetEphemeralContainers() {
		cur, ok := byName[old.GetName()]
		switch {
		case !ok:
			errs = append(errs, field.Forbidden(sp, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", old.GetName())))
		case !proto.Equal(old, cur):
			errs = append(errs, field.Forbidden(sp, fmt.Sprintf("existing ephemeral containers %q may not be changed\nchanged: %s",
				old.GetName(), strings.Join(changedFields(cur, old), ", "))))
		}
	}
	return errs
}
