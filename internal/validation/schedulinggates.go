package validation

import (
	"fmt"

	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
)

// schedulingGates: each gate's name a qualified name, no name twice.
func schedulingGates(gates []*corev1.PodSchedulingGate, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, g := range gates {
		name := g.GetName()
		errs = append(errs, invalidEach(p.Index(i), name, isQualifiedName(name))...)
		if seen[name] {
			errs = append(errs, field.Duplicate(p.Index(i), name))
		}
		seen[name] = true
	}
	return errs
}

// onlyDeletedSchedulingGates: an update may remove scheduling gates, never
// add one.
func onlyDeletedSchedulingGates(newGates, oldGates []*corev1.PodSchedulingGate, p *field.Path) field.ErrorList {
	old := map[string]bool{}
	for _, g := range oldGates {
		old[g.GetName()] = true
	}
	var errs field.ErrorList
	for i, g := range newGates {
		if !old[g.GetName()] {
			errs = append(errs, field.Forbidden(p.Index(i).Child("name"),
				fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.GetName())))
		}
	}
	return errs
}

// gatedNodeName: a pod may not name its node while it has scheduling
// gates.
func gatedNodeName(spec *corev1.PodSpec, p *field.Path) field.ErrorList {
	if spec.GetNodeName() != "" && len(spec.GetSchedulingGates()) > 0 {
		return field.ErrorList{field.Forbidden(p.Child("nodeName"), "cannot be set until all schedulingGates have been cleared")}
	}
	return nil
}
