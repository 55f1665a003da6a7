package validation

import (
	"fmt"
	"strings"

	"skiff.dev/internal/defaults"
	"skiff.dev/internal/field"
	schedulingv1 "skiff.dev/proto/scheduling/v1"
)

// preemptionPolicies are the values of a class's or pod's preemptionPolicy.
var preemptionPolicies = []string{defaults.PreemptLowerPriority, defaults.PreemptNever}

// PriorityClass validates a PriorityClass as Kubernetes does: a DNS
// subdomain name; a name with the system- prefix must be one of the
// system classes with its value and globalDefault; any other class's value
// is at most 1,000,000,000; preemptionPolicy, when set, is
// PreemptLowerPriority or Never.
func PriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	if pc == nil {
		pc = &schedulingv1.PriorityClass{}
	}
	errs := ObjectMeta(pc.Metadata, false, NameIsDNSSubdomain, field.NewPath("metadata"))
	if name := pc.GetMetadata().GetName(); strings.HasPrefix(name, defaults.SystemPriorityClassPrefix) {
		if err := knownSystemPriorityClass(name, pc.Value, pc.GlobalDefault); err != nil {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+defaults.SystemPriorityClassPrefix+"' prefix are reserved for system use only. error: "+err.Error()))
		}
	} else if pc.Value > defaults.HighestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"),
			fmt.Sprintf("maximum allowed value of a user defined priority is %v", defaults.HighestUserDefinablePriority)))
	}
	if p := pc.PreemptionPolicy; p != nil {
		errs = append(errs, preemptionPolicy(*p, field.NewPath("preemptionPolicy"))...)
	}
	return errs
}

// PriorityClassUpdate validates an update of a PriorityClass: value and
// preemptionPolicy never change.
func PriorityClassUpdate(newPC, oldPC *schedulingv1.PriorityClass) field.ErrorList {
	errs := ObjectMetaUpdate(newPC.GetMetadata(), oldPC.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, PriorityClass(newPC)...)
	if newPC.GetValue() != oldPC.GetValue() {
		errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	return append(errs, immutable(fmtOptional(newPC.PreemptionPolicy), fmtOptional(oldPC.PreemptionPolicy), field.NewPath("preemptionPolicy"))...)
}

// knownSystemPriorityClass says why name, value and globalDefault are not
// one of the system classes (nil when they are).
func knownSystemPriorityClass(name string, value int32, globalDefault bool) error {
	for _, spc := range defaults.SystemPriorityClasses() {
		if spc.GetMetadata().GetName() != name {
			continue
		}
		if spc.Value != value {
			return fmt.Errorf("value of %v PriorityClass must be %v", name, spc.Value)
		}
		if spc.GlobalDefault != globalDefault {
			return fmt.Errorf("globalDefault of %v PriorityClass must be %v", name, spc.GlobalDefault)
		}
		return nil
	}
	return fmt.Errorf("%v is not a known system priority class", name)
}

// preemptionPolicy: PreemptLowerPriority or Never (a pod's or a class's).
func preemptionPolicy(v string, p *field.Path) field.ErrorList {
	return supported(v, preemptionPolicies, p)
}
