package validation

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strings"

	"skiff.dev/internal/field"
	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

var (
	pullPolicies               = []string{"Always", "IfNotPresent", "Never"}
	terminationMessagePolicies = []string{"File", "FallbackToLogsOnError"}
	portProtocols              = []string{"TCP", "UDP", "SCTP"}
	httpSchemes                = []string{"HTTP", "HTTPS"}
	// envFieldPaths are the pod fields an env var's fieldRef may read.
	envFieldPaths = []string{
		"metadata.name", "metadata.namespace", "metadata.uid",
		"spec.nodeName", "spec.serviceAccountName",
		"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
	}
	// envResourceFields are the container resources a resourceFieldRef may read.
	envResourceFields = []string{
		"limits.cpu", "limits.ephemeral-storage", "limits.memory",
		"requests.cpu", "requests.ephemeral-storage", "requests.memory",
	}
	cpuDivisors = []string{"1m", "1"}
	// memoryDivisors are Kubernetes' but for 1E and 1Ei, which are above
	// the largest quantity (package quantity) and so never parse.
	memoryDivisors = []string{"1", "1k", "1M", "1G", "1T", "1P", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi"}
)

// containers validates the app containers (at least one) and the init
// containers of a pod spec. Names are unique across both lists; a clash is
// reported on the init container.
func containers(spec *corev1.PodSpec, vols map[string]bool, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	cp := specPath.Child("containers")
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(cp, ""))
	}
	hostPorts := map[string]bool{}
	for i, c := range spec.Containers {
		errs = append(errs, container(c, cp.Index(i), names, vols, spec.HostNetwork, false)...)
		errs = append(errs, uniqueHostPorts(c, cp.Index(i), hostPorts)...)
		errs = append(errs, containerLifecycle(c, spec.TerminationGracePeriodSeconds, cp.Index(i))...)
	}
	ip := specPath.Child("initContainers")
	for i, c := range spec.InitContainers {
		errs = append(errs, container(c, ip.Index(i), names, vols, spec.HostNetwork, true)...)
		errs = append(errs, initContainerLifecycle(c, spec.TerminationGracePeriodSeconds, ip.Index(i))...)
	}
	return errs
}

func container(c *corev1.Container, p *field.Path, names, vols map[string]bool, hostNetwork, isInit bool) field.ErrorList {
	if c == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	np := p.Child("name")
	if c.Name == "" {
		errs = append(errs, field.Required(np, ""))
	} else {
		errs = append(errs, invalidEach(np, c.Name, isDNS1123Label(c.Name))...)
		if names[c.Name] {
			errs = append(errs, field.Duplicate(np, c.Name))
		}
		names[c.Name] = true
	}
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	} else if strings.TrimSpace(c.Image) != c.Image {
		errs = append(errs, field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	errs = append(errs, containerPorts(c.Ports, p.Child("ports"), hostNetwork)...)
	errs = append(errs, envFrom(c.EnvFrom, p.Child("envFrom"))...)
	errs = append(errs, env(c.Env, p.Child("env"))...)
	errs = append(errs, volumeMounts(c.VolumeMounts, vols, p.Child("volumeMounts"))...)
	errs = append(errs, resources(c.Resources, p.Child("resources"))...)
	errs = append(errs, containerProbes(c, p, isInit)...)
	errs = append(errs, containerRestartPolicy(c, p.Child("restartPolicy"), isInit)...)
	errs = append(errs, supported(c.ImagePullPolicy, pullPolicies, p.Child("imagePullPolicy"))...)
	errs = append(errs, supported(c.TerminationMessagePolicy, terminationMessagePolicies, p.Child("terminationMessagePolicy"))...)
	errs = append(errs, securityContext(c.SecurityContext, p.Child("securityContext"))...)
	errs = append(errs, containerSecurity(c.SecurityContext, p.Child("securityContext"))...)
	return errs
}

func containerPorts(ports []*corev1.ContainerPort, p *field.Path, hostNetwork bool) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		ip := p.Index(i)
		if port == nil {
			errs = append(errs, field.Required(ip, ""))
			continue
		}
		if port.Name != "" {
			if msgs := isValidPortName(port.Name); len(msgs) > 0 {
				errs = append(errs, invalidEach(ip.Child("name"), port.Name, msgs)...)
			} else if names[port.Name] {
				errs = append(errs, field.Duplicate(ip.Child("name"), port.Name))
			}
			names[port.Name] = true
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(ip.Child("containerPort"), ""))
		} else {
			for _, msg := range isValidPortNum(int64(port.ContainerPort)) {
				errs = append(errs, field.Invalid(ip.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range isValidPortNum(int64(port.HostPort)) {
				errs = append(errs, field.Invalid(ip.Child("hostPort"), port.HostPort, msg))
			}
		}
		if hostNetwork && port.HostPort != port.ContainerPort {
			errs = append(errs, field.Invalid(ip.Child("hostPort"), port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
		}
		errs = append(errs, supported(port.Protocol, portProtocols, ip.Child("protocol"))...)
		if port.HostIp != "" {
			if _, err := netip.ParseAddr(port.HostIp); err != nil {
				errs = append(errs, field.Invalid(ip.Child("hostIP"), port.HostIp, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
			}
		}
	}
	return errs
}

// uniqueHostPorts reports a host port (with protocol and host IP) that an
// earlier container of the pod already claims.
func uniqueHostPorts(c *corev1.Container, p *field.Path, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	for i, port := range c.GetPorts() {
		if port.GetHostPort() == 0 {
			continue
		}
		key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIp, port.HostPort)
		if seen[key] {
			errs = append(errs, field.Duplicate(p.Child("ports").Index(i).Child("hostPort"), key))
		}
		seen[key] = true
	}
	return errs
}

func envFrom(sources []*corev1.EnvFromSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range sources {
		ip := p.Index(i)
		if s.GetPrefix() != "" {
			errs = append(errs, invalidEach(ip.Child("prefix"), s.Prefix, isEnvVarName(s.Prefix))...)
		}
		n := 0
		for _, ref := range []struct {
			field, name string
			set         bool
		}{
			{"configMapRef", s.GetConfigMapRef().GetName(), s.GetConfigMapRef() != nil},
			{"secretRef", s.GetSecretRef().GetName(), s.GetSecretRef() != nil},
		} {
			if !ref.set {
				continue
			}
			n++
			if ref.name == "" {
				errs = append(errs, field.Required(ip.Child(ref.field, "name"), ""))
			} else {
				errs = append(errs, invalidEach(ip.Child(ref.field, "name"), ref.name, isDNS1123Subdomain(ref.name))...)
			}
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(ip, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Forbidden(ip, "may not have more than one field specified at a time"))
		}
	}
	return errs
}

func env(vars []*corev1.EnvVar, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		ip := p.Index(i)
		if ev == nil {
			errs = append(errs, field.Required(ip, ""))
			continue
		}
		if ev.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		} else {
			errs = append(errs, invalidEach(ip.Child("name"), ev.Name, isEnvVarName(ev.Name))...)
		}
		errs = append(errs, envVarSource(ev, ip.Child("valueFrom"))...)
	}
	return errs
}

// envVarSource checks that valueFrom, when set, names exactly one source
// and that value is then empty.
func envVarSource(ev *corev1.EnvVar, p *field.Path) field.ErrorList {
	src := ev.ValueFrom
	if src == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	if src.FieldRef != nil {
		n++
		errs = append(errs, objectFieldSelector(src.FieldRef, envFieldPaths, p.Child("fieldRef"))...)
	}
	if src.ResourceFieldRef != nil {
		n++
		errs = append(errs, resourceFieldSelector(src.ResourceFieldRef, p.Child("resourceFieldRef"))...)
	}
	if src.ConfigMapKeyRef != nil {
		n++
		errs = append(errs, keySelector(src.ConfigMapKeyRef.GetName(), src.ConfigMapKeyRef.GetKey(), p.Child("configMapKeyRef"))...)
	}
	if src.SecretKeyRef != nil {
		n++
		errs = append(errs, keySelector(src.SecretKeyRef.GetName(), src.SecretKeyRef.GetKey(), p.Child("secretKeyRef"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(p, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(p, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(p, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// objectFieldSelector checks a downward API field: apiVersion v1 and one
// of the allowed paths, or one label or annotation by subscript.
func objectFieldSelector(fs *corev1.ObjectFieldSelector, allowed []string, p *field.Path) field.ErrorList {
	switch {
	case fs.ApiVersion == "":
		return field.ErrorList{field.Required(p.Child("apiVersion"), "")}
	case fs.ApiVersion != "v1":
		return field.ErrorList{field.NotSupported(p.Child("apiVersion"), fs.ApiVersion, []string{"v1"})}
	case fs.FieldPath == "":
		return field.ErrorList{field.Required(p.Child("fieldPath"), "")}
	}
	fp := p.Child("fieldPath")
	if base, key, ok := splitSubscript(fs.FieldPath); ok {
		switch base {
		case "metadata.annotations":
			return invalidEach(fp, key, isQualifiedName(strings.ToLower(key)))
		case "metadata.labels":
			return invalidEach(fp, key, isQualifiedName(key))
		}
		return field.ErrorList{field.Invalid(fp, base, "does not support subscript")}
	}
	if !slices.Contains(allowed, fs.FieldPath) {
		return field.ErrorList{field.NotSupported(fp, fs.FieldPath, allowed)}
	}
	return nil
}

// splitSubscript splits "metadata.labels['app']" into "metadata.labels"
// and "app".
func splitSubscript(fieldPath string) (base, key string, ok bool) {
	s, ok := strings.CutSuffix(fieldPath, "']")
	if !ok {
		return fieldPath, "", false
	}
	base, key, ok = strings.Cut(s, "['")
	if !ok || base == "" {
		return fieldPath, "", false
	}
	return base, key, true
}

func resourceFieldSelector(rf *corev1.ResourceFieldSelector, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if rf.Resource == "" {
		errs = append(errs, field.Required(p.Child("resource"), ""))
	} else if !slices.Contains(envResourceFields, rf.Resource) {
		errs = append(errs, field.NotSupported(p.Child("resource"), rf.Resource, envResourceFields))
	}
	if rf.Divisor == "" {
		return errs
	}
	dp := p.Child("divisor")
	d, err := parseQuantity(rf.Divisor, dp)
	if err != nil {
		return append(errs, err)
	}
	switch {
	case strings.HasSuffix(rf.Resource, ".cpu"):
		if !quantityIn(d, cpuDivisors) {
			errs = append(errs, field.Invalid(dp, rf.Divisor, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	case strings.HasSuffix(rf.Resource, ".memory"), strings.HasSuffix(rf.Resource, ".ephemeral-storage"):
		if !quantityIn(d, memoryDivisors) {
			errs = append(errs, field.Invalid(dp, rf.Divisor, "only divisor's values "+strings.Join(memoryDivisors, ", ")+
				" are supported with the "+rf.Resource[strings.IndexByte(rf.Resource, '.')+1:]+" resource"))
		}
	}
	return errs
}

func quantityIn(q quantity.Quantity, allowed []string) bool {
	return slices.ContainsFunc(allowed, func(a string) bool { return quantity.MustParse(a).Cmp(q) == 0 })
}

// keySelector validates a configMapKeyRef's or secretKeyRef's name and key.
func keySelector(name, key string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	if key == "" {
		errs = append(errs, field.Required(p.Child("key"), ""))
	} else {
		errs = append(errs, invalidEach(p.Child("key"), key, isConfigMapKey(key))...)
	}
	return errs
}

func volumeMounts(mounts []*corev1.VolumeMount, vols map[string]bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	mountPoints := map[string]bool{}
	for i, m := range mounts {
		ip := p.Index(i)
		if m == nil {
			errs = append(errs, field.Required(ip, ""))
			continue
		}
		if m.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		} else if !vols[m.Name] {
			errs = append(errs, field.Invalid(ip.Child("name"), m.Name, "must be the name of a volume declared in the pod's `volumes`"))
		}
		mp := ip.Child("mountPath")
		switch {
		case m.MountPath == "":
			errs = append(errs, field.Required(mp, ""))
		case !strings.HasPrefix(m.MountPath, "/"):
			errs = append(errs, field.Invalid(mp, m.MountPath, "must be an absolute path"))
		case mountPoints[path.Clean(m.MountPath)]:
			errs = append(errs, field.Invalid(mp, m.MountPath, "must be unique"))
		}
		mountPoints[path.Clean(m.MountPath)] = true
		if m.SubPath != "" {
			errs = append(errs, localDescendingPath(m.SubPath, ip.Child("subPath"))...)
		}
	}
	return errs
}

// localDescendingPath checks a path that must stay below its base
// directory: relative, without "..".
func localDescendingPath(target string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.HasPrefix(target, "/") {
		errs = append(errs, field.Invalid(p, target, "must be a relative path"))
	}
	return append(errs, noBacksteps(target, p)...)
}

func noBacksteps(target string, p *field.Path) field.ErrorList {
	if slices.Contains(strings.Split(target, "/"), "..") {
		return field.ErrorList{field.Invalid(p, target, "must not contain '..'")}
	}
	return nil
}

// resources validates requests and limits: known or domain-prefixed
// resource names, well-formed non-negative quantities, and no request above
// its limit (nor, for resources that cannot be overcommitted, different
// from it).
func resources(r *corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	limits := map[string]quantity.Quantity{}
	lp := p.Child("limits")
	for _, name := range sortedKeys(r.Limits) {
		kp := lp.Key(name)
		errs = append(errs, containerResourceName(name, kp)...)
		q, qErrs := resourceQuantity(name, r.Limits[name], kp)
		errs = append(errs, qErrs...)
		if len(qErrs) == 0 {
			limits[name] = q
		}
	}
	rp := p.Child("requests")
	for _, name := range sortedKeys(r.Requests) {
		kp := rp.Key(name)
		errs = append(errs, containerResourceName(name, kp)...)
		q, qErrs := resourceQuantity(name, r.Requests[name], kp)
		errs = append(errs, qErrs...)
		l, limited := limits[name]
		if len(qErrs) > 0 || !limited {
			continue
		}
		if overcommitAllowed(name) {
			if q.Cmp(l) > 0 {
				errs = append(errs, field.Invalid(kp, r.Requests[name], fmt.Sprintf("must be less than or equal to %s limit of %s", name, r.Limits[name])))
			}
		} else if q.Cmp(l) != 0 {
			errs = append(errs, field.Invalid(kp, r.Requests[name], fmt.Sprintf("must be equal to %s limit of %s", name, r.Limits[name])))
		}
	}
	return errs
}

// containerResourceName accepts cpu, memory, ephemeral-storage,
// hugepages-<size> and any domain-prefixed (extended) resource.
func containerResourceName(name string, p *field.Path) field.ErrorList {
	errs := invalidEach(p, name, isQualifiedName(name))
	if len(errs) == 0 && !strings.Contains(name, "/") && !standardContainerResource(name) {
		errs = append(errs, field.Invalid(p, name, "must be a standard resource for containers"))
	}
	return errs
}

func standardContainerResource(name string) bool {
	switch name {
	case "cpu", "memory", "ephemeral-storage":
		return true
	}
	return strings.HasPrefix(name, "hugepages-")
}

// nativeResource: a resource Kubernetes itself defines (no domain, or a
// kubernetes.io domain), as opposed to an extended one (a device plugin's).
func nativeResource(name string) bool {
	return !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/")
}

func overcommitAllowed(name string) bool {
	return nativeResource(name) && !strings.HasPrefix(name, "hugepages-")
}

// resourceQuantity parses one quantity of a resource list, which is valid
// when well-formed, non-negative and, for extended resources, whole. The
// quantity is meaningful only without errors.
func resourceQuantity(name, value string, p *field.Path) (quantity.Quantity, field.ErrorList) {
	q, err := parseQuantity(value, p)
	switch {
	case err != nil:
		return q, field.ErrorList{err}
	case q.Sign() < 0:
		return q, field.ErrorList{field.Invalid(p, value, "must be greater than or equal to 0")}
	case !nativeResource(name) && q.MilliValue()%1000 != 0:
		return q, field.ErrorList{field.Invalid(p, value, "must be an integer")}
	}
	return q, nil
}

// probe validates a probe: exactly one handler, a non-negative initial
// delay, positive timeout, period and thresholds, a success threshold of 1
// where only one success makes sense (liveness and startup), and a
// termination grace period only where it applies (not on readiness).
func probe(pr *corev1.Probe, p *field.Path, readiness bool) field.ErrorList {
	if pr == nil {
		return nil
	}
	errs := probeHandler(pr, p)
	errs = append(errs, nonNegative(int64(pr.InitialDelaySeconds), p.Child("initialDelaySeconds"))...)
	errs = append(errs, positive(int64(pr.TimeoutSeconds), p.Child("timeoutSeconds"))...)
	errs = append(errs, positive(int64(pr.PeriodSeconds), p.Child("periodSeconds"))...)
	errs = append(errs, positive(int64(pr.SuccessThreshold), p.Child("successThreshold"))...)
	errs = append(errs, positive(int64(pr.FailureThreshold), p.Child("failureThreshold"))...)
	if !readiness && pr.SuccessThreshold > 1 {
		errs = append(errs, field.Invalid(p.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
	}
	if g := pr.TerminationGracePeriodSeconds; g != nil {
		if readiness {
			errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g, "must not be set for readinessProbes"))
		} else {
			errs = append(errs, positive(*g, p.Child("terminationGracePeriodSeconds"))...)
		}
	}
	return errs
}

func probeHandler(pr *corev1.Probe, p *field.Path) field.ErrorList {
	return oneHandler(p,
		handler{"exec", pr.Exec != nil, func(p *field.Path) field.ErrorList { return execAction(pr.Exec, p) }},
		handler{"httpGet", pr.HttpGet != nil, func(p *field.Path) field.ErrorList { return httpGetAction(pr.HttpGet, p) }},
		handler{"tcpSocket", pr.TcpSocket != nil, func(p *field.Path) field.ErrorList { return portNumOrName(pr.TcpSocket.Port, p.Child("port")) }},
		handler{"grpc", pr.Grpc != nil, func(p *field.Path) field.ErrorList { return grpcAction(pr.Grpc, p) }})
}

// handler is one action a probe or a lifecycle hook may take: its field
// name, whether it is given, and its own checks (at its path).
type handler struct {
	name  string
	set   bool
	check func(*field.Path) field.ErrorList
}

// oneHandler checks that exactly one of the handlers is given (Kubernetes'
// messages) and checks the first one given.
func oneHandler(p *field.Path, hs ...handler) field.ErrorList {
	var errs field.ErrorList
	n := 0
	for _, h := range hs {
		if !h.set {
			continue
		}
		if n++; n > 1 {
			errs = append(errs, field.Forbidden(p.Child(h.name), "may not specify more than 1 handler type"))
			continue
		}
		errs = append(errs, h.check(p.Child(h.name))...)
	}
	if n == 0 {
		errs = append(errs, field.Required(p, "must specify a handler type"))
	}
	return errs
}

func execAction(e *corev1.ExecAction, p *field.Path) field.ErrorList {
	if len(e.Command) == 0 {
		return field.ErrorList{field.Required(p.Child("command"), "")}
	}
	return nil
}

// portNumOrName checks a port given as a number (1-65535) or as the name
// of a container port.
func portNumOrName(port *metav1.IntOrString, p *field.Path) field.ErrorList {
	switch v := port.GetValue().(type) {
	case *metav1.IntOrString_IntVal:
		var errs field.ErrorList
		for _, msg := range isValidPortNum(int64(v.IntVal)) {
			errs = append(errs, field.Invalid(p, v.IntVal, msg))
		}
		return errs
	case *metav1.IntOrString_StrVal:
		return invalidEach(p, v.StrVal, isValidPortName(v.StrVal))
	}
	return field.ErrorList{field.Required(p, "")}
}
