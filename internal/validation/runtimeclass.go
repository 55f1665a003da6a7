package validation

import (
	"net/netip"

	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
	nodev1 "skiff.dev/proto/node/v1"
)

// RuntimeClass validates a RuntimeClass as Kubernetes does: a DNS
// subdomain name; handler a DNS label (what the node's CRI runtime is
// configured with); overhead.podFixed quantities as container limits are
// checked (reported, as Kubernetes does, at overhead.limits[name]); the
// scheduling's nodeSelector labels and tolerations.
func RuntimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	if rc == nil {
		rc = &nodev1.RuntimeClass{}
	}
	errs := ObjectMeta(rc.Metadata, false, NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, invalidEach(field.NewPath("handler"), rc.Handler, isDNS1123Label(rc.Handler))...)
	if o := rc.Overhead; o != nil {
		errs = append(errs, resources(&corev1.ResourceRequirements{Limits: o.PodFixed}, field.NewPath("overhead"))...)
	}
	if s := rc.Scheduling; s != nil {
		sp := field.NewPath("scheduling")
		errs = append(errs, Labels(s.NodeSelector, sp.Child("nodeSelector"))...)
		errs = append(errs, tolerations(s.Tolerations, sp.Child("tolerations"))...)
	}
	return errs
}

// RuntimeClassUpdate validates an update of a RuntimeClass: the handler
// never changes.
func RuntimeClassUpdate(newRC, oldRC *nodev1.RuntimeClass) field.ErrorList {
	errs := ObjectMetaUpdate(newRC.GetMetadata(), oldRC.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, RuntimeClass(newRC)...)
	return append(errs, immutable(newRC.GetHandler(), oldRC.GetHandler(), field.NewPath("handler"))...)
}

// podNodeFields validates the pod fields the node agent reads beside the
// containers, as Kubernetes' ValidatePodSpec: hostAliases (an IP address,
// DNS subdomain hostnames), readinessGates (qualified condition types),
// runtimeClassName (a DNS subdomain), overhead (as container limits, at
// overhead.limits[name]) and shareProcessNamespace, which hostPID excludes.
func podNodeFields(spec *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, a := range spec.GetHostAliases() {
		ap := path.Child("hostAliases").Index(i)
		if _, err := netip.ParseAddr(a.GetIp()); err != nil {
			errs = append(errs, field.Invalid(ap.Child("ip"), a.GetIp(), "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
		}
		for j, h := range a.GetHostnames() {
			errs = append(errs, invalidEach(ap.Child("hostnames").Index(j), h, isDNS1123Subdomain(h))...)
		}
	}
	for i, g := range spec.GetReadinessGates() {
		typ := g.GetConditionType()
		errs = append(errs, invalidEach(path.Child("readinessGates").Index(i).Child("conditionType"), typ, isQualifiedName(typ))...)
	}
	if spec.RuntimeClassName != nil {
		name := spec.GetRuntimeClassName()
		errs = append(errs, invalidEach(path.Child("runtimeClassName"), name, isDNS1123Subdomain(name))...)
	}
	if len(spec.GetOverhead()) > 0 {
		errs = append(errs, resources(&corev1.ResourceRequirements{Limits: spec.GetOverhead()}, path.Child("overhead"))...)
	}
	if spec.GetHostPid() && spec.GetShareProcessNamespace() {
		errs = append(errs, field.Invalid(path.Child("securityContext", "shareProcessNamespace"), true, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	return errs
}
