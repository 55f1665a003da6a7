package validation

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
)

// Security contexts, beyond the user and group ids (pod.go): Kubernetes'
// rules for seccomp profiles, sysctls, fsGroupChangePolicy, procMount and
// allowPrivilegeEscalation. Capability names are not checked, as
// Kubernetes does not: the runtime refuses a name it does not know when
// the container is created.

// Seccomp profile types.
const (
	SeccompProfileRuntimeDefault = "RuntimeDefault"
	SeccompProfileLocalhost      = "Localhost"
	SeccompProfileUnconfined     = "Unconfined"
)

var (
	seccompProfileTypes    = []string{SeccompProfileLocalhost, SeccompProfileRuntimeDefault, SeccompProfileUnconfined}
	fsGroupChangePolicies  = []string{"Always", "OnRootMismatch"}
	procMountTypes         = []string{"Default", "Unmasked"}
	sysctlSegment          = `[a-z0-9]([-_a-z0-9]*[a-z0-9])?`
	sysctlNameRegexp       = `^(` + sysctlSegment + `[\./])*` + sysctlSegment + `$`
	sysctlNameRE           = regexp.MustCompile(sysctlNameRegexp)
	sysctlPatternRE        = regexp.MustCompile(`^(` + sysctlSegment + `[\./])*(` + sysctlSegment + `|\*)$`)
	sysctlNameDetail       = fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlNameRegexp)
	ipcSysctlPrefixes      = []string{"kernel.shm", "kernel.msg", "fs.mqueue."}
	netSysctlPrefix        = "net."
	ipcSysctlExact         = "kernel.sem"
	privilegeEscalationCap = "CAP_SYS_ADMIN"
)

const sysctlMaxLength = 253

// IsValidSysctlName reports whether name is a sysctl name as Kubernetes
// accepts it: dot- or slash-separated segments, at most 253 characters.
func IsValidSysctlName(name string) bool {
	return len(name) <= sysctlMaxLength && sysctlNameRE.MatchString(name)
}

// IsValidSysctlPattern reports whether s is a sysctl name or a prefix
// pattern ending in "*" (net.core.*), as the kubelet's
// --allowed-unsafe-sysctls takes.
func IsValidSysctlPattern(s string) bool {
	return len(s) <= sysctlMaxLength && sysctlPatternRE.MatchString(s)
}

// NormalizeSysctlName turns a slash-separated name (net/ipv4/tcp_rmem)
// into the dotted one, as sysctl.d(5) does: when the first separator is
// a slash, slashes and dots swap.
func NormalizeSysctlName(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '/':
			return '.'
		case '.':
			return '/'
		}
		return r
	}, name)
}

// SysctlNamespace is the kernel namespace a sysctl belongs to: "net",
// "ipc", or "" when it is not known to be namespaced.
func SysctlNamespace(name string) string {
	name = NormalizeSysctlName(name)
	switch {
	case strings.HasPrefix(name, netSysctlPrefix):
		return "net"
	case name == ipcSysctlExact:
		return "ipc"
	}
	for _, p := range ipcSysctlPrefixes {
		if strings.HasPrefix(name, p) {
			return "ipc"
		}
	}
	return ""
}

// podSecurity checks the pod-level security context's fields beyond ids:
// supplementalGroups, fsGroupChangePolicy, seccompProfile and sysctls.
func podSecurity(spec *corev1.PodSpec, p *field.Path) field.ErrorList {
	sc := spec.GetSecurityContext()
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	for i, g := range sc.SupplementalGroups {
		errs = append(errs, idRange(&g, p.Child("supplementalGroups").Index(i))...)
	}
	if sc.FsGroupChangePolicy != nil {
		v := *sc.FsGroupChangePolicy
		if !slices.Contains(fsGroupChangePolicies, v) {
			errs = append(errs, field.NotSupported(p.Child("fsGroupChangePolicy"), v, fsGroupChangePolicies))
		}
	}
	errs = append(errs, seccompProfile(sc.SeccompProfile, p.Child("seccompProfile"))...)
	names := map[string]bool{}
	for i, s := range sc.Sysctls {
		np := p.Child("sysctls").Index(i).Child("name")
		switch name := s.GetName(); {
		case name == "":
			errs = append(errs, field.Required(np, ""))
		case !IsValidSysctlName(name):
			errs = append(errs, field.Invalid(np, name, sysctlNameDetail))
		case names[name]:
			errs = append(errs, field.Duplicate(np, name))
		}
		switch SysctlNamespace(s.GetName()) {
		case "net":
			if spec.HostNetwork {
				errs = append(errs, field.Invalid(np, s.GetName(), "may not be specified when 'hostNetwork' is true"))
			}
		case "ipc":
			if spec.HostIpc {
				errs = append(errs, field.Invalid(np, s.GetName(), "may not be specified when 'hostIPC' is true"))
			}
		}
		names[s.GetName()] = true
	}
	return errs
}

// containerSecurity checks a container's security context beyond ids and
// the privileged escalation rule of securityContext: procMount,
// seccompProfile and CAP_SYS_ADMIN without privilege escalation.
func containerSecurity(sc *corev1.SecurityContext, p *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.ProcMount != nil {
		v := *sc.ProcMount
		if !slices.Contains(procMountTypes, v) {
			errs = append(errs, field.NotSupported(p.Child("procMount"), v, procMountTypes))
		} else if v == "Unmasked" {
			// Skiff has no user namespaces: every pod uses the host's
			// (hostUsers true in Kubernetes' terms).
			errs = append(errs, field.Invalid(p.Child("procMount"), v, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	errs = append(errs, seccompProfile(sc.SeccompProfile, p.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		for _, c := range sc.GetCapabilities().GetAdd() {
			if c == privilegeEscalationCap {
				errs = append(errs, field.Invalid(p, "allowPrivilegeEscalation: false, capabilities.add: "+c,
					"cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
			}
		}
	}
	return errs
}

func seccompProfile(sp *corev1.SeccompProfile, p *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch t := sp.GetType(); {
	case t == "":
		errs = append(errs, field.Required(p.Child("type"), "type is required when seccompProfile is set"))
	case !slices.Contains(seccompProfileTypes, t):
		errs = append(errs, field.NotSupported(p.Child("type"), t, seccompProfileTypes))
	}
	lp := p.Child("localhostProfile")
	if sp.GetType() == SeccompProfileLocalhost {
		switch {
		case sp.LocalhostProfile == nil:
			errs = append(errs, field.Required(lp, "must be set when seccomp type is Localhost"))
		default:
			v := *sp.LocalhostProfile
			if path.IsAbs(v) {
				errs = append(errs, field.Invalid(lp, v, "must be a relative path"))
			}
			if slices.Contains(strings.Split(v, "/"), "..") {
				errs = append(errs, field.Invalid(lp, v, "must not contain '..'"))
			}
		}
	} else if sp.LocalhostProfile != nil {
		errs = append(errs, field.Invalid(lp, *sp.LocalhostProfile, "can only be set when seccomp type is Localhost"))
	}
	return errs
}
