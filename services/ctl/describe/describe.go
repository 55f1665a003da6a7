// Package describe renders `skiffctl describe` output as kubectl does: an
// object's fields for people, its events, and for a pod a timeline of its
// start (created, scheduled, sandbox ready, image pulled, started, ready),
// derived from the conditions, container statuses and events that exist.
//
// Everything here is a pure function of the object, the related objects
// the caller fetched (Related) and an injected clock; it does no I/O but
// writing to the writer it is given.
package describe

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/manifest"
	"skiff.dev/internal/object"
	"skiff.dev/internal/printers"
	appsv1 "skiff.dev/proto/apps/v1"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
	schedulingv1 "skiff.dev/proto/scheduling/v1"
)

// Related are the objects a description shows beside the object itself.
type Related struct {
	// Events about the object.
	Events []*corev1.Event
	// ReplicaSets a Deployment controls.
	ReplicaSets []*appsv1.ReplicaSet
	// Pods a ReplicaSet controls, or that run on a Node.
	Pods []*corev1.Pod
	// EndpointSlices of a Service.
	EndpointSlices []*discoveryv1.EndpointSlice
}

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// TimeFormat is how describe prints times (kubectl's RFC 1123 with a zone offset).
const TimeFormat = time.RFC1123Z

// Describe writes the description of obj.
func Describe(w io.Writer, obj object.Object, rel Related, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	p := &out{w: tw, now: now}
	switch o := obj.(type) {
	case *corev1.Pod:
		p.pod(o, rel)
	case *appsv1.Deployment:
		p.deployment(o, rel)
	case *appsv1.ReplicaSet:
		p.replicaSet(o, rel)
	case *corev1.Node:
		p.node(o, rel)
	case *corev1.ConfigMap:
		p.configMap(o)
	case *corev1.Secret:
		p.secret(o)
		return tw.Flush() // kubectl shows no events of a secret
	case *corev1.Service:
		p.service(o, rel)
	case *batchv1.Job:
		p.job(o)
	case *batchv1.CronJob:
		p.cronJob(o)
	case *appsv1.DaemonSet:
		p.daemonSet(o, rel)
	case *appsv1.StatefulSet:
		p.statefulSet(o, rel)
	case *corev1.PersistentVolume:
		p.persistentVolume(o)
	case *corev1.PersistentVolumeClaim:
		p.persistentVolumeClaim(o, rel.Pods)
	case *schedulingv1.PriorityClass:
		p.priorityClass(o)
	default:
		p.generic(obj)
	}
	p.events(rel.Events)
	return tw.Flush()
}

// out writes indented "Key:\tvalue" lines; the tab writer aligns values.
type out struct {
	w   io.Writer
	now time.Time
}

func (p *out) line(level int, format string, args ...any) {
	fmt.Fprintf(p.w, strings.Repeat("  ", level)+format+"\n", args...)
}

func (p *out) kv(level int, key string, value any) {
	p.line(level, "%s:\t%v", key, value)
}

// multi writes a key with one value per line (labels, annotations); the
// last-applied configuration is left out, as kubectl does.
func (p *out) multi(level int, key string, m map[string]string, sep string) {
	if _, ok := m[lastApplied]; ok {
		m = maps.Clone(m)
		delete(m, lastApplied)
	}
	if len(m) == 0 {
		p.kv(level, key, "<none>")
		return
	}
	for i, k := range slices.Sorted(maps.Keys(m)) {
		v := strings.TrimSuffix(m[k], "\n")
		if len(v) > 200 { // last-applied configurations and the like
			v = v[:200] + "..."
		}
		if i == 0 {
			p.line(level, "%s:\t%s%s%s", key, k, sep, v)
		} else {
			p.line(level, "\t%s%s%s", k, sep, v)
		}
	}
}

func (p *out) meta(m *metav1.ObjectMeta, namespaced bool) {
	p.kv(0, "Name", m.GetName())
	if namespaced {
		p.kv(0, "Namespace", m.GetNamespace())
	}
}

func formatTime(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return "<unset>"
	}
	return ts.AsTime().UTC().Format(TimeFormat)
}

func controlledBy(m *metav1.ObjectMeta) string {
	for _, ref := range m.GetOwnerReferences() {
		if ref.GetController() {
			return ref.GetKind() + "/" + ref.GetName()
		}
	}
	return ""
}

func (p *out) events(events []*corev1.Event) {
	if len(events) == 0 {
		p.line(0, "Events:\t<none>")
		return
	}
	objs := make([]object.Object, len(events))
	for i, e := range events {
		objs[i] = e
	}
	p.line(0, "Events:")
	p.line(1, "Type\tReason\tAge\tFrom\tMessage")
	p.line(1, "----\t------\t----\t----\t-------")
	for _, o := range printers.SortEvents(objs) {
		e := o.(*corev1.Event)
		age := printers.HumanDuration(p.now.Sub(printers.EventLastSeen(e)))
		if e.GetCount() > 1 {
			age = fmt.Sprintf("%s (x%d over %s)", age, e.GetCount(), printers.HumanDuration(p.now.Sub(printers.EventFirstSeen(e))))
		}
		p.line(1, "%s\t%s\t%s\t%s\t%s", e.GetType(), e.GetReason(), age, printers.EventSource(e), strings.TrimSpace(e.GetMessage()))
	}
}

// ---------------------------------------------------------------- pods

func (p *out) pod(pod *corev1.Pod, rel Related) {
	m, spec, st := pod.GetMetadata(), pod.GetSpec(), pod.GetStatus()
	p.meta(m, true)
	p.kv(0, "Priority", spec.GetPriority())
	if spec.GetPriorityClassName() != "" {
		p.kv(0, "Priority Class Name", spec.GetPriorityClassName())
	}
	if spec.GetRuntimeClassName() != "" {
		p.kv(0, "Runtime Class Name", spec.GetRuntimeClassName())
	}
	p.kv(0, "Service Account", orDefault(spec.GetServiceAccountName(), "default"))
	node := orDefault(spec.GetNodeName(), "<none>")
	if spec.GetNodeName() != "" && st.GetHostIp() != "" {
		node += "/" + st.GetHostIp()
	}
	p.kv(0, "Node", node)
	if st.GetStartTime() != nil {
		p.kv(0, "Start Time", formatTime(st.GetStartTime()))
	}
	p.multi(0, "Labels", m.GetLabels(), "=")
	p.multi(0, "Annotations", m.GetAnnotations(), ": ")
	status, _, _, _, _ := printers.PodStatus(pod)
	if m.GetDeletionTimestamp() != nil {
		p.kv(0, "Status", fmt.Sprintf("Terminating (lasts %s)", printers.HumanDuration(p.now.Sub(m.GetDeletionTimestamp().AsTime()))))
		if g := m.DeletionGracePeriodSeconds; g != nil {
			p.kv(0, "Termination Grace Period", fmt.Sprintf("%ds", *g))
		}
	} else {
		p.kv(0, "Status", orDefault(st.GetPhase(), status))
	}
	if st.GetReason() != "" {
		p.kv(0, "Reason", st.GetReason())
	}
	if st.GetMessage() != "" {
		p.kv(0, "Message", st.GetMessage())
	}
	p.kv(0, "IP", st.GetPodIp())
	if ips := st.GetPodIps(); len(ips) > 0 {
		p.line(0, "IPs:")
		for _, ip := range ips {
			p.kv(1, "IP", ip.GetIp())
		}
	} else {
		p.kv(0, "IPs", "<none>")
	}
	if c := controlledBy(m); c != "" {
		p.kv(0, "Controlled By", c)
	}
	statuses := map[string]*corev1.ContainerStatus{}
	for _, cs := range append(slices.Clone(st.GetInitContainerStatuses()), st.GetContainerStatuses()...) {
		statuses[cs.GetName()] = cs
	}
	if len(spec.GetInitContainers()) > 0 {
		p.line(0, "Init Containers:")
		for _, c := range spec.GetInitContainers() {
			p.container(c, statuses[c.GetName()])
		}
	}
	p.line(0, "Containers:")
	for _, c := range spec.GetContainers() {
		p.container(c, statuses[c.GetName()])
	}
	if gates := spec.GetReadinessGates(); len(gates) > 0 {
		p.line(0, "Readiness Gates:")
		p.line(1, "Type\tStatus")
		for _, g := range gates {
			status := "<none>"
			for _, c := range st.GetConditions() {
				if c.GetType() == g.GetConditionType() {
					status = c.GetStatus()
					break
				}
			}
			p.line(1, "%s \t%s ", g.GetConditionType(), status)
		}
	}
	if len(st.GetConditions()) > 0 {
		p.line(0, "Conditions:")
		p.line(1, "Type\tStatus")
		for _, c := range st.GetConditions() {
			p.line(1, "%s \t%s ", c.GetType(), c.GetStatus())
		}
	}
	p.volumes(spec.GetVolumes())
	if st.GetQosClass() != "" {
		p.kv(0, "QoS Class", st.GetQosClass())
	}
	p.multi(0, "Node-Selectors", spec.GetNodeSelector(), "=")
	p.tolerations(spec.GetTolerations())
	p.timeline(pod, rel.Events)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (p *out) container(c *corev1.Container, cs *corev1.ContainerStatus) {
	p.line(1, "%s:", c.GetName())
	if cs.GetContainerId() != "" {
		p.kv(2, "Container ID", cs.GetContainerId())
	}
	p.kv(2, "Image", c.GetImage())
	if cs.GetImageId() != "" {
		p.kv(2, "Image ID", cs.GetImageId())
	}
	ports := c.GetPorts()
	if len(ports) == 0 {
		p.kv(2, "Port", "<none>")
		p.kv(2, "Host Port", "<none>")
	} else {
		var ps, hs []string
		for _, port := range ports {
			ps = append(ps, fmt.Sprintf("%d/%s", port.GetContainerPort(), orDefault(port.GetProtocol(), "TCP")))
			hs = append(hs, fmt.Sprintf("%d/%s", port.GetHostPort(), orDefault(port.GetProtocol(), "TCP")))
		}
		p.kv(2, "Port"+plural(len(ps)), strings.Join(ps, ", "))
		p.kv(2, "Host Port"+plural(len(hs)), strings.Join(hs, ", "))
	}
	if len(c.GetCommand()) > 0 {
		p.line(2, "Command:")
		for _, s := range c.GetCommand() {
			p.line(3, "%s", s)
		}
	}
	if len(c.GetArgs()) > 0 {
		p.line(2, "Args:")
		for _, s := range c.GetArgs() {
			p.line(3, "%s", s)
		}
	}
	if cs != nil {
		p.state(2, "State", cs.GetState())
		if ls := cs.GetLastState(); ls.GetRunning() != nil || ls.GetTerminated() != nil || ls.GetWaiting() != nil {
			p.state(2, "Last State", ls)
		}
		p.kv(2, "Ready", titleBool(cs.GetReady()))
		p.kv(2, "Restart Count", cs.GetRestartCount())
	}
	p.resources(2, "Limits", c.GetResources().GetLimits())
	p.resources(2, "Requests", c.GetResources().GetRequests())
	for _, pr := range []struct {
		name  string
		probe *corev1.Probe
	}{{"Liveness", c.GetLivenessProbe()}, {"Readiness", c.GetReadinessProbe()}, {"Startup", c.GetStartupProbe()}} {
		if pr.probe != nil {
			p.kv(2, pr.name, describeProbe(pr.probe))
		}
	}
	if len(c.GetEnvFrom()) > 0 {
		p.line(2, "Environment Variables from:")
		for _, ef := range c.GetEnvFrom() {
			p.envFrom(ef)
		}
	}
	if len(c.GetEnv()) == 0 {
		p.kv(2, "Environment", "<none>")
	} else {
		p.line(2, "Environment:")
		for _, e := range c.GetEnv() {
			p.kv(3, e.GetName(), envValue(e))
		}
	}
	if len(c.GetVolumeMounts()) == 0 {
		p.kv(2, "Mounts", "<none>")
	} else {
		p.line(2, "Mounts:")
		for _, vm := range c.GetVolumeMounts() {
			mode := "rw"
			if vm.GetReadOnly() {
				mode = "ro"
			}
			p.line(3, "%s from %s (%s)", vm.GetMountPath(), vm.GetName(), mode)
		}
	}
}

func plural(n int) string {
	if n > 1 {
		return "s"
	}
	return ""
}

func titleBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

func envValue(e *corev1.EnvVar) string {
	vf := e.GetValueFrom()
	switch {
	case vf.GetFieldRef() != nil:
		return fmt.Sprintf(" (%s:%s)", orDefault(vf.GetFieldRef().GetApiVersion(), "v1"), vf.GetFieldRef().GetFieldPath())
	case vf.GetResourceFieldRef() != nil:
		return fmt.Sprintf(" (%s)", vf.GetResourceFieldRef().GetResource())
	case vf.GetConfigMapKeyRef() != nil:
		r := vf.GetConfigMapKeyRef()
		return fmt.Sprintf("<set to the key '%s' of config map '%s'>\tOptional: %v", r.GetKey(), r.GetName(), r.GetOptional())
	case vf.GetSecretKeyRef() != nil:
		r := vf.GetSecretKeyRef() // names the key, never its value
		return fmt.Sprintf("<set to the key '%s' in secret '%s'>\tOptional: %v", r.GetKey(), r.GetName(), r.GetOptional())
	}
	return e.GetValue()
}

func (p *out) state(level int, key string, s *corev1.ContainerState) {
	switch {
	case s.GetRunning() != nil:
		p.kv(level, key, "Running")
		p.kv(level+1, "Started", formatTime(s.GetRunning().GetStartedAt()))
	case s.GetTerminated() != nil:
		t := s.GetTerminated()
		p.kv(level, key, "Terminated")
		p.kv(level+1, "Reason", orDefault(t.GetReason(), "<none>"))
		p.kv(level+1, "Exit Code", t.GetExitCode())
		p.kv(level+1, "Started", formatTime(t.GetStartedAt()))
		p.kv(level+1, "Finished", formatTime(t.GetFinishedAt()))
	case s.GetWaiting() != nil:
		p.kv(level, key, "Waiting")
		p.kv(level+1, "Reason", s.GetWaiting().GetReason())
	default:
		p.kv(level, key, "Waiting")
	}
}

func (p *out) resources(level int, key string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	p.line(level, "%s:", key)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p.kv(level+1, k, m[k])
	}
}

func describeProbe(pr *corev1.Probe) string {
	var what string
	switch {
	case pr.GetHttpGet() != nil:
		h := pr.GetHttpGet()
		what = fmt.Sprintf("http-get %s://%s:%s%s", strings.ToLower(orDefault(h.GetScheme(), "HTTP")), h.GetHost(), intOrString(h.GetPort()), h.GetPath())
	case pr.GetTcpSocket() != nil:
		what = fmt.Sprintf("tcp-socket %s:%s", pr.GetTcpSocket().GetHost(), intOrString(pr.GetTcpSocket().GetPort()))
	case pr.GetExec() != nil:
		what = fmt.Sprintf("exec %v", pr.GetExec().GetCommand())
	default:
		what = "unknown"
	}
	return fmt.Sprintf("%s delay=%ds timeout=%ds period=%ds #success=%d #failure=%d", what,
		pr.GetInitialDelaySeconds(), pr.GetTimeoutSeconds(), pr.GetPeriodSeconds(), pr.GetSuccessThreshold(), pr.GetFailureThreshold())
}

func intOrString(v *metav1.IntOrString) string {
	if s, ok := v.GetValue().(*metav1.IntOrString_StrVal); ok {
		return s.StrVal
	}
	return fmt.Sprint(v.GetIntVal())
}

func (p *out) volumes(vols []*corev1.Volume) {
	if len(vols) == 0 {
		p.kv(0, "Volumes", "<none>")
		return
	}
	p.line(0, "Volumes:")
	for _, v := range vols {
		p.line(1, "%s:", v.GetName())
		switch {
		case v.GetEmptyDir() != nil:
			p.kv(2, "Type", "EmptyDir (a temporary directory that shares a pod's lifetime)")
			p.kv(2, "Medium", v.GetEmptyDir().GetMedium())
			p.kv(2, "SizeLimit", orDefault(v.GetEmptyDir().GetSizeLimit(), "<unset>"))
		case v.GetHostPath() != nil:
			p.kv(2, "Type", "HostPath (bare host directory volume)")
			p.kv(2, "Path", v.GetHostPath().GetPath())
			p.kv(2, "HostPathType", v.GetHostPath().GetType())
		case v.GetConfigMap() != nil:
			p.kv(2, "Type", "ConfigMap (a volume populated by a ConfigMap)")
			p.kv(2, "Name", v.GetConfigMap().GetName())
			p.kv(2, "Optional", v.GetConfigMap().GetOptional())
		case v.GetSecret() != nil, v.GetDownwardApi() != nil, v.GetProjected() != nil:
			p.secretVolume(v)
		default:
			p.kv(2, "Type", "<unknown>")
		}
	}
}

func (p *out) tolerations(ts []*corev1.Toleration) {
	if len(ts) == 0 {
		p.kv(0, "Tolerations", "<none>")
		return
	}
	for i, t := range ts {
		s := t.GetKey()
		if t.GetValue() != "" {
			s += "=" + t.GetValue()
		}
		if t.GetEffect() != "" {
			s += ":" + t.GetEffect()
		}
		if t.GetOperator() == "Exists" && t.GetValue() == "" {
			s += " op=Exists"
		}
		if t.TolerationSeconds != nil {
			s += fmt.Sprintf(" for %ds", *t.TolerationSeconds)
		}
		if i == 0 {
			p.kv(0, "Tolerations", s)
		} else {
			p.line(0, "\t%s", s)
		}
	}
}

// Step is one moment of a pod's start.
type Step struct {
	Name string
	At   time.Time // zero: not yet (or not known)
}

// Timeline derives when a pod was created, scheduled, had its sandbox
// ready, its image pulled, a container started and became ready, from the
// conditions, container statuses and events that exist.
func Timeline(pod *corev1.Pod, events []*corev1.Event) []Step {
	cond := func(typ string) time.Time {
		for _, c := range pod.GetStatus().GetConditions() {
			if c.GetType() == typ && c.GetStatus() == "True" && c.GetLastTransitionTime() != nil {
				return c.GetLastTransitionTime().AsTime()
			}
		}
		return time.Time{}
	}
	event := func(reasons ...string) time.Time {
		var first time.Time
		for _, e := range events {
			if slices.Contains(reasons, e.GetReason()) {
				if t := printers.EventFirstSeen(e); first.IsZero() || t.Before(first) {
					first = t
				}
			}
		}
		return first
	}
	either := func(ts ...time.Time) time.Time {
		for _, t := range ts {
			if !t.IsZero() {
				return t
			}
		}
		return time.Time{}
	}
	var started time.Time
	for _, cs := range pod.GetStatus().GetContainerStatuses() {
		var t *timestamppb.Timestamp
		if r := cs.GetState().GetRunning(); r != nil {
			t = r.GetStartedAt()
		} else if tr := cs.GetState().GetTerminated(); tr != nil {
			t = tr.GetStartedAt()
		}
		if t != nil && (started.IsZero() || t.AsTime().Before(started)) {
			started = t.AsTime()
		}
	}
	var created time.Time
	if ts := pod.GetMetadata().GetCreationTimestamp(); ts != nil {
		created = ts.AsTime()
	}
	return []Step{
		{"Created", created},
		{"Scheduled", either(cond("PodScheduled"), event("Scheduled"))},
		{"Sandbox ready", either(cond("PodReadyToStartContainers"), event("SandboxReady", "SandboxCreated"))},
		{"Image pulled", event("Pulled")},
		{"Started", either(started, event("Started"))},
		{"Ready", cond("Ready")},
	}
}

func (p *out) timeline(pod *corev1.Pod, events []*corev1.Event) {
	steps := Timeline(pod, events)
	p.line(0, "Timeline:")
	created := steps[0].At
	for _, s := range steps {
		if s.At.IsZero() {
			p.kv(1, s.Name, "<not yet>")
			continue
		}
		p.kv(1, s.Name, fmt.Sprintf("%s (+%s)", s.At.UTC().Format(TimeFormat), s.At.Sub(created).Round(time.Millisecond)))
	}
}

// ---------------------------------------------------------------- workloads

// PodTemplate writes a pod template as describe shows it (rollout history
// --revision uses it too).
func PodTemplate(w io.Writer, t *corev1.PodTemplateSpec) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	(&out{w: tw}).template(t)
	return tw.Flush()
}

func (p *out) template(t *corev1.PodTemplateSpec) {
	p.line(0, "Pod Template:")
	p.multi(1, "Labels", t.GetMetadata().GetLabels(), "=")
	if len(t.GetMetadata().GetAnnotations()) > 0 {
		p.multi(1, "Annotations", t.GetMetadata().GetAnnotations(), ": ")
	}
	if len(t.GetSpec().GetInitContainers()) > 0 {
		p.line(1, "Init Containers:")
		for _, c := range t.GetSpec().GetInitContainers() {
			p.container(c, nil)
		}
	}
	p.line(1, "Containers:")
	for _, c := range t.GetSpec().GetContainers() {
		p.container(c, nil)
	}
}

func (p *out) deployment(d *appsv1.Deployment, rel Related) {
	m, spec, st := d.GetMetadata(), d.GetSpec(), d.GetStatus()
	p.meta(m, true)
	p.kv(0, "CreationTimestamp", formatTime(m.GetCreationTimestamp()))
	p.multi(0, "Labels", m.GetLabels(), "=")
	p.multi(0, "Annotations", m.GetAnnotations(), ": ")
	p.kv(0, "Selector", printers.FormatSelector(spec.GetSelector()))
	p.kv(0, "Replicas", fmt.Sprintf("%d desired | %d updated | %d total | %d available | %d unavailable",
		spec.GetReplicas(), st.GetUpdatedReplicas(), st.GetReplicas(), st.GetAvailableReplicas(), st.GetUnavailableReplicas()))
	p.kv(0, "StrategyType", spec.GetStrategy().GetType())
	p.kv(0, "MinReadySeconds", spec.GetMinReadySeconds())
	if ru := spec.GetStrategy().GetRollingUpdate(); ru != nil {
		p.kv(0, "RollingUpdateStrategy", fmt.Sprintf("%s max unavailable, %s max surge", intOrString(ru.GetMaxUnavailable()), intOrString(ru.GetMaxSurge())))
	}
	if spec.GetPaused() {
		p.kv(0, "Paused", "true")
	}
	p.template(spec.GetTemplate())
	if len(st.GetConditions()) > 0 {
		p.line(0, "Conditions:")
		p.line(1, "Type\tStatus\tReason")
		p.line(1, "----\t------\t------")
		for _, c := range st.GetConditions() {
			p.line(1, "%s \t%s\t%s", c.GetType(), c.GetStatus(), c.GetReason())
		}
	}
	rev := m.GetAnnotations()["deployment.kubernetes.io/revision"]
	var old []string
	newRS := "<none>"
	for _, rs := range rel.ReplicaSets {
		s := fmt.Sprintf("%s (%d/%d replicas created)", rs.GetMetadata().GetName(), rs.GetStatus().GetReplicas(), rs.GetSpec().GetReplicas())
		if rev != "" && rs.GetMetadata().GetAnnotations()["deployment.kubernetes.io/revision"] == rev {
			newRS = s
		} else if rs.GetSpec().GetReplicas() > 0 || rs.GetStatus().GetReplicas() > 0 {
			old = append(old, s)
		}
	}
	if len(old) == 0 {
		p.kv(0, "OldReplicaSets", "<none>")
	} else {
		p.kv(0, "OldReplicaSets", strings.Join(old, ", "))
	}
	p.kv(0, "NewReplicaSet", newRS)
}

func (p *out) replicaSet(rs *appsv1.ReplicaSet, rel Related) {
	m, spec, st := rs.GetMetadata(), rs.GetSpec(), rs.GetStatus()
	p.meta(m, true)
	p.kv(0, "Selector", printers.FormatSelector(spec.GetSelector()))
	p.multi(0, "Labels", m.GetLabels(), "=")
	p.multi(0, "Annotations", m.GetAnnotations(), ": ")
	if c := controlledBy(m); c != "" {
		p.kv(0, "Controlled By", c)
	}
	p.kv(0, "Replicas", fmt.Sprintf("%d current / %d desired", st.GetReplicas(), spec.GetReplicas()))
	phases := map[string]int{}
	for _, pod := range rel.Pods {
		phases[pod.GetStatus().GetPhase()]++
	}
	p.kv(0, "Pods Status", fmt.Sprintf("%d Running / %d Waiting / %d Succeeded / %d Failed",
		phases["Running"], phases["Pending"]+phases[""], phases["Succeeded"], phases["Failed"]))
	p.template(spec.GetTemplate())
}

// ---------------------------------------------------------------- nodes

func (p *out) node(n *corev1.Node, rel Related) {
	m, spec, st := n.GetMetadata(), n.GetSpec(), n.GetStatus()
	p.kv(0, "Name", m.GetName())
	p.kv(0, "Roles", printers.NodeRoles(n))
	p.multi(0, "Labels", m.GetLabels(), "=")
	p.multi(0, "Annotations", m.GetAnnotations(), ": ")
	p.kv(0, "CreationTimestamp", formatTime(m.GetCreationTimestamp()))
	if len(spec.GetTaints()) == 0 {
		p.kv(0, "Taints", "<none>")
	}
	for i, t := range spec.GetTaints() {
		s := t.GetKey()
		if t.GetValue() != "" {
			s += "=" + t.GetValue()
		}
		s += ":" + t.GetEffect()
		if i == 0 {
			p.kv(0, "Taints", s)
		} else {
			p.line(0, "\t%s", s)
		}
	}
	p.kv(0, "Unschedulable", spec.GetUnschedulable())
	if len(st.GetConditions()) > 0 {
		p.line(0, "Conditions:")
		p.line(1, "Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage")
		p.line(1, "----\t------\t-----------------\t------------------\t------\t-------")
		for _, c := range st.GetConditions() {
			p.line(1, "%s \t%s \t%s \t%s \t%s \t%s", c.GetType(), c.GetStatus(), formatTime(c.GetLastHeartbeatTime()),
				formatTime(c.GetLastTransitionTime()), c.GetReason(), c.GetMessage())
		}
	}
	p.line(0, "Addresses:")
	for _, a := range st.GetAddresses() {
		p.kv(1, a.GetType(), a.GetAddress())
	}
	p.resources(0, "Capacity", st.GetCapacity())
	p.resources(0, "Allocatable", st.GetAllocatable())
	if info := st.GetNodeInfo(); info != nil {
		p.line(0, "System Info:")
		p.kv(1, "Machine ID", info.GetMachineId())
		p.kv(1, "System UUID", info.GetSystemUuid())
		p.kv(1, "Boot ID", info.GetBootId())
		p.kv(1, "Kernel Version", info.GetKernelVersion())
		p.kv(1, "OS Image", info.GetOsImage())
		p.kv(1, "Operating System", info.GetOperatingSystem())
		p.kv(1, "Architecture", info.GetArchitecture())
		p.kv(1, "Container Runtime Version", info.GetContainerRuntimeVersion())
		p.kv(1, "Kubelet Version", info.GetKubeletVersion())
	}
	var active []*corev1.Pod
	for _, pod := range rel.Pods {
		if ph := pod.GetStatus().GetPhase(); ph != "Succeeded" && ph != "Failed" {
			active = append(active, pod)
		}
	}
	p.line(0, "Non-terminated Pods:\t(%d in total)", len(active))
	if len(active) > 0 {
		p.line(1, "Namespace\tName\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge")
		p.line(1, "---------\t----\t------------\t----------\t---------------\t-------------\t---")
		for _, pod := range active {
			req, lim := podResources(pod)
			p.line(1, "%s\t%s\t%s\t%s\t%s\t%s\t%s", pod.GetMetadata().GetNamespace(), pod.GetMetadata().GetName(),
				orDefault(req["cpu"], "0"), orDefault(lim["cpu"], "0"), orDefault(req["memory"], "0"), orDefault(lim["memory"], "0"),
				printers.Age(pod.GetMetadata().GetCreationTimestamp(), p.now))
		}
	}
}

// podResources lists the requests and limits of a pod's containers
// (joined with "+" when several set one).
func podResources(pod *corev1.Pod) (req, lim map[string]string) {
	req, lim = map[string]string{}, map[string]string{}
	add := func(dst map[string]string, src map[string]string) {
		for k, v := range src {
			if dst[k] == "" {
				dst[k] = v
			} else {
				dst[k] += "+" + v
			}
		}
	}
	for _, c := range pod.GetSpec().GetContainers() {
		add(req, c.GetResources().GetRequests())
		add(lim, c.GetResources().GetLimits())
	}
	return req, lim
}

// ---------------------------------------------------------------- the rest

func (p *out) configMap(cm *corev1.ConfigMap) {
	m := cm.GetMetadata()
	p.meta(m, true)
	p.multi(0, "Labels", m.GetLabels(), "=")
	p.multi(0, "Annotations", m.GetAnnotations(), ": ")
	p.line(0, "")
	p.line(0, "Data")
	p.line(0, "====")
	for _, k := range slices.Sorted(maps.Keys(cm.GetData())) {
		p.line(0, "%s:", k)
		p.line(0, "----")
		p.line(0, "%s", strings.TrimSuffix(cm.GetData()[k], "\n"))
		p.line(0, "")
	}
	p.line(0, "")
	p.line(0, "BinaryData")
	p.line(0, "====")
	for _, k := range slices.Sorted(maps.Keys(cm.GetBinaryData())) {
		p.line(0, "%s: %d bytes", k, len(cm.GetBinaryData()[k]))
	}
	p.line(0, "")
}

// generic describes any object: its metadata, then its other fields as
// an indented tree with capitalised names.
func (p *out) generic(obj object.Object) {
	m := obj.GetMetadata()
	p.kv(0, "Name", m.GetName())
	if m.GetNamespace() != "" {
		p.kv(0, "Namespace", m.GetNamespace())
	}
	p.multi(0, "Labels", m.GetLabels(), "=")
	p.multi(0, "Annotations", m.GetAnnotations(), ": ")
	p.kv(0, "API Version", obj.GetApiVersion())
	p.kv(0, "Kind", obj.GetKind())
	tree := manifest.Encode(obj)
	meta, _ := tree["metadata"].(map[string]any)
	for _, k := range []string{"creationTimestamp", "uid", "resourceVersion"} {
		if v, ok := meta[k]; ok {
			p.kv(0, capitalize(k), v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(tree)) {
		switch k {
		case "apiVersion", "kind", "metadata":
			continue
		}
		p.tree(0, k, tree[k])
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func (p *out) tree(level int, key string, v any) {
	switch x := v.(type) {
	case map[string]any:
		p.line(level, "%s:", capitalize(key))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			p.tree(level+1, k, x[k])
		}
	case []any:
		p.line(level, "%s:", capitalize(key))
		for _, e := range x {
			if mm, ok := e.(map[string]any); ok {
				for i, k := range slices.Sorted(maps.Keys(mm)) {
					if i == 0 {
						p.line(level+1, "- %s:\t%v", capitalize(k), scalar(mm[k]))
					} else {
						p.line(level+1, "  %s:\t%v", capitalize(k), scalar(mm[k]))
					}
				}
				continue
			}
			p.line(level+1, "%v", e)
		}
	default:
		p.kv(level, capitalize(key), v)
	}
}

func scalar(v any) any {
	switch v.(type) {
	case map[string]any, []any:
		return strings.TrimSpace(manifest.CompactJSON(v))
	}
	return v
}

// ---------------------------------------------------------------- services

// service describes a Service as kubectl does: its addresses and, per
// port, its target port, node port and endpoints (ready addresses with
// the port's number, from the Service's EndpointSlices).
func (p *out) service(svc *corev1.Service, rel Related) {
	m, sp := svc.GetMetadata(), svc.GetSpec()
	p.meta(m, true)
	p.multi(0, "Labels", m.GetLabels(), "=")
	p.multi(0, "Annotations", m.GetAnnotations(), ": ")
	sel := "<none>"
	if len(sp.GetSelector()) > 0 {
		sel = printers.FormatSelector(&metav1.LabelSelector{MatchLabels: sp.GetSelector()})
	}
	p.kv(0, "Selector", sel)
	p.kv(0, "Type", sp.GetType())
	p.kv(0, "IP Family Policy", orDefault(sp.GetIpFamilyPolicy(), "<none>"))
	p.kv(0, "IP Families", orDefault(strings.Join(sp.GetIpFamilies(), ","), "<none>"))
	if sp.GetType() == "ExternalName" {
		p.kv(0, "External Name", sp.GetExternalName())
	} else {
		p.kv(0, "IP", orDefault(sp.GetClusterIp(), "<none>"))
		p.kv(0, "IPs", orDefault(strings.Join(sp.GetClusterIps(), ","), "<none>"))
	}
	if ext := printers.ServiceExternalIP(svc); sp.GetType() == "LoadBalancer" {
		p.kv(0, "LoadBalancer Ingress", ext)
	}
	for _, port := range sp.GetPorts() {
		name := orDefault(port.GetName(), "<unset>")
		p.kv(0, "Port", fmt.Sprintf("%s  %d/%s", name, port.GetPort(), port.GetProtocol()))
		p.kv(0, "TargetPort", fmt.Sprintf("%s/%s", intOrString(port.GetTargetPort()), port.GetProtocol()))
		if port.GetNodePort() != 0 {
			p.kv(0, "NodePort", fmt.Sprintf("%s  %d/%s", name, port.GetNodePort(), port.GetProtocol()))
		}
		if sp.GetType() != "ExternalName" {
			p.kv(0, "Endpoints", serviceEndpoints(rel.EndpointSlices, port))
		}
	}
	p.kv(0, "Session Affinity", sp.GetSessionAffinity())
	if sp.GetExternalTrafficPolicy() != "" {
		p.kv(0, "External Traffic Policy", sp.GetExternalTrafficPolicy())
	}
	if sp.InternalTrafficPolicy != nil {
		p.kv(0, "Internal Traffic Policy", sp.GetInternalTrafficPolicy())
	}
}

// serviceEndpoints lists the ready addresses serving port (by its name)
// as address:port, as kubectl's describe does (the first three), <none>
// when there are none.
func serviceEndpoints(slices []*discoveryv1.EndpointSlice, port *corev1.ServicePort) string {
	var addrs []string
	for _, es := range slices {
		for _, ep := range es.GetPorts() {
			if ep.GetName() != port.GetName() || ep.GetProtocol() != port.GetProtocol() || ep.Port == nil {
				continue
			}
			for _, e := range es.GetEndpoints() {
				if c := e.GetConditions(); c != nil && c.Ready != nil && !c.GetReady() {
					continue
				}
				for _, a := range e.GetAddresses() {
					addrs = append(addrs, fmt.Sprintf("%s:%d", a, ep.GetPort()))
				}
			}
		}
	}
	switch {
	case len(addrs) == 0:
		return "<none>"
	case len(addrs) > 3:
		return strings.Join(addrs[:3], ",") + fmt.Sprintf(" + %d more...", len(addrs)-3)
	}
	return strings.Join(addrs, ",")
}
