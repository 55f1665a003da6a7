package agent

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/validation"
	corev1 "skiff.dev/proto/core/v1"
)

// Security contexts, as the kubelet turns them into CRI settings
// (pkg/kubelet/kuberuntime/security_context.go, pkg/securitycontext): the
// container's effective context is its own with the pod's runAsUser,
// runAsGroup, runAsNonRoot and seccompProfile where it sets none; the
// sandbox gets the pod's ids, groups, sysctls and the runtime's default
// seccomp profile. Sysctls outside the safe set are refused before the
// pod starts (the kubelet's sysctl admission) unless the node allows them.

// DefaultSeccompProfileRoot holds the Localhost seccomp profiles a pod's
// localhostProfile names (the kubelet's <root-dir>/seccomp).
const DefaultSeccompProfileRoot = "/var/lib/skiff/seccomp"

// effectiveSecurityContext is the container's security context with the
// pod's user, group, runAsNonRoot and seccomp profile where the
// container sets none (Kubernetes' DetermineEffectiveSecurityContext). It
// is never nil.
func effectiveSecurityContext(p *corev1.Pod, c *corev1.Container) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{}
	if c.GetSecurityContext() != nil {
		sc = proto.Clone(c.GetSecurityContext()).(*corev1.SecurityContext)
	}
	psc := p.GetSpec().GetSecurityContext()
	if psc == nil {
		return sc
	}
	if sc.RunAsUser == nil && psc.RunAsUser != nil {
		sc.RunAsUser = proto.Int64(psc.GetRunAsUser())
	}
	if sc.RunAsGroup == nil && psc.RunAsGroup != nil {
		sc.RunAsGroup = proto.Int64(psc.GetRunAsGroup())
	}
	if sc.RunAsNonRoot == nil && psc.RunAsNonRoot != nil {
		sc.RunAsNonRoot = proto.Bool(psc.GetRunAsNonRoot())
	}
	if sc.SeccompProfile == nil && psc.SeccompProfile != nil {
		sc.SeccompProfile = proto.Clone(psc.SeccompProfile).(*corev1.SeccompProfile)
	}
	return sc
}

// imageUser is the user an image runs as, from the runtime's ImageStatus:
// a uid, or a user name that is not a number; neither means root.
type imageUser struct {
	uid  *int64
	name string
	// known: the image was asked (needsImageUser).
	known bool
}

// needsImageUser reports whether the container's config depends on its
// image's user: runAsNonRoot without a runAsUser must check it, and a
// runAsGroup without a runAsUser needs a user for the runtime. Otherwise
// the runtime applies the image's user itself and the agent spares the
// call (the kubelet asks every time).
func needsImageUser(p *corev1.Pod, c *corev1.Container) bool {
	sc := effectiveSecurityContext(p, c)
	return sc.RunAsUser == nil && (sc.GetRunAsNonRoot() || sc.RunAsGroup != nil)
}

// imageUserOf asks the runtime for the user of the image (its id) when
// the container's config depends on it.
func (a *Agent) imageUserOf(ctx context.Context, p *corev1.Pod, c *corev1.Container, imageRef string) (imageUser, error) {
	if !needsImageUser(p, c) {
		return imageUser{}, nil
	}
	img, err := a.rt.ImageStatus(ctx, imageRef)
	if err != nil {
		return imageUser{}, fmt.Errorf("image status of %q: %w", c.GetImage(), err)
	}
	return userOfImage(img), nil
}

// userOfImage reads an image's user as the kubelet's getImageUser: the
// uid, else the user name; neither is root.
func userOfImage(img *runtimeapi.Image) imageUser {
	switch {
	case img.GetUid() != nil:
		return imageUser{uid: proto.Int64(img.GetUid().GetValue()), known: true}
	case img.GetUsername() != "":
		return imageUser{name: img.GetUsername(), known: true}
	}
	return imageUser{uid: proto.Int64(0), known: true}
}

// podDesc names a pod in the kubelet's messages: name_namespace(uid).
func podDesc(p *corev1.Pod) string {
	m := p.GetMetadata()
	return fmt.Sprintf("%s_%s(%s)", m.GetName(), m.GetNamespace(), m.GetUid())
}

// verifyRunAsNonRoot refuses a container that would run as root while
// its effective security context says runAsNonRoot, with the kubelet's
// messages (the container then waits in CreateContainerConfigError).
func verifyRunAsNonRoot(p *corev1.Pod, c *corev1.Container, u imageUser) error {
	sc := effectiveSecurityContext(p, c)
	if !sc.GetRunAsNonRoot() {
		return nil
	}
	if sc.RunAsUser != nil {
		if sc.GetRunAsUser() == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podDesc(p), c.GetName())
		}
		return nil
	}
	switch {
	case u.uid == nil && u.name != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)",
			u.name, podDesc(p), c.GetName())
	case u.uid != nil && *u.uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podDesc(p), c.GetName())
	case u.uid != nil && (*u.uid < 0 || *u.uid > math.MaxInt32):
		return fmt.Errorf("container has runAsNonRoot and image has an invalid user id (%d). (Must be 1-(%d)): must be between 0 and %d, inclusive (pod: %q, container: %s)",
			*u.uid, math.MaxInt32, math.MaxInt32, podDesc(p), c.GetName())
	}
	return nil
}

// The paths a container's /proc and /sys hide (masked) or show read-only,
// with procMount Default: the kubelet's (and Docker's) lists.
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
		"/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// containerSecurity is the CRI security context of container c of pod p
// (the kubelet's determineEffectiveSecurityContext): ids (the image's user
// when u was asked and no runAsUser is set), capabilities as given,
// privileged, read-only root, no_new_privs when allowPrivilegeEscalation
// is false, seccomp, masked and read-only /proc paths, and the groups:
// fsGroup, then supplementalGroups.
func containerSecurity(p *corev1.Pod, c *corev1.Container, u imageUser, seccompRoot string) (*runtimeapi.LinuxContainerSecurityContext, error) {
	sc := effectiveSecurityContext(p, c)
	out := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions: namespaceOptions(p),
		Privileged:       sc.GetPrivileged(),
		ReadonlyRootfs:   sc.GetReadOnlyRootFilesystem(),
		NoNewPrivs:       sc.AllowPrivilegeEscalation != nil && !sc.GetAllowPrivilegeEscalation(),
		MaskedPaths:      slices.Clone(defaultMaskedPaths),
		ReadonlyPaths:    slices.Clone(defaultReadonlyPaths),
	}
	if sc.GetProcMount() == "Unmasked" {
		out.MaskedPaths, out.ReadonlyPaths = []string{}, []string{}
	}
	if caps := sc.GetCapabilities(); caps != nil {
		out.Capabilities = &runtimeapi.Capability{
			AddCapabilities: slices.Clone(caps.GetAdd()), DropCapabilities: slices.Clone(caps.GetDrop()),
		}
	}
	if sc.RunAsUser != nil {
		out.RunAsUser = &runtimeapi.Int64Value{Value: sc.GetRunAsUser()}
	} else if u.known {
		if u.uid != nil {
			out.RunAsUser = &runtimeapi.Int64Value{Value: *u.uid}
		}
		out.RunAsUsername = u.name
	}
	if sc.RunAsGroup != nil {
		out.RunAsGroup = &runtimeapi.Int64Value{Value: sc.GetRunAsGroup()}
	}
	out.SupplementalGroups = podGroups(p)
	seccomp, err := seccompProfile(sc.GetSeccompProfile(), seccompRoot)
	if err != nil {
		return nil, err
	}
	out.Seccomp = seccomp
	return out, nil
}

// podGroups are the supplemental groups of the pod's processes: fsGroup,
// then supplementalGroups.
func podGroups(p *corev1.Pod) []int64 {
	psc := p.GetSpec().GetSecurityContext()
	var groups []int64
	if psc != nil && psc.FsGroup != nil {
		groups = append(groups, psc.GetFsGroup())
	}
	return append(groups, psc.GetSupplementalGroups()...)
}

// seccompProfile is the CRI profile of a seccompProfile field: a
// Localhost profile is a file under root; none is Unconfined (the
// kubelet without --seccomp-default).
func seccompProfile(sp *corev1.SeccompProfile, root string) (*runtimeapi.SecurityProfile, error) {
	switch sp.GetType() {
	case validation.SeccompProfileRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case validation.SeccompProfileLocalhost:
		if sp.GetLocalhostProfile() == "" {
			return nil, fmt.Errorf("localhostProfile must be set if seccompProfile type is Localhost")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(root, sp.GetLocalhostProfile())}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

// sandboxSecurity sets the sandbox's security from the pod, as the
// kubelet's generatePodSandboxLinuxConfig: privileged when a container
// is, the runtime's default seccomp profile (whatever the containers'),
// the pod's user and group, fsGroup and supplementalGroups, and the
// sysctls (by their dotted names).
func sandboxSecurity(p *corev1.Pod, lc *runtimeapi.LinuxPodSandboxConfig) {
	sc := lc.SecurityContext
	spec := p.GetSpec()
	for _, c := range slices.Concat(spec.GetInitContainers(), spec.GetContainers()) {
		if c.GetSecurityContext().GetPrivileged() {
			sc.Privileged = true
		}
	}
	sc.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	psc := spec.GetSecurityContext()
	if psc == nil {
		return
	}
	if psc.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: psc.GetRunAsUser()}
	}
	if psc.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: psc.GetRunAsGroup()}
	}
	sc.SupplementalGroups = podGroups(p)
	if len(psc.GetSysctls()) > 0 {
		lc.Sysctls = map[string]string{}
		for _, s := range psc.GetSysctls() {
			lc.Sysctls[validation.NormalizeSysctlName(s.GetName())] = s.GetValue()
		}
	}
}

// Sysctl admission, as the kubelet's (pkg/kubelet/sysctl).
const reasonSysctlForbidden = "SysctlForbidden"

// safeSysctls are the kubelet's safe set: namespaced, and without effect
// on other pods of the node. (The kubelet drops the few a kernel older
// than 4.6 lacks; Skiff's nodes are newer.)
var safeSysctls = []string{
	"kernel.shm_rmid_forced",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_syncookies",
	"net.ipv4.ping_group_range",
	"net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_fin_timeout",
	"net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes",
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_wmem",
}

// checkSysctlPatterns checks --allowed-unsafe-sysctls: names or prefixes
// ending in "*", each of a namespaced sysctl, with the kubelet's errors.
func checkSysctlPatterns(patterns []string) error {
	for _, s := range patterns {
		if !validation.IsValidSysctlPattern(s) {
			return fmt.Errorf("sysctl %q must have at most 253 characters and match regex %s", s,
				`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\.\*|/\*)?$`)
		}
		s = validation.NormalizeSysctlName(s)
		if prefix, ok := strings.CutSuffix(s, "*"); ok {
			if validation.SysctlNamespace(prefix) == "" {
				return fmt.Errorf("the sysctls %q are not known to be namespaced", s)
			}
		} else if validation.SysctlNamespace(s) == "" {
			return fmt.Errorf("the sysctl %q are not known to be namespaced", s)
		}
	}
	return nil
}

// forbiddenSysctl is why the pod's sysctls may not run on this node (""
// when they may): one outside the safe set and unsafe, or a net or ipc
// one in a pod sharing the node's namespace of it.
func forbiddenSysctl(p *corev1.Pod, unsafe []string) string {
	spec := p.GetSpec()
	for _, s := range spec.GetSecurityContext().GetSysctls() {
		name := validation.NormalizeSysctlName(s.GetName())
		allowed := slices.Contains(safeSysctls, name) || slices.Contains(unsafe, name) || slices.ContainsFunc(unsafe, func(pat string) bool {
			prefix, ok := strings.CutSuffix(validation.NormalizeSysctlName(pat), "*")
			return ok && strings.HasPrefix(name, prefix)
		})
		if !allowed {
			return fmt.Sprintf("%q not allowlisted", name)
		}
		switch ns := validation.SysctlNamespace(name); {
		case ns == "net" && spec.GetHostNetwork(), ns == "ipc" && spec.GetHostIpc():
			return fmt.Sprintf("%q not allowed with host %s enabled", name, ns)
		}
	}
	return ""
}

// admitPod is the agent's admission of a pod not yet finished: a reason
// and message to reject it with, or "" to run it.
func (a *Agent) admitPod(p *corev1.Pod) (reason, message string) {
	if ph := p.GetStatus().GetPhase(); ph == "Succeeded" || ph == "Failed" {
		return "", ""
	}
	if why := forbiddenSysctl(p, a.cfg.AllowedUnsafeSysctls); why != "" {
		return reasonSysctlForbidden, "forbidden sysctl: " + why
	}
	return "", ""
}
