package validation

import (
	"bytes"
	"maps"
	"net/netip"
	"strings"

	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
)

// MaxConfigMapSize caps the summed size of a ConfigMap's values (1 MiB, as
// in Kubernetes): a ConfigMap is stored in one etcd value.
const MaxConfigMapSize = 1 << 20

// Limits of the fields of a new-style event (one with eventTime set).
const (
	eventReportingInstanceMaxLen = 128
	eventActionMaxLen            = 128
	eventReasonMaxLen            = 128
	eventNoteMaxLen              = 1024
)

var (
	namespacePhases = []string{"Active", "Terminating"}
	eventTypes      = []string{"Normal", "Warning"}
)

// Namespace validates a namespace being created: cluster-scoped metadata
// whose name is a DNS-1123 label, finalizer names, and status.phase.
func Namespace(ns *corev1.Namespace) field.ErrorList {
	if ns == nil {
		ns = &corev1.Namespace{}
	}
	errs := ObjectMeta(ns.Metadata, false, NameIsDNSLabel, field.NewPath("metadata"))
	for i, f := range ns.Spec.GetFinalizers() {
		errs = append(errs, finalizerName(f, field.NewPath("spec", "finalizers").Index(i))...)
	}
	if ph := ns.Status.GetPhase(); ph != "" {
		errs = append(errs, supported(ph, namespacePhases, field.NewPath("status", "phase"))...)
	}
	return errs
}

// NamespaceUpdate validates an update of a namespace: the new object as on
// create and immutable metadata.
func NamespaceUpdate(newNS, oldNS *corev1.Namespace) field.ErrorList {
	errs := ObjectMetaUpdate(newNS.GetMetadata(), oldNS.GetMetadata(), field.NewPath("metadata"))
	return append(errs, Namespace(newNS)...)
}

// Node validates a node: cluster-scoped metadata (name a DNS subdomain),
// taints, pod CIDRs and the reported capacity and allocatable quantities.
func Node(n *corev1.Node) field.ErrorList {
	if n == nil {
		n = &corev1.Node{}
	}
	errs := ObjectMeta(n.Metadata, false, NameIsDNSSubdomain, field.NewPath("metadata"))
	sp := field.NewPath("spec")
	errs = append(errs, taints(n.Spec.GetTaints(), sp.Child("taints"))...)
	if c := n.Spec.GetPodCidr(); c != "" {
		if _, err := netip.ParsePrefix(c); err != nil {
			errs = append(errs, field.Invalid(sp.Child("podCIDR"), c, cidrErrMsg))
		}
	}
	cidrs := n.Spec.GetPodCidrs()
	v4, v6 := 0, 0
	for i, c := range cidrs {
		pfx, err := netip.ParsePrefix(c)
		if err != nil {
			errs = append(errs, field.Invalid(sp.Child("podCIDRs").Index(i), c, cidrErrMsg))
			continue
		}
		if pfx.Addr().Is4() {
			v4++
		} else {
			v6++
		}
	}
	if len(cidrs) > 2 || v4 > 1 || v6 > 1 {
		errs = append(errs, field.Invalid(sp.Child("podCIDRs"), strings.Join(cidrs, ","), "may specify no more than one CIDR for each IP family"))
	}
	st := field.NewPath("status")
	errs = append(errs, resourceList(n.Status.GetCapacity(), st.Child("capacity"))...)
	errs = append(errs, resourceList(n.Status.GetAllocatable(), st.Child("allocatable"))...)
	return errs
}

const cidrErrMsg = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"

// NodeUpdate validates an update of a node: the new object as on create,
// immutable metadata, and pod CIDRs that, once set, do not change.
func NodeUpdate(newN, oldN *corev1.Node) field.ErrorList {
	errs := ObjectMetaUpdate(newN.GetMetadata(), oldN.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, Node(newN)...)
	if o := oldN.GetSpec().GetPodCidr(); o != "" && newN.GetSpec().GetPodCidr() != o {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDR"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	oldCIDRs, newCIDRs := oldN.GetSpec().GetPodCidrs(), newN.GetSpec().GetPodCidrs()
	if len(oldCIDRs) > 0 {
		for i, c := range oldCIDRs {
			if i >= len(newCIDRs) || newCIDRs[i] != c {
				errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
				break
			}
		}
	}
	return errs
}

// resourceList validates a map of resource quantities that is not a
// container's (a node's capacity): qualified names and well-formed,
// non-negative quantities.
func resourceList(rl map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(rl) {
		kp := p.Key(name)
		errs = append(errs, invalidEach(kp, name, isQualifiedName(name))...)
		_, qErrs := resourceQuantity(name, rl[name], kp)
		errs = append(errs, qErrs...)
	}
	return errs
}

// Event validates an event: namespaced metadata, the involved object
// (kind and name required, namespace matching the event's: an event about a
// cluster-scoped object lives in "default"), its type, and, for a new-style
// event (eventTime set), the reporting fields Kubernetes then requires.
func Event(e *corev1.Event) field.ErrorList {
	if e == nil {
		e = &corev1.Event{}
	}
	errs := ObjectMeta(e.Metadata, true, NameIsDNSSubdomain, field.NewPath("metadata"))
	ip := field.NewPath("involvedObject")
	if io := e.InvolvedObject; io == nil {
		errs = append(errs, field.Required(ip, ""))
	} else {
		if io.Kind == "" {
			errs = append(errs, field.Required(ip.Child("kind"), ""))
		}
		if io.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		}
		ns := e.Metadata.GetNamespace()
		if io.Namespace == "" && ns != "" && ns != "default" || io.Namespace != "" && io.Namespace != ns {
			errs = append(errs, field.Invalid(ip.Child("namespace"), io.Namespace, "does not match event.namespace"))
		}
	}
	errs = append(errs, supported(e.Type, eventTypes, field.NewPath("type"))...)
	if e.Count < 0 {
		errs = append(errs, nonNegative(int64(e.Count), field.NewPath("count"))...)
	}
	if e.EventTime != nil {
		errs = append(errs, requiredMaxLen(e.ReportingComponent, 0, field.NewPath("reportingComponent"))...)
		if e.ReportingComponent != "" {
			errs = append(errs, invalidEach(field.NewPath("reportingComponent"), e.ReportingComponent, isQualifiedName(e.ReportingComponent))...)
		}
		errs = append(errs, requiredMaxLen(e.ReportingInstance, eventReportingInstanceMaxLen, field.NewPath("reportingInstance"))...)
		errs = append(errs, requiredMaxLen(e.Action, eventActionMaxLen, field.NewPath("action"))...)
		errs = append(errs, requiredMaxLen(e.Reason, eventReasonMaxLen, field.NewPath("reason"))...)
		if len(e.Message) > eventNoteMaxLen {
			errs = append(errs, field.TooLong(field.NewPath("message"), eventNoteMaxLen))
		}
	}
	return errs
}

// EventUpdate validates an update of an event: the new object as on create
// and immutable metadata.
func EventUpdate(newE, oldE *corev1.Event) field.ErrorList {
	errs := ObjectMetaUpdate(newE.GetMetadata(), oldE.GetMetadata(), field.NewPath("metadata"))
	return append(errs, Event(newE)...)
}

func requiredMaxLen(v string, maxLen int, p *field.Path) field.ErrorList {
	switch {
	case v == "":
		return field.ErrorList{field.Required(p, "")}
	case maxLen > 0 && len(v) > maxLen:
		return field.ErrorList{field.TooLong(p, maxLen)}
	}
	return nil
}

// ConfigMap validates a ConfigMap: namespaced metadata, keys that are valid
// file names ([-._a-zA-Z0-9]+, at most 253 characters, not "." or ".."),
// no key in both data and binaryData, and at most MaxConfigMapSize bytes of
// values in all.
func ConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	if cm == nil {
		cm = &corev1.ConfigMap{}
	}
	errs := ObjectMeta(cm.Metadata, true, NameIsDNSSubdomain, field.NewPath("metadata"))
	total := 0
	dp, bp := field.NewPath("data"), field.NewPath("binaryData")
	for _, k := range sortedKeys(cm.Data) {
		total += len(cm.Data[k])
		errs = append(errs, invalidEach(dp.Key(k), k, isConfigMapKey(k))...)
	}
	for _, k := range sortedKeys(cm.BinaryData) {
		total += len(cm.BinaryData[k])
		errs = append(errs, invalidEach(bp.Key(k), k, isConfigMapKey(k))...)
		if _, ok := cm.Data[k]; ok {
			errs = append(errs, field.Invalid(bp.Key(k), k, "duplicate of key present in data"))
		}
	}
	if total > MaxConfigMapSize {
		errs = append(errs, field.TooLong(dp, MaxConfigMapSize))
	}
	return errs
}

// ConfigMapUpdate validates an update of a ConfigMap: the new object as on
// create, immutable metadata and, once immutable is true, unchanged
// immutable, data and binaryData.
func ConfigMapUpdate(newCM, oldCM *corev1.ConfigMap) field.ErrorList {
	errs := ObjectMetaUpdate(newCM.GetMetadata(), oldCM.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, ConfigMap(newCM)...)
	if !oldCM.GetImmutable() {
		return errs
	}
	const msg = "field is immutable when `immutable` is set"
	if !newCM.GetImmutable() {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), msg))
	}
	if !maps.Equal(newCM.GetData(), oldCM.GetData()) {
		errs = append(errs, field.Forbidden(field.NewPath("data"), msg))
	}
	if !maps.EqualFunc(newCM.GetBinaryData(), oldCM.GetBinaryData(), bytes.Equal) {
		errs = append(errs, field.Forbidden(field.NewPath("binaryData"), msg))
	}
	return errs
}
