package validation

import (
	"math"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
)

var (
	restartPolicies = []string{"Always", "OnFailure", "Never"}
	// dnsPolicies omits None: it needs a dnsConfig, which Skiff pods lack.
	dnsPolicies = []string{"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"}
)

// Pod validates a pod being created: metadata (namespaced, name a DNS
// subdomain) and spec (see PodSpec).
func Pod(p *corev1.Pod) field.ErrorList {
	if p == nil {
		p = &corev1.Pod{}
	}
	errs := ObjectMeta(p.Metadata, true, NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, PodSpec(p.Spec, field.NewPath("spec"))...)
	return append(errs, gatedNodeName(p.Spec, field.NewPath("spec"))...)
}

// PodUpdate validates an update of a pod: the new pod as on create, the
// metadata that may not change, and the spec, of which only container and
// init container images, activeDeadlineSeconds (set, or lowered) and
// tolerations (additions, or a changed tolerationSeconds) may change.
func PodUpdate(newP, oldP *corev1.Pod) field.ErrorList {
	if newP == nil {
		newP = &corev1.Pod{}
	}
	if oldP == nil {
		oldP = &corev1.Pod{}
	}
	errs := ObjectMetaUpdate(newP.Metadata, oldP.Metadata, field.NewPath("metadata"))
	errs = append(errs, Pod(newP)...)

	specPath := field.NewPath("spec")
	newS, oldS := newP.Spec, oldP.Spec
	if newS == nil {
		newS = &corev1.PodSpec{}
	}
	if oldS == nil {
		oldS = &corev1.PodSpec{}
	}
	if n := newS.ActiveDeadlineSeconds; n != nil {
		if o := oldS.ActiveDeadlineSeconds; o != nil && *o < *n {
			errs = append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), *n, "must be less than or equal to previous value"))
		}
	} else if oldS.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), "null", "must not update from a positive integer to nil value"))
	}
	errs = append(errs, onlyAddedTolerations(newS.Tolerations, oldS.Tolerations, specPath.Child("tolerations"))...)
	errs = append(errs, onlyDeletedSchedulingGates(newS.SchedulingGates, oldS.SchedulingGates, specPath.Child("schedulingGates"))...)

	// Undo the changes that are allowed; whatever still differs is not.
	munged := proto.Clone(newS).(*corev1.PodSpec)
	munged.ActiveDeadlineSeconds = oldS.ActiveDeadlineSeconds
	munged.Tolerations = oldS.Tolerations
	munged.SchedulingGates = oldS.SchedulingGates
	keepImages(munged.Containers, oldS.Containers)
	keepImages(munged.InitContainers, oldS.InitContainers)
	if !proto.Equal(munged, oldS) {
		errs = append(errs, field.Forbidden(specPath,
			"pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, "+
				"`spec.activeDeadlineSeconds` or `spec.tolerations` (only additions to existing tolerations); changed: "+
				strings.Join(changedFields(munged, oldS), ", ")))
	}
	return errs
}

func keepImages(newCs, oldCs []*corev1.Container) {
	for i, c := range newCs {
		if c != nil && i < len(oldCs) && oldCs[i] != nil {
			c.Image = oldCs[i].Image
		}
	}
}

// changedFields names the top-level fields in which two messages of the
// same type differ.
func changedFields(a, b proto.Message) []string {
	ma, mb := a.ProtoReflect(), b.ProtoReflect()
	fields := ma.Descriptor().Fields()
	var changed []string
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !proto.Equal(only(ma, fd), only(mb, fd)) {
			changed = append(changed, fd.JSONName())
		}
	}
	return changed
}

// only returns a new message of m's type holding just m's field fd.
func only(m protoreflect.Message, fd protoreflect.FieldDescriptor) proto.Message {
	c := m.New()
	if m.Has(fd) {
		c.Set(fd, m.Get(fd))
	}
	return c.Interface()
}

// PodSpec validates a pod spec found at path (a pod's "spec", a template's
// "spec.template.spec"): volumes, init and app containers, restart and DNS
// policies, node selector and affinity, tolerations, topology spread
// constraints, security context and the names it refers to.
func PodSpec(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	if spec == nil {
		spec = &corev1.PodSpec{}
	}
	vols, errs := volumes(spec.Volumes, path.Child("volumes"))
	errs = append(errs, containers(spec, vols, path)...)
	errs = append(errs, ephemeralContainers(spec, vols, path)...) // ephemeral.go
	errs = append(errs, supported(spec.RestartPolicy, restartPolicies, path.Child("restartPolicy"))...)
	errs = append(errs, supported(spec.DnsPolicy, dnsPolicies, path.Child("dnsPolicy"))...)
	errs = append(errs, podDNSConfig(spec.DnsPolicy, spec.DnsConfig, path.Child("dnsConfig"))...)
	errs = append(errs, Labels(spec.NodeSelector, path.Child("nodeSelector"))...)
	errs = append(errs, podSecurityContext(spec.SecurityContext, path.Child("securityContext"))...)
	errs = append(errs, podSecurity(spec, path.Child("securityContext"))...)
	errs = append(errs, affinity(spec.Affinity, path.Child("affinity"))...)
	errs = append(errs, tolerations(spec.Tolerations, path.Child("tolerations"))...)
	errs = append(errs, topologySpreadConstraints(spec.TopologySpreadConstraints, path.Child("topologySpreadConstraints"))...)
	errs = append(errs, podNodeFields(spec, path)...) // runtimeclass.go
	errs = append(errs, schedulingGates(spec.SchedulingGates, path.Child("schedulingGates"))...)
	if spec.PreemptionPolicy != nil {
		errs = append(errs, preemptionPolicy(spec.GetPreemptionPolicy(), path.Child("preemptionPolicy"))...) // priorityclass.go
	}
	for _, ref := range []struct {
		name, value string
		check       func(string) []string
	}{
		{"serviceAccountName", spec.ServiceAccountName, isDNS1123Subdomain},
		{"nodeName", spec.NodeName, isDNS1123Subdomain},
		{"priorityClassName", spec.PriorityClassName, isDNS1123Subdomain},
		{"schedulerName", spec.SchedulerName, isDNS1123Subdomain},
		{"hostname", spec.Hostname, isDNS1123Label},
		{"subdomain", spec.Subdomain, isDNS1123Label},
	} {
		if ref.value != "" {
			errs = append(errs, invalidEach(path.Child(ref.name), ref.value, ref.check(ref.value))...)
		}
	}
	if v := spec.ActiveDeadlineSeconds; v != nil && (*v < 1 || *v > math.MaxInt32) {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *v, inclusiveRangeError(1, math.MaxInt32)))
	}
	if v := spec.TerminationGracePeriodSeconds; v != nil {
		errs = append(errs, nonNegative(*v, path.Child("terminationGracePeriodSeconds"))...)
	}
	for i, s := range spec.ImagePullSecrets {
		if s.GetName() == "" {
			errs = append(errs, field.Required(path.Child("imagePullSecrets").Index(i).Child("name"), ""))
		}
	}
	return errs
}

func podSecurityContext(sc *corev1.PodSecurityContext, p *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, idRange(sc.RunAsUser, p.Child("runAsUser"))...)
	errs = append(errs, idRange(sc.RunAsGroup, p.Child("runAsGroup"))...)
	errs = append(errs, idRange(sc.FsGroup, p.Child("fsGroup"))...)
	return errs
}

func securityContext(sc *corev1.SecurityContext, p *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	errs = append(errs, idRange(sc.RunAsUser, p.Child("runAsUser"))...)
	errs = append(errs, idRange(sc.RunAsGroup, p.Child("runAsGroup"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation && sc.GetPrivileged() {
		errs = append(errs, field.Invalid(p, "privileged: true, allowPrivilegeEscalation: false",
			"cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
	}
	return errs
}

// idRange checks a user or group id: 0 to 2^31-1.
func idRange(id *int64, p *field.Path) field.ErrorList {
	if id != nil && (*id < 0 || *id > math.MaxInt32) {
		return field.ErrorList{field.Invalid(p, *id, inclusiveRangeError(0, math.MaxInt32))}
	}
	return nil
}
