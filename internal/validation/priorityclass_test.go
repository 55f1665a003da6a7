package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/defaults"
	"skiff.dev/internal/validation"
	metav1 "skiff.dev/proto/meta/v1"
	schedulingv1 "skiff.dev/proto/scheduling/v1"
)

func priorityClass(name string, value int32) *schedulingv1.PriorityClass {
	pc := &schedulingv1.PriorityClass{Metadata: &metav1.ObjectMeta{Name: name}, Value: value}
	defaults.PriorityClass(pc)
	return pc
}

func TestPriorityClass(t *testing.T) {
	for _, pc := range append(defaults.SystemPriorityClasses(), priorityClass("high", 1000000000), priorityClass("low", -5)) {
		expectErrors(t, validation.PriorityClass(pc), nil)
	}
	cases := []struct {
		name   string
		pc     *schedulingv1.PriorityClass
		want   []string
		detail string
	}{
		{"user value above the limit", priorityClass("huge", 1000000001), []string{"value: Forbidden"},
			"maximum allowed value of a user defined priority is 1000000000"},
		{"unknown system class", priorityClass("system-mine", 10), []string{"metadata.name: Forbidden"},
			"priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"},
		{"system class with another value", priorityClass("system-node-critical", 5), []string{"metadata.name: Forbidden"},
			"value of system-node-critical PriorityClass must be 2000001000"},
		{"system class as global default", func() *schedulingv1.PriorityClass {
			pc := priorityClass("system-cluster-critical", 2000000000)
			pc.GlobalDefault = true
			return pc
		}(), []string{"metadata.name: Forbidden"}, "globalDefault of system-cluster-critical PriorityClass must be false"},
		{"unknown preemption policy", func() *schedulingv1.PriorityClass {
			pc := priorityClass("p", 1)
			pc.PreemptionPolicy = strp("Sometimes")
			return pc
		}(), []string{"preemptionPolicy: Unsupported value"}, `supported values: "PreemptLowerPriority", "Never"`},
		{"empty preemption policy", func() *schedulingv1.PriorityClass {
			pc := priorityClass("p", 1)
			pc.PreemptionPolicy = strp("")
			return pc
		}(), []string{"preemptionPolicy: Required value"}, ""},
		{"bad name", priorityClass("Not_A_Name", 1), []string{"metadata.name: Invalid value"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := validation.PriorityClass(c.pc)
			expectErrors(t, errs, c.want)
			if c.detail != "" {
				path, _, _ := strings.Cut(c.want[0], ": ")
				expectDetail(t, errs, path, c.detail)
			}
		})
	}
}

func TestPriorityClassUpdate(t *testing.T) {
	old := priorityClass("high", 1000)
	old.Metadata.ResourceVersion = "1"
	ok := proto.Clone(old).(*schedulingv1.PriorityClass)
	ok.Description = "now described"
	ok.GlobalDefault = true
	expectErrors(t, validation.PriorityClassUpdate(ok, old), nil)

	value := proto.Clone(old).(*schedulingv1.PriorityClass)
	value.Value = 2000
	errs := validation.PriorityClassUpdate(value, old)
	expectErrors(t, errs, []string{"value: Forbidden"})
	expectDetail(t, errs, "value", "may not be changed in an update.")

	policy := proto.Clone(old).(*schedulingv1.PriorityClass)
	policy.PreemptionPolicy = strp("Never")
	expectErrors(t, validation.PriorityClassUpdate(policy, old), []string{"preemptionPolicy: Invalid value"})
}
