package validation_test

import (
	"strings"
	"testing"

	"skiff.dev/internal/validation"
	corev1 "skiff.dev/proto/core/v1"
)

func TestSecurityContextRules(t *testing.T) {
	app := func(s *corev1.PodSpec) *corev1.SecurityContext { return s.Containers[0].SecurityContext }
	cases := []struct {
		name   string
		mutate func(s *corev1.PodSpec)
		want   []string
		detail string // in the first error's text, when set
	}{
		{"a full pod security context", func(s *corev1.PodSpec) {
			s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr[int64](1000), RunAsGroup: ptr[int64](3000), FsGroup: ptr[int64](2000),
				SupplementalGroups: []int64{4000, 5000}, FsGroupChangePolicy: ptr("OnRootMismatch"),
				SeccompProfile: &corev1.SeccompProfile{Type: "RuntimeDefault"},
				Sysctls:        []*corev1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "1024 65535"}, {Name: "kernel/shm_rmid_forced", Value: "1"}}}
		}, nil, ""},
		{"a full container security context", func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr[int64](1000), RunAsNonRoot: ptr(true),
				Capabilities:             &corev1.Capabilities{Drop: []string{"ALL"}, Add: []string{"NET_BIND_SERVICE", "SYS_ADMIN"}},
				AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true), ProcMount: ptr("Default"),
				SeccompProfile: &corev1.SeccompProfile{Type: "Localhost", LocalhostProfile: ptr("profiles/audit.json")}}
		}, nil, ""},
		{"unknown capability names pass (the runtime refuses them)", func(s *corev1.PodSpec) {
			app(s).Capabilities = &corev1.Capabilities{Add: []string{"NOT_A_CAP"}}
		}, nil, ""},
		{"supplemental group negative", func(s *corev1.PodSpec) { s.SecurityContext.SupplementalGroups = []int64{10, -1} },
			[]string{"spec.securityContext.supplementalGroups[1]: Invalid value"}, "between 0 and 2147483647"},
		{"fsGroupChangePolicy unknown", func(s *corev1.PodSpec) { s.SecurityContext.FsGroupChangePolicy = ptr("Sometimes") },
			[]string{"spec.securityContext.fsGroupChangePolicy: Unsupported value"}, `supported values: "Always", "OnRootMismatch"`},
		{"seccomp type missing", func(s *corev1.PodSpec) { s.SecurityContext.SeccompProfile = &corev1.SeccompProfile{} },
			[]string{"spec.securityContext.seccompProfile.type: Required value"}, "type is required when seccompProfile is set"},
		{"seccomp type unknown", func(s *corev1.PodSpec) { app(s).SeccompProfile = &corev1.SeccompProfile{Type: "Strict"} },
			[]string{"spec.containers[0].securityContext.seccompProfile.type: Unsupported value"}, `"Localhost", "RuntimeDefault", "Unconfined"`},
		{"seccomp Localhost without a profile", func(s *corev1.PodSpec) { app(s).SeccompProfile = &corev1.SeccompProfile{Type: "Localhost"} },
			[]string{"spec.containers[0].securityContext.seccompProfile.localhostProfile: Required value"}, "must be set when seccomp type is Localhost"},
		{"seccomp profile with another type", func(s *corev1.PodSpec) {
			s.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: "RuntimeDefault", LocalhostProfile: ptr("p.json")}
		}, []string{"spec.securityContext.seccompProfile.localhostProfile: Invalid value"}, "can only be set when seccomp type is Localhost"},
		{"seccomp profile absolute", func(s *corev1.PodSpec) {
			app(s).SeccompProfile = &corev1.SeccompProfile{Type: "Localhost", LocalhostProfile: ptr("/etc/p.json")}
		}, []string{"spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value"}, "must be a relative path"},
		{"seccomp profile climbing out", func(s *corev1.PodSpec) {
			app(s).SeccompProfile = &corev1.SeccompProfile{Type: "Localhost", LocalhostProfile: ptr("a/../../p.json")}
		}, []string{"spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value"}, "must not contain '..'"},
		{"sysctl name missing", func(s *corev1.PodSpec) { s.SecurityContext.Sysctls = []*corev1.Sysctl{{Value: "1"}} },
			[]string{"spec.securityContext.sysctls[0].name: Required value"}, ""},
		{"sysctl name malformed", func(s *corev1.PodSpec) {
			s.SecurityContext.Sysctls = []*corev1.Sysctl{{Name: "Net.IPv4..x", Value: "1"}}
		},
			[]string{"spec.securityContext.sysctls[0].name: Invalid value"},
			`must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`},
		{"sysctl twice", func(s *corev1.PodSpec) {
			s.SecurityContext.Sysctls = []*corev1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}, {Name: "net.ipv4.tcp_syncookies", Value: "0"}}
		}, []string{"spec.securityContext.sysctls[1].name: Duplicate value"}, ""},
		{"net sysctl with hostNetwork", func(s *corev1.PodSpec) {
			s.HostNetwork = true
			s.Containers[0].Ports = nil
			s.SecurityContext.Sysctls = []*corev1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}}
		}, []string{"spec.securityContext.sysctls[0].name: Invalid value"}, "may not be specified when 'hostNetwork' is true"},
		{"ipc sysctl with hostIPC", func(s *corev1.PodSpec) {
			s.HostIpc = true
			s.SecurityContext.Sysctls = []*corev1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}}
		}, []string{"spec.securityContext.sysctls[0].name: Invalid value"}, "may not be specified when 'hostIPC' is true"},
		{"procMount unknown", func(s *corev1.PodSpec) { app(s).ProcMount = ptr("Masked") },
			[]string{"spec.containers[0].securityContext.procMount: Unsupported value"}, `supported values: "Default", "Unmasked"`},
		{"procMount Unmasked needs a user namespace", func(s *corev1.PodSpec) { app(s).ProcMount = ptr("Unmasked") },
			[]string{"spec.containers[0].securityContext.procMount: Invalid value"}, "`hostUsers` must be false to use `Unmasked`"},
		{"CAP_SYS_ADMIN without privilege escalation", func(s *corev1.PodSpec) {
			app(s).Capabilities = &corev1.Capabilities{Add: []string{"CAP_SYS_ADMIN"}}
		}, []string{"spec.containers[0].securityContext: Invalid value"}, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"},
		{"privileged without privilege escalation", func(s *corev1.PodSpec) { app(s).Privileged = ptr(true) },
			[]string{"spec.containers[0].securityContext: Invalid value"}, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"},
		{"init container's security context too", func(s *corev1.PodSpec) {
			s.InitContainers[0].SecurityContext = &corev1.SecurityContext{RunAsGroup: ptr[int64](-5), ProcMount: ptr("Unmasked")}
		}, []string{"spec.initContainers[0].securityContext.runAsGroup: Invalid value", "spec.initContainers[0].securityContext.procMount: Invalid value"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := nginxPod()
			c.mutate(p.Spec)
			errs := validation.Pod(p)
			expectErrors(t, errs, c.want)
			if c.detail != "" && !strings.Contains(errs[0].Error(), c.detail) {
				t.Errorf("error %q, want it to say %q", errs[0].Error(), c.detail)
			}
		})
	}
}

func TestSysctlNames(t *testing.T) {
	for _, c := range []struct {
		name, normal, ns string
		valid, pattern   bool
	}{
		{"net.ipv4.tcp_rmem", "net.ipv4.tcp_rmem", "net", true, true},
		{"net/ipv4/conf/eno2.100/rp_filter", "net.ipv4.conf.eno2/100.rp_filter", "net", true, true},
		{"kernel.shm_rmid_forced", "kernel.shm_rmid_forced", "ipc", true, true},
		{"kernel.sem", "kernel.sem", "ipc", true, true},
		{"fs.mqueue.msg_max", "fs.mqueue.msg_max", "ipc", true, true},
		{"kernel.hostname", "kernel.hostname", "", true, true},
		{"net.core.*", "net.core.*", "net", false, true},
		{"net.*.x", "net.*.x", "net", false, false},
		{"Net.x", "Net.x", "", false, false},
	} {
		if got := validation.NormalizeSysctlName(c.name); got != c.normal {
			t.Errorf("NormalizeSysctlName(%q) = %q, want %q", c.name, got, c.normal)
		}
		if got := validation.SysctlNamespace(c.name); got != c.ns {
			t.Errorf("SysctlNamespace(%q) = %q, want %q", c.name, got, c.ns)
		}
		if got := validation.IsValidSysctlName(c.name); got != c.valid {
			t.Errorf("IsValidSysctlName(%q) = %v", c.name, got)
		}
		if got := validation.IsValidSysctlPattern(c.name); got != c.pattern {
			t.Errorf("IsValidSysctlPattern(%q) = %v", c.name, got)
		}
	}
}
