package defaults

import (
	"strings"

	corev1 "skiff.dev/proto/core/v1"
)

// Values Kubernetes uses when a pod leaves a field empty.
const (
	DefaultSchedulerName                 = "default-scheduler"
	DefaultTerminationGracePeriodSeconds = 30
	DefaultTerminationMessagePath        = "/dev/termination-log"
	// DefaultConfigMapVolumeMode is 0644, the mode of the files of configMap,
	// secret, downwardAPI and projected volumes that set none.
	DefaultConfigMapVolumeMode = 0o644
	// DefaultTokenExpirationSeconds is a service-account token projection's
	// lifetime when it asks for none: an hour.
	DefaultTokenExpirationSeconds = 3600
)

// Pod defaults a pod: its spec (see PodSpec), requests copied from limits
// where only a limit is set, priority 0 and status.phase Pending. The
// requests and priority defaults apply to pods only, not to pod templates,
// as in Kubernetes (where they come from pod defaulting and the Priority
// admission plugin).
func Pod(p *corev1.Pod) {
	if p == nil {
		return
	}
	if p.Spec == nil {
		p.Spec = &corev1.PodSpec{}
	}
	PodSpec(p.Spec)
	for _, c := range p.Spec.InitContainers {
		requestsFromLimits(c)
	}
	for _, c := range p.Spec.Containers {
		requestsFromLimits(c)
	}
	if p.Spec.Priority == nil {
		p.Spec.Priority = ptr[int32](0)
	}
	if p.Status == nil {
		p.Status = &corev1.PodStatus{}
	}
	if p.Status.Phase == "" {
		p.Status.Phase = "Pending"
	}
}

// PodSpec defaults a pod spec, whether of a pod or of a workload's pod
// template: restartPolicy Always, dnsPolicy ClusterFirst, schedulerName
// default-scheduler, terminationGracePeriodSeconds 30, enableServiceLinks
// true, hostPort = containerPort under hostNetwork, configMap volume mode
// 0644, and every container's defaults (see container).
func PodSpec(s *corev1.PodSpec) {
	if s == nil {
		return
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = "Always"
	}
	// serviceAccount is the deprecated name of serviceAccountName: it
	// gives it when it is empty, and reads back equal to it (Kubernetes'
	// v1 PodSpec conversion).
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = s.ServiceAccount
	}
	s.ServiceAccount = s.ServiceAccountName
	if s.DnsPolicy == "" {
		s.DnsPolicy = "ClusterFirst"
	}
	if s.SchedulerName == "" {
		s.SchedulerName = DefaultSchedulerName
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr[int64](DefaultTerminationGracePeriodSeconds)
	}
	if s.EnableServiceLinks == nil {
		s.EnableServiceLinks = ptr(true)
	}
	for _, v := range s.Volumes {
		if v == nil {
			continue
		}
		volumeSource(v)
	}
	for _, c := range s.InitContainers {
		container(c, s.HostNetwork)
	}
	for _, c := range s.Containers {
		container(c, s.HostNetwork)
	}
	for _, ec := range s.EphemeralContainers {
		ephemeralContainer(ec) // ephemeral.go
	}
}

// volumeSource defaults a volume's source as Kubernetes does: defaultMode
// 0644 of configMap, secret, downwardAPI and projected volumes, a token
// projection's expirationSeconds 3600, fieldRef apiVersion v1.
func volumeSource(v *corev1.Volume) {
	mode := func(m **int32) {
		if *m == nil {
			*m = ptr[int32](DefaultConfigMapVolumeMode)
		}
	}
	items := func(files []*corev1.DownwardAPIVolumeFile) {
		for _, f := range files {
			if fr := f.GetFieldRef(); fr != nil && fr.ApiVersion == "" {
				fr.ApiVersion = "v1"
			}
		}
	}
	if cm := v.ConfigMap; cm != nil {
		mode(&cm.DefaultMode)
	}
	if sec := v.Secret; sec != nil {
		mode(&sec.DefaultMode)
	}
	if d := v.DownwardApi; d != nil {
		mode(&d.DefaultMode)
		items(d.Items)
	}
	if p := v.Projected; p != nil {
		mode(&p.DefaultMode)
		for _, src := range p.Sources {
			if t := src.GetServiceAccountToken(); t != nil && t.ExpirationSeconds == nil {
				t.ExpirationSeconds = ptr[int64](DefaultTokenExpirationSeconds)
			}
			if d := src.GetDownwardApi(); d != nil {
				items(d.Items)
			}
		}
	}
}

// container defaults one container: imagePullPolicy from the image tag,
// the termination message path and policy, port protocol TCP, fieldRef
// apiVersion v1 and probe defaults.
func container(c *corev1.Container, hostNetwork bool) {
	if c == nil {
		return
	}
	if c.ImagePullPolicy == "" {
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = "Always"
		} else {
			c.ImagePullPolicy = "IfNotPresent"
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = DefaultTerminationMessagePath
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = "File"
	}
	for _, port := range c.Ports {
		if port == nil {
			continue
		}
		if port.Protocol == "" {
			port.Protocol = "TCP"
		}
		if hostNetwork && port.HostPort == 0 {
			port.HostPort = port.ContainerPort
		}
	}
	for _, e := range c.Env {
		if fr := e.GetValueFrom().GetFieldRef(); fr != nil && fr.ApiVersion == "" {
			fr.ApiVersion = "v1"
		}
	}
	probe(c.LivenessProbe)
	probe(c.ReadinessProbe)
	probe(c.StartupProbe)
	lifecycle(c.Lifecycle)
}

// imageTag returns the tag of an image reference, "latest" when it has
// neither tag nor digest (as the container runtime will pull :latest), and
// "" when it is pinned by digest only.
func imageTag(image string) string {
	name, digest, hasDigest := strings.Cut(image, "@")
	tag := ""
	// A tag follows the last ':' after the last '/'; an earlier ':' is a
	// registry port ("localhost:5000/app").
	if i := strings.LastIndexByte(name, ':'); i >= 0 && i > strings.LastIndexByte(name, '/') {
		tag = name[i+1:]
	}
	if tag == "" && (!hasDigest || digest == "") {
		return "latest"
	}
	return tag
}

func probe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	httpGetAction(p.HttpGet)
	grpcAction(p.Grpc)
}

// requestsFromLimits copies each limit without a matching request into
// the requests, so a container that sets only limits is scheduled (and
// classed Guaranteed) by what it may use.
func requestsFromLimits(c *corev1.Container) {
	if c == nil || c.Resources == nil || len(c.Resources.Limits) == 0 {
		return
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = make(map[string]string, len(c.Resources.Limits))
	}
	for name, q := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok {
			c.Resources.Requests[name] = q
		}
	}
}

func ptr[T any](v T) *T { return &v }
