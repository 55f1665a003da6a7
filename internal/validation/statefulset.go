package validation

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/field"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
)

var retentionPolicyTypes = []string{"Retain", "Delete"}

// StatefulSet validates an apps/v1 StatefulSet being created, with
// Kubernetes' paths and messages: metadata (the name a DNS-1123 label, as
// its pods' hostnames are built from it), then the spec (see
// statefulSetSpec).
func StatefulSet(ss *appsv1.StatefulSet) field.ErrorList {
	if ss == nil {
		ss = &appsv1.StatefulSet{}
	}
	errs := ObjectMeta(ss.Metadata, true, NameIsDNSLabel, field.NewPath("metadata"))
	return append(errs, statefulSetSpec(ss.Spec, field.NewPath("spec"))...)
}

// StatefulSetUpdate validates an update of a StatefulSet: immutable
// metadata (the name is not validated again, as in Kubernetes), the new
// spec as on create, and a spec that changed nothing but replicas,
// ordinals, template, updateStrategy, revisionHistoryLimit,
// persistentVolumeClaimRetentionPolicy and minReadySeconds.
func StatefulSetUpdate(newSS, oldSS *appsv1.StatefulSet) field.ErrorList {
	mp := field.NewPath("metadata")
	errs := ObjectMetaUpdate(newSS.GetMetadata(), oldSS.GetMetadata(), mp)
	errs = append(errs, ObjectMeta(newSS.GetMetadata(), true, func(string) []string { return nil }, mp)...)
	errs = append(errs, statefulSetSpec(newSS.GetSpec(), field.NewPath("spec"))...)

	rest := proto.Clone(orEmpty(newSS.GetSpec())).(*appsv1.StatefulSetSpec)
	old := orEmpty(oldSS.GetSpec())
	rest.Replicas = old.Replicas
	rest.Ordinals = old.Ordinals
	rest.Template = old.Template
	rest.UpdateStrategy = old.UpdateStrategy
	rest.RevisionHistoryLimit = old.RevisionHistoryLimit
	rest.PersistentVolumeClaimRetentionPolicy = old.PersistentVolumeClaimRetentionPolicy
	rest.MinReadySeconds = old.MinReadySeconds
	if !proto.Equal(rest, old) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"))
	}
	return errs
}

func orEmpty(s *appsv1.StatefulSetSpec) *appsv1.StatefulSetSpec {
	if s == nil {
		return &appsv1.StatefulSetSpec{}
	}
	return s
}

// statefulSetSpec is Kubernetes' ValidateStatefulSetSpec: the policies,
// the update strategy, the counters, a non-empty selector matching the
// template's labels and a template whose restartPolicy is Always.
//
// Two checks Kubernetes leaves to the creation of the pods and claims are
// made here: the template's pod spec is validated as a Deployment's, with
// a persistentVolumeClaim volume for each claim template (so that volume
// mounts may name them, as the pods will have them), and each claim
// template needs a name that is a DNS-1123 label, unique (it names the
// volume and prefixes its claims' names).
func statefulSetSpec(s *appsv1.StatefulSetSpec, p *field.Path) field.ErrorList {
	s = orEmpty(s)
	var errs field.ErrorList
	switch pp := p.Child("podManagementPolicy"); s.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(pp, ""))
	case "OrderedReady", "Parallel":
	default:
		errs = append(errs, field.Invalid(pp, s.PodManagementPolicy, "must be 'OrderedReady' or 'Parallel'"))
	}
	errs = append(errs, statefulSetUpdateStrategy(s.UpdateStrategy, p.Child("updateStrategy"))...)
	if rp := s.PersistentVolumeClaimRetentionPolicy; rp != nil {
		rpp := p.Child("persistentVolumeClaimRetentionPolicy")
		for _, f := range []struct{ name, v string }{{"whenDeleted", rp.WhenDeleted}, {"whenScaled", rp.WhenScaled}} {
			if !isOneOf(f.v, retentionPolicyTypes) {
				errs = append(errs, field.NotSupported(rpp.Child(f.name), f.v, retentionPolicyTypes))
			}
		}
	}
	if s.Replicas != nil {
		errs = append(errs, nonNegative(int64(*s.Replicas), p.Child("replicas"))...)
	}
	errs = append(errs, nonNegative(int64(s.MinReadySeconds), p.Child("minReadySeconds"))...)
	if s.Ordinals != nil {
		errs = append(errs, nonNegative(int64(s.Ordinals.Start), p.Child("ordinals", "start"))...)
	}
	if v := s.RevisionHistoryLimit; v != nil {
		// Not checked by Kubernetes, whose controller then fails on it.
		errs = append(errs, nonNegative(int64(*v), p.Child("revisionHistoryLimit"))...)
	}
	claimErrs, claimNames := claimTemplates(s.VolumeClaimTemplates, p.Child("volumeClaimTemplates"))
	errs = append(errs, claimErrs...)
	return append(errs, workloadSelectorAndTemplate(s.Selector, withClaimVolumes(s.Template, claimNames), p, "statefulset")...)
}

func statefulSetUpdateStrategy(us *appsv1.StatefulSetUpdateStrategy, p *field.Path) field.ErrorList {
	if us == nil {
		us = &appsv1.StatefulSetUpdateStrategy{}
	}
	switch us.Type {
	case "":
		return field.ErrorList{field.Required(p, "")}
	case "OnDelete":
		if us.RollingUpdate != nil {
			return field.ErrorList{field.Invalid(p.Child("rollingUpdate"), rollingUpdateString(us.RollingUpdate), "only allowed for updateStrategy 'RollingUpdate'")}
		}
	case "RollingUpdate":
		if ru := us.RollingUpdate; ru != nil {
			rp := p.Child("rollingUpdate")
			var errs field.ErrorList
			if ru.Partition != nil {
				errs = append(errs, nonNegative(int64(*ru.Partition), rp.Child("partition"))...)
			}
			if ru.MaxUnavailable.GetValue() != nil {
				mp := rp.Child("maxUnavailable")
				errs = append(errs, intOrPercent(ru.MaxUnavailable, mp)...)
				v, pct := intOrPercentValue(ru.MaxUnavailable)
				if v == 0 {
					errs = append(errs, field.Invalid(mp, intOrStringValue(ru.MaxUnavailable), "cannot be 0"))
				}
				if pct && v > 100 {
					errs = append(errs, field.Invalid(mp, intOrStringValue(ru.MaxUnavailable), "must not be greater than 100%"))
				}
			}
			return errs
		}
	default:
		return field.ErrorList{field.Invalid(p, "{"+us.Type+"}", "must be 'RollingUpdate' or 'OnDelete'")}
	}
	return nil
}

func rollingUpdateString(ru *appsv1.RollingUpdateStatefulSetStrategy) string {
	return fmt.Sprintf("{partition:%s maxUnavailable:%v}", fmtOptional(ru.Partition), intOrStringValue(ru.MaxUnavailable))
}

func isOneOf(v string, allowed []string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

// claimTemplates checks the claim templates' names and returns the valid
// ones, in order.
func claimTemplates(claims []*corev1.PersistentVolumeClaim, p *field.Path) (field.ErrorList, []string) {
	var errs field.ErrorList
	var names []string
	seen := map[string]bool{}
	for i, c := range claims {
		np := p.Index(i).Child("metadata", "name")
		name := c.GetMetadata().GetName()
		switch {
		case name == "":
			errs = append(errs, field.Required(np, ""))
		case seen[name]:
			errs = append(errs, field.Duplicate(np, name))
		default:
			if msgs := isDNS1123Label(name); len(msgs) > 0 {
				errs = append(errs, invalidEach(np, name, msgs)...)
				continue
			}
			seen[name] = true
			names = append(names, name)
		}
	}
	return errs, names
}

// withClaimVolumes returns the template as the pods get it: a volume per
// claim template, replacing a template volume of the same name (as
// Kubernetes' updateStorage does) or appended. The template is not
// changed; a copy is returned when there are claims.
func withClaimVolumes(t *corev1.PodTemplateSpec, claims []string) *corev1.PodTemplateSpec {
	if t == nil || len(claims) == 0 {
		return t
	}
	out := &corev1.PodTemplateSpec{Metadata: t.Metadata, Spec: &corev1.PodSpec{}}
	if t.Spec != nil {
		out.Spec = proto.Clone(t.Spec).(*corev1.PodSpec)
	}
	for _, name := range claims {
		v := &corev1.Volume{Name: name, PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}
		replaced := false
		for i, old := range out.Spec.Volumes {
			if old.GetName() == name {
				out.Spec.Volumes[i] = v
				replaced = true
			}
		}
		if !replaced {
			out.Spec.Volumes = append(out.Spec.Volumes, v)
		}
	}
	return out
}
