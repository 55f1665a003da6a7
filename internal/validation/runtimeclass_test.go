package validation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/validation"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	nodev1 "skiff.dev/proto/node/v1"
)

func gvisorClass() *nodev1.RuntimeClass {
	return &nodev1.RuntimeClass{
		Metadata: &metav1.ObjectMeta{Name: "gvisor"},
		Handler:  "runsc",
		Overhead: &nodev1.Overhead{PodFixed: map[string]string{"cpu": "250m", "memory": "120Mi"}},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"runtime": "gvisor"},
			Tolerations: []*corev1.Toleration{{Key: "runtime", Operator: "Equal", Value: "gvisor", Effect: "NoSchedule"}}},
	}
}

func TestRuntimeClass(t *testing.T) {
	expectErrors(t, validation.RuntimeClass(gvisorClass()), nil)
	cases := []struct {
		name   string
		mutate func(*nodev1.RuntimeClass)
		want   []string
	}{
		{"no handler", func(rc *nodev1.RuntimeClass) { rc.Handler = "" }, []string{"handler: Invalid value"}},
		{"handler not a DNS label", func(rc *nodev1.RuntimeClass) { rc.Handler = "run.sc" }, []string{"handler: Invalid value"}},
		{"name not a DNS subdomain", func(rc *nodev1.RuntimeClass) { rc.Metadata.Name = "G_visor" }, []string{"metadata.name: Invalid value"}},
		{"overhead malformed", func(rc *nodev1.RuntimeClass) { rc.Overhead.PodFixed["cpu"] = "lots" }, []string{"overhead.limits[cpu]: Invalid value"}},
		{"overhead negative", func(rc *nodev1.RuntimeClass) { rc.Overhead.PodFixed["memory"] = "-1Mi" }, []string{"overhead.limits[memory]: Invalid value"}},
		{"overhead of no standard resource", func(rc *nodev1.RuntimeClass) { rc.Overhead.PodFixed["disk"] = "1" }, []string{"overhead.limits[disk]: Invalid value"}},
		{"nodeSelector label value", func(rc *nodev1.RuntimeClass) { rc.Scheduling.NodeSelector["runtime"] = "g visor" },
			[]string{"scheduling.nodeSelector[runtime]: Invalid value"}},
		{"toleration operator", func(rc *nodev1.RuntimeClass) { rc.Scheduling.Tolerations[0].Operator = "Near" },
			[]string{"scheduling.tolerations[0].operator: Unsupported value"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := gvisorClass()
			tc.mutate(rc)
			expectErrors(t, validation.RuntimeClass(rc), tc.want)
		})
	}
	expectDetail(t, validation.RuntimeClass(&nodev1.RuntimeClass{Metadata: &metav1.ObjectMeta{Name: "x"}}), "handler",
		"a lowercase RFC 1123 label must consist of")
}

func TestRuntimeClassUpdate(t *testing.T) {
	old := gvisorClass()
	old.Metadata.ResourceVersion = "5"
	same := proto.Clone(old).(*nodev1.RuntimeClass)
	same.Overhead.PodFixed["cpu"] = "500m" // overhead and scheduling may change
	same.Scheduling = nil
	expectErrors(t, validation.RuntimeClassUpdate(same, old), nil)

	changed := proto.Clone(old).(*nodev1.RuntimeClass)
	changed.Handler = "kata"
	errs := validation.RuntimeClassUpdate(changed, old)
	expectErrors(t, errs, []string{"handler: Invalid value"})
	expectDetail(t, errs, "handler", "field is immutable")
}

func TestPodNodeFields(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.PodSpec)
		want   []string
	}{
		{"all valid", func(s *corev1.PodSpec) {
			s.HostAliases = []*corev1.HostAlias{{Ip: "10.1.2.3", Hostnames: []string{"foo.remote", "bar"}}, {Ip: "2001:db8::1"}}
			s.ReadinessGates = []*corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "Ready2"}}
			s.RuntimeClassName = proto.String("gvisor")
			s.Overhead = map[string]string{"cpu": "250m"}
			s.HostPid, s.HostIpc = true, true
		}, nil},
		{"an alias IP", func(s *corev1.PodSpec) { s.HostAliases = []*corev1.HostAlias{{Ip: "10.1.2", Hostnames: []string{"a"}}} },
			[]string{"spec.hostAliases[0].ip: Invalid value"}},
		{"an alias hostname", func(s *corev1.PodSpec) {
			s.HostAliases = []*corev1.HostAlias{{Ip: "10.1.2.3", Hostnames: []string{"a", "Not_A_Name"}}}
		},
			[]string{"spec.hostAliases[0].hostnames[1]: Invalid value"}},
		{"a readiness gate", func(s *corev1.PodSpec) {
			s.ReadinessGates = []*corev1.PodReadinessGate{{ConditionType: "not a condition"}}
		},
			[]string{"spec.readinessGates[0].conditionType: Invalid value"}},
		{"runtimeClassName", func(s *corev1.PodSpec) { s.RuntimeClassName = proto.String("G visor") }, []string{"spec.runtimeClassName: Invalid value"}},
		{"runtimeClassName empty", func(s *corev1.PodSpec) { s.RuntimeClassName = proto.String("") }, []string{"spec.runtimeClassName: Invalid value"}},
		{"overhead", func(s *corev1.PodSpec) { s.Overhead = map[string]string{"cpu": "-1"} }, []string{"spec.overhead.limits[cpu]: Invalid value"}},
		{"shareProcessNamespace with hostPID", func(s *corev1.PodSpec) { s.HostPid, s.ShareProcessNamespace = true, proto.Bool(true) },
			[]string{"spec.securityContext.shareProcessNamespace: Invalid value"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := nginxPod()
			tc.mutate(p.Spec)
			expectErrors(t, validation.Pod(p), tc.want)
		})
	}
	p := nginxPod()
	p.Spec.HostPid, p.Spec.ShareProcessNamespace = true, proto.Bool(true)
	expectDetail(t, validation.Pod(p), "spec.securityContext.shareProcessNamespace", "ShareProcessNamespace and HostPID cannot both be enabled")
}
