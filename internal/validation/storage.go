package validation

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
	storagev1 "skiff.dev/proto/storage/v1"
)

// The values Kubernetes accepts, sorted as its error messages list them.
var (
	accessModes        = []string{"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"}
	pvReclaimPolicies  = []string{"Delete", "Recycle", "Retain"}
	scReclaimPolicies  = []string{"Delete", "Retain"}
	volumeModes        = []string{"Block", "Filesystem"}
	volumeBindingModes = []string{"Immediate", "WaitForFirstConsumer"}
)

// StorageClass parameters' limits (Kubernetes').
const (
	maxProvisionerParameterSize = 256 * (1 << 10)
	maxProvisionerParameterLen  = 512
)

// PersistentVolume validates a PersistentVolume being created: metadata (a
// DNS subdomain name, cluster-scoped), access modes (at least one, known,
// ReadWriteOncePod alone), capacity (storage only, a positive quantity),
// reclaim policy, exactly one source (hostPath or local; local needs
// nodeAffinity), node affinity, claimRef, class name and volume mode.
func PersistentVolume(pv *corev1.PersistentVolume) field.ErrorList {
	if pv == nil {
		pv = &corev1.PersistentVolume{}
	}
	errs := ObjectMeta(pv.Metadata, false, NameIsDNSSubdomain, field.NewPath("metadata"))
	s := pv.Spec
	if s == nil {
		s = &corev1.PersistentVolumeSpec{}
	}
	p := field.NewPath("spec")
	errs = append(errs, volumeAccessModes(s.AccessModes, p.Child("accessModes"), "")...)

	cp := p.Child("capacity")
	if len(s.Capacity) == 0 {
		errs = append(errs, field.Required(cp, ""))
	}
	if _, ok := s.Capacity["storage"]; !ok || len(s.Capacity) > 1 {
		errs = append(errs, field.NotSupported(cp, fmt.Sprint(s.Capacity), []string{"storage"}))
	}
	for _, r := range sortedKeys(s.Capacity) {
		errs = append(errs, positiveQuantity(s.Capacity[r], cp.Key(r))...)
	}

	if rp := s.PersistentVolumeReclaimPolicy; rp != "" && !slices.Contains(pvReclaimPolicies, rp) {
		errs = append(errs, field.NotSupported(p.Child("persistentVolumeReclaimPolicy"), rp, pvReclaimPolicies))
	}

	affinitySet := false
	if na := s.NodeAffinity; na != nil {
		affinitySet = true
		errs = append(errs, volumeNodeAffinity(na, p.Child("nodeAffinity"))...)
	}
	sources := 0
	if hp := s.HostPath; hp != nil {
		sources++
		errs = append(errs, hostPathSource(hp, p.Child("hostPath"))...)
	}
	if l := s.Local; l != nil {
		lp := p.Child("local")
		if sources > 0 {
			errs = append(errs, field.Forbidden(lp, "may not specify more than 1 volume type"))
		} else {
			sources++
			if l.Path == "" {
				errs = append(errs, field.Required(lp.Child("path"), ""))
			} else {
				errs = append(errs, noBacksteps(l.Path, lp.Child("path"))...)
			}
			if !affinitySet {
				errs = append(errs, field.Required(p.Child("nodeAffinity"), "Local volume requires node affinity"))
			}
		}
	}
	if sources == 0 {
		errs = append(errs, field.Required(p, "must specify a volume type"))
	}
	if hp := s.HostPath; hp != nil && path.Clean(hp.Path) == "/" && s.PersistentVolumeReclaimPolicy == "Recycle" {
		errs = append(errs, field.Forbidden(p.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
	}

	if ref := s.ClaimRef; ref != nil {
		// Kubernetes checks no more; the binder needs both to find the
		// claim.
		rp := p.Child("claimRef")
		if ref.Name == "" {
			errs = append(errs, field.Required(rp.Child("name"), ""))
		}
		if ref.Namespace == "" {
			errs = append(errs, field.Required(rp.Child("namespace"), ""))
		}
	}
	if c := s.StorageClassName; c != "" {
		errs = append(errs, invalidEach(p.Child("storageClassName"), c, NameIsDNSSubdomain(c))...)
	}
	if m := s.VolumeMode; m != nil && !slices.Contains(volumeModes, *m) {
		errs = append(errs, field.NotSupported(p.Child("volumeMode"), *m, volumeModes))
	}
	return errs
}

// PersistentVolumeUpdate validates an update of a PersistentVolume: the
// new object as on create, immutable metadata, and an unchanged source
// (hostPath, local), volumeMode and, once set, nodeAffinity. Capacity,
// access modes, claimRef, class and reclaim policy may change.
func PersistentVolumeUpdate(newPV, oldPV *corev1.PersistentVolume) field.ErrorList {
	errs := ObjectMetaUpdate(newPV.GetMetadata(), oldPV.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, PersistentVolume(newPV)...)
	ns, os := newPV.GetSpec(), oldPV.GetSpec()
	if !proto.Equal(ns.GetHostPath(), os.GetHostPath()) || !proto.Equal(ns.GetLocal(), os.GetLocal()) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"),
			fmt.Sprintf("spec.persistentvolumesource is immutable after creation\nold: %s\nnew: %s", volumeSourceString(os), volumeSourceString(ns))))
	}
	errs = append(errs, immutable(fmtOptional(ns.VolumeMode), fmtOptional(os.VolumeMode), field.NewPath("volumeMode"))...)
	if os.GetNodeAffinity() != nil && !proto.Equal(ns.GetNodeAffinity(), os.GetNodeAffinity()) {
		errs = append(errs, field.Invalid(field.NewPath("nodeAffinity"), "nodeAffinity", fieldImmutableErrorMsg))
	}
	return errs
}

func volumeSourceString(s *corev1.PersistentVolumeSpec) string {
	switch {
	case s.GetHostPath() != nil:
		return fmt.Sprintf("hostPath{path: %q, type: %q}", s.GetHostPath().GetPath(), s.GetHostPath().GetType())
	case s.GetLocal() != nil:
		return fmt.Sprintf("local{path: %q}", s.GetLocal().GetPath())
	}
	return "none"
}

// PersistentVolumeClaim validates a claim being created: metadata, at
// least one known access mode (ReadWriteOncePod alone), a selector,
// resources.requests.storage (a positive quantity), the class name and the
// volume mode.
func PersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
	if pvc == nil {
		pvc = &corev1.PersistentVolumeClaim{}
	}
	errs := ObjectMeta(pvc.Metadata, true, NameIsDNSSubdomain, field.NewPath("metadata"))
	s := pvc.Spec
	if s == nil {
		s = &corev1.PersistentVolumeClaimSpec{}
	}
	p := field.NewPath("spec")
	errs = append(errs, volumeAccessModes(s.AccessModes, p.Child("accessModes"), "at least 1 access mode is required")...)
	errs = append(errs, LabelSelector(s.Selector, p.Child("selector"))...)
	// Kubernetes reports the request at spec.resources[storage].
	rp := p.Child("resources").Key("storage")
	if v, ok := s.GetResources().GetRequests()["storage"]; !ok {
		errs = append(errs, field.Required(rp, ""))
	} else {
		errs = append(errs, positiveQuantity(v, rp)...)
	}
	if c := s.StorageClassName; c != nil && *c != "" {
		errs = append(errs, invalidEach(p.Child("storageClassName"), *c, NameIsDNSSubdomain(*c))...)
	}
	if m := s.VolumeMode; m != nil && !slices.Contains(volumeModes, *m) {
		errs = append(errs, field.NotSupported(p.Child("volumeMode"), *m, volumeModes))
	}
	return errs
}

// PersistentVolumeClaimUpdate validates an update of a claim as Kubernetes
// does: its spec is immutable but for volumeName, which may be set once
// (by the binder), storageClassName, which may be set once when unset
// (a default class that appeared later), and, of a Bound claim,
// resources.requests, which may grow but not shrink. Whether the class
// allows expansion at all is not checked here: that needs the class
// (Kubernetes' PersistentVolumeClaimResize admission, not in Skiff).
func PersistentVolumeClaimUpdate(newPVC, oldPVC *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := ObjectMetaUpdate(newPVC.GetMetadata(), oldPVC.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, PersistentVolumeClaim(newPVC)...)
	ns, os := newPVC.GetSpec(), oldPVC.GetSpec()
	if ns == nil {
		ns = &corev1.PersistentVolumeClaimSpec{}
	}
	if os == nil {
		os = &corev1.PersistentVolumeClaimSpec{}
	}
	munged := proto.Clone(ns).(*corev1.PersistentVolumeClaimSpec)
	if os.VolumeName == "" {
		munged.VolumeName = os.VolumeName
	}
	if os.StorageClassName == nil {
		munged.StorageClassName = nil
	}
	bound := newPVC.GetStatus().GetPhase() == "Bound"
	if bound && munged.Resources != nil && munged.Resources.Requests != nil {
		munged.Resources.Requests = maps.Clone(munged.Resources.Requests)
		if v, ok := os.GetResources().GetRequests()["storage"]; ok {
			munged.Resources.Requests["storage"] = v
		} else {
			delete(munged.Resources.Requests, "storage")
		}
	}
	if !proto.Equal(munged, os) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"),
			"spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims; changed: "+
				strings.Join(changedFields(munged, os), ", ")))
	}
	newSize, nerr := parseQuantity(ns.GetResources().GetRequests()["storage"], field.NewPath("spec"))
	oldSize, oerr := parseQuantity(os.GetResources().GetRequests()["storage"], field.NewPath("spec"))
	if nerr == nil && oerr == nil && newSize.Cmp(oldSize) < 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than previous value"))
	}
	errs = append(errs, immutable(fmtOptional(ns.VolumeMode), fmtOptional(os.VolumeMode), field.NewPath("volumeMode"))...)
	return errs
}

// StorageClass validates a StorageClass being created: metadata, a
// provisioner (a qualified name), the parameters (non-empty keys, at most
// 512 of them and 256 KiB together), reclaimPolicy (Delete or Retain),
// volumeBindingMode (required after defaulting) and allowedTopologies.
func StorageClass(sc *storagev1.StorageClass) field.ErrorList {
	if sc == nil {
		sc = &storagev1.StorageClass{}
	}
	errs := ObjectMeta(sc.Metadata, false, NameIsDNSSubdomain, field.NewPath("metadata"))
	pp := field.NewPath("provisioner")
	if sc.Provisioner == "" {
		errs = append(errs, field.Required(pp, ""))
	} else {
		errs = append(errs, invalidEach(pp, sc.Provisioner, isQualifiedName(strings.ToLower(sc.Provisioner)))...)
	}
	errs = append(errs, provisionerParameters(sc.Parameters, field.NewPath("parameters"))...)
	if rp := sc.ReclaimPolicy; rp != nil && *rp != "" && !slices.Contains(scReclaimPolicies, *rp) {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), *rp, scReclaimPolicies))
	}
	bp := field.NewPath("volumeBindingMode")
	if m := sc.VolumeBindingMode; m == nil {
		errs = append(errs, field.Required(bp, ""))
	} else if !slices.Contains(volumeBindingModes, *m) {
		errs = append(errs, field.NotSupported(bp, *m, volumeBindingModes))
	}
	return append(errs, allowedTopologies(sc.AllowedTopologies, field.NewPath("allowedTopologies"))...)
}

// StorageClassUpdate validates an update of a StorageClass: parameters,
// provisioner, reclaimPolicy and volumeBindingMode never change.
func StorageClassUpdate(newSC, oldSC *storagev1.StorageClass) field.ErrorList {
	errs := ObjectMetaUpdate(newSC.GetMetadata(), oldSC.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, StorageClass(newSC)...)
	if !maps.Equal(newSC.GetParameters(), oldSC.GetParameters()) {
		errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	if newSC.GetProvisioner() != oldSC.GetProvisioner() {
		errs = append(errs, field.Forbidden(field.NewPath("provisioner"), "updates to provisioner are forbidden."))
	}
	if newSC.GetReclaimPolicy() != oldSC.GetReclaimPolicy() {
		errs = append(errs, field.Forbidden(field.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
	}
	return append(errs, immutable(fmtOptional(newSC.VolumeBindingMode), fmtOptional(oldSC.VolumeBindingMode), field.NewPath("volumeBindingMode"))...)
}

// volumeAccessModes: at least one (required says why), each known, and
// ReadWriteOncePod only alone.
func volumeAccessModes(modes []string, p *field.Path, required string) field.ErrorList {
	var errs field.ErrorList
	if len(modes) == 0 {
		errs = append(errs, field.Required(p, required))
	}
	rwop, other := false, false
	for _, m := range modes {
		switch {
		case !slices.Contains(accessModes, m):
			errs = append(errs, field.NotSupported(p, m, accessModes))
		case m == "ReadWriteOncePod":
			rwop = true
		default:
			other = true
		}
	}
	if rwop && other {
		errs = append(errs, field.Forbidden(p, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

// positiveQuantity: a well-formed quantity greater than zero.
func positiveQuantity(v string, p *field.Path) field.ErrorList {
	q, err := parseQuantity(v, p)
	if err != nil {
		return field.ErrorList{err}
	}
	if q.Sign() <= 0 {
		return field.ErrorList{field.Invalid(p, v, "must be greater than zero")}
	}
	return nil
}

// hostPathSource: a path without "..", a known type.
func hostPathSource(hp *corev1.HostPathVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	pp := p.Child("path")
	if hp.Path == "" {
		errs = append(errs, field.Required(pp, ""))
	} else {
		errs = append(errs, noBacksteps(hp.Path, pp)...)
	}
	if !slices.Contains(hostPathTypes, hp.Type) {
		errs = append(errs, field.NotSupported(p.Child("type"), hp.Type, hostPathTypes[1:]))
	}
	return errs
}

// volumeNodeAffinity: required, with at least one valid term.
func volumeNodeAffinity(na *corev1.VolumeNodeAffinity, p *field.Path) field.ErrorList {
	rp := p.Child("required")
	if na.Required == nil {
		return field.ErrorList{field.Required(rp, "must specify required node constraints")}
	}
	tp := rp.Child("nodeSelectorTerms")
	if len(na.Required.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(tp, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, term := range na.Required.NodeSelectorTerms {
		errs = append(errs, nodeSelectorTerm(term, tp.Index(i))...)
	}
	return errs
}

func provisionerParameters(params map[string]string, p *field.Path) field.ErrorList {
	if len(params) > maxProvisionerParameterLen {
		return field.ErrorList{field.TooMany(p, len(params), maxProvisionerParameterLen)}
	}
	var errs field.ErrorList
	size := 0
	for _, k := range sortedKeys(params) {
		if k == "" {
			errs = append(errs, field.Invalid(p, k, "field can not be empty."))
		}
		size += len(k) + len(params[k])
	}
	if size > maxProvisionerParameterSize {
		errs = append(errs, field.TooLong(p, maxProvisionerParameterSize))
	}
	return errs
}

// allowedTopologies: each term's requirements have label-name keys, each
// once, and at least one value, each once; no two terms are the same.
func allowedTopologies(terms []*corev1.TopologySelectorTerm, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	var seen []map[string][]string
	for i, term := range terms {
		ip := p.Index(i)
		exprs := map[string][]string{}
		for j, r := range term.GetMatchLabelExpressions() {
			rp := ip.Child("matchLabelExpressions").Index(j)
			vp := rp.Child("values")
			if len(r.GetValues()) == 0 {
				errs = append(errs, field.Required(vp, ""))
			}
			var values []string
			for k, v := range r.GetValues() {
				if slices.Contains(values, v) {
					errs = append(errs, field.Duplicate(vp.Index(k), v))
				}
				values = append(values, v)
			}
			errs = append(errs, invalidEach(rp.Child("key"), r.GetKey(), isQualifiedName(r.GetKey()))...)
			if _, dup := exprs[r.GetKey()]; dup {
				errs = append(errs, field.Duplicate(rp.Child("key"), r.GetKey()))
			}
			slices.Sort(values)
			exprs[r.GetKey()] = slices.Compact(values)
		}
		for _, s := range seen {
			if maps.EqualFunc(s, exprs, slices.Equal) {
				errs = append(errs, field.Duplicate(ip.Child("matchLabelExpressions"), ""))
			}
		}
		seen = append(seen, exprs)
	}
	return errs
}
