package printers

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"skiff.dev/internal/labels"
	"skiff.dev/internal/object"
	admissionregistrationv1 "skiff.dev/proto/admissionregistration/v1"
	appsv1 "skiff.dev/proto/apps/v1"
	appsv1beta1 "skiff.dev/proto/apps/v1beta1"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
)

// Options shape a table.
type Options struct {
	Wide          bool // -o wide
	WithNamespace bool // -A: a NAMESPACE column first
	ShowLabels    bool // --show-labels
	NoHeaders     bool
	// LabelColumns are -L keys, one column each.
	LabelColumns []string
	Now          time.Time
	// KeepOrder keeps the objects' order (--sort-by ordered them) where a
	// kind has its own (events: by when last seen).
	KeepOrder bool
}

// Table is a header and rows of cells.
type Table struct {
	Header []string
	Rows   [][]string
}

// columns of one kind: the normal ones, then the -o wide ones.
type columns struct {
	normal, wide []string
	row          func(obj object.Object, now time.Time) (normal, wide []string)
}

func columnsFor(obj object.Object) columns {
	if c, ok := ownColumns(obj); ok {
		return c
	}
	return columns{[]string{"NAME", "AGE"}, nil, func(obj object.Object, now time.Time) ([]string, []string) {
		m := obj.GetMetadata()
		return []string{m.GetName(), Age(m.GetCreationTimestamp(), now)}, nil
	}}
}

// HasColumns says whether skiffctl has table columns of obj's kind (as
// kubectl's), not only NAME and AGE (the conformance test requires them
// of every kind).
func HasColumns(obj object.Object) bool {
	_, ok := ownColumns(obj)
	return ok
}

// ownColumns are the columns of obj's kind, if it has its own.
func ownColumns(obj object.Object) (columns, bool) {
	switch obj.(type) {
	case *corev1.Pod:
		return columns{[]string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}, []string{"IP", "NODE", "NOMINATED NODE", "READINESS GATES"}, podRow}, true
	case *appsv1.Deployment, *appsv1beta1.Deployment:
		return columns{[]string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"}, []string{"CONTAINERS", "IMAGES", "SELECTOR"}, deploymentRow}, true
	case *appsv1.ReplicaSet:
		return columns{[]string{"NAME", "DESIRED", "CURRENT", "READY", "AGE"}, []string{"CONTAINERS", "IMAGES", "SELECTOR"}, replicaSetRow}, true
	case *corev1.Node:
		return columns{[]string{"NAME", "STATUS", "ROLES", "AGE", "VERSION"}, []string{"INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"}, nodeRow}, true
	case *corev1.Namespace:
		return columns{[]string{"NAME", "STATUS", "AGE"}, nil, namespaceRow}, true
	case *corev1.Event:
		return columns{[]string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}, []string{"SOURCE", "FIRST SEEN", "COUNT", "NAME"}, eventRow}, true
	case *coordinationv1.Lease:
		return columns{[]string{"NAME", "HOLDER", "AGE"}, nil, leaseRow}, true
	case *corev1.ConfigMap:
		return columns{[]string{"NAME", "DATA", "AGE"}, nil, configMapRow}, true
	case *corev1.Secret:
		return columns{[]string{"NAME", "TYPE", "DATA", "AGE"}, nil, secretRow}, true
	case *corev1.ResourceQuota:
		return columns{[]string{"NAME", "AGE", "REQUEST", "LIMIT"}, nil, resourceQuotaRow}, true
	case *rbacv1.RoleBinding, *rbacv1.ClusterRoleBinding:
		return columns{[]string{"NAME", "ROLE", "AGE"}, []string{"USERS", "GROUPS", "SERVICEACCOUNTS"}, bindingRow}, true
	case *admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration:
		return columns{[]string{"NAME", "WEBHOOKS", "AGE"}, nil, webhookConfigurationRow}, true
	case *corev1.ServiceAccount:
		return columns{[]string{"NAME", "SECRETS", "AGE"}, nil, serviceAccountRow}, true
	case *corev1.Service:
		return columns{[]string{"NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"}, []string{"SELECTOR"}, serviceRow}, true
	case *discoveryv1.EndpointSlice:
		return columns{[]string{"NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"}, nil, endpointSliceRow}, true
	case *corev1.LimitRange, *rbacv1.Role, *rbacv1.ClusterRole:
		return columns{[]string{"NAME", "CREATED AT"}, nil, createdAtRow}, true
	}
	return workloadColumns(obj)
}

// Header returns the header of a table of objects like obj.
func Header(obj object.Object, o Options) []string {
	c := columnsFor(obj)
	h := slices.Clone(c.normal)
	if o.Wide {
		h = append(h, c.wide...)
	}
	if o.WithNamespace {
		h = append([]string{"NAMESPACE"}, h...)
	}
	for _, l := range o.LabelColumns {
		h = append(h, strings.ToUpper(l[strings.LastIndexByte(l, '/')+1:]))
	}
	if o.ShowLabels {
		h = append(h, "LABELS")
	}
	return h
}

// Row returns obj's row.
func Row(obj object.Object, o Options) []string {
	c := columnsFor(obj)
	n, w := c.row(obj, o.Now)
	r := slices.Clone(n)
	if o.Wide {
		r = append(r, w...)
	}
	if o.WithNamespace {
		r = append([]string{obj.GetMetadata().GetNamespace()}, r...)
	}
	for _, l := range o.LabelColumns {
		r = append(r, obj.GetMetadata().GetLabels()[l])
	}
	if o.ShowLabels {
		r = append(r, FormatLabels(obj.GetMetadata().GetLabels()))
	}
	return r
}

// MakeTable builds the table of objs (all of one kind).
func MakeTable(objs []object.Object, o Options) Table {
	if len(objs) == 0 {
		return Table{}
	}
	t := Table{Header: Header(objs[0], o)}
	if _, ok := objs[0].(*corev1.Event); ok && !o.KeepOrder {
		objs = SortEvents(objs)
	}
	for _, obj := range objs {
		t.Rows = append(t.Rows, Row(obj, o))
	}
	return t
}

// NewTabWriter is kubectl's table writer: columns padded by three spaces.
func NewTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
}

// PrintTable writes t; noHeaders drops the header line.
func PrintTable(w io.Writer, t Table, noHeaders bool) error {
	tw := NewTabWriter(w)
	if !noHeaders && len(t.Header) > 0 {
		fmt.Fprintln(tw, strings.Join(t.Header, "\t"))
	}
	for _, r := range t.Rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// FormatLabels renders labels as "a=b,c=d" (sorted), "<none>" when empty.
func FormatLabels(l map[string]string) string {
	if len(l) == 0 {
		return "<none>"
	}
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return strings.Join(parts, ",")
}

// FormatSelector renders a label selector as a string ("app=web").
func FormatSelector(sel *metav1.LabelSelector) string {
	if sel == nil {
		return "<none>"
	}
	s, err := labels.FromProto(sel)
	if err != nil {
		return "<error>"
	}
	if str := s.String(); str != "" {
		return str
	}
	return "<none>"
}

// ---------------------------------------------------------------- pods

// PodStatus is the STATUS column of a pod, as kubectl computes it.
func PodStatus(p *corev1.Pod) (reason string, ready, total, restarts int, lastRestart time.Time) {
	st := p.GetStatus()
	total = len(p.GetSpec().GetContainers())
	reason = st.GetPhase()
	if st.GetReason() != "" {
		reason = st.GetReason()
	}
	// Sidecars (init containers with restartPolicy Always) count as
	// containers once started, and their restarts after initialization.
	sidecars := map[string]bool{}
	for _, c := range p.GetSpec().GetInitContainers() {
		if c.GetRestartPolicy() == "Always" {
			sidecars[c.GetName()] = true
			total++
		}
	}
	sidecarRestarts, lastSidecarRestart := 0, time.Time{}
	initializing := false
	for i, c := range st.GetInitContainerStatuses() {
		restarts += int(c.GetRestartCount())
		if t := c.GetLastState().GetTerminated().GetFinishedAt(); t != nil && t.AsTime().After(lastRestart) {
			lastRestart = t.AsTime()
		}
		if sidecars[c.GetName()] {
			sidecarRestarts += int(c.GetRestartCount())
			if t := c.GetLastState().GetTerminated().GetFinishedAt(); t != nil && t.AsTime().After(lastSidecarRestart) {
				lastSidecarRestart = t.AsTime()
			}
		}
		term, wait := c.GetState().GetTerminated(), c.GetState().GetWaiting()
		switch {
		case term != nil && term.GetExitCode() == 0:
			continue
		case sidecars[c.GetName()] && c.GetStarted():
			if c.GetReady() {
				ready++
			}
			continue
		case term != nil:
			switch {
			case term.GetReason() != "":
				reason = "Init:" + term.GetReason()
			case term.GetSignal() != 0:
				reason = fmt.Sprintf("Init:Signal:%d", term.GetSignal())
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", term.GetExitCode())
			}
		case wait != nil && wait.GetReason() != "" && wait.GetReason() != "PodInitializing":
			reason = "Init:" + wait.GetReason()
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(p.GetSpec().GetInitContainers()))
		}
		initializing = true
		break
	}
	if !initializing || initializedCondition(st) {
		restarts, lastRestart = sidecarRestarts, lastSidecarRestart
		hasRunning := false
		cs := st.GetContainerStatuses()
		for i := len(cs) - 1; i >= 0; i-- {
			c := cs[i]
			restarts += int(c.GetRestartCount())
			if t := c.GetLastState().GetTerminated().GetFinishedAt(); t != nil && t.AsTime().After(lastRestart) {
				lastRestart = t.AsTime()
			}
			wait, term := c.GetState().GetWaiting(), c.GetState().GetTerminated()
			switch {
			case wait != nil && wait.GetReason() != "":
				reason = wait.GetReason()
			case term != nil && term.GetReason() != "":
				reason = term.GetReason()
			case term != nil && term.GetSignal() != 0:
				reason = fmt.Sprintf("Signal:%d", term.GetSignal())
			case term != nil:
				reason = fmt.Sprintf("ExitCode:%d", term.GetExitCode())
			case c.GetReady() && c.GetState().GetRunning() != nil:
				hasRunning = true
				ready++
			}
		}
		if reason == "Completed" && hasRunning {
			reason = "NotReady"
			for _, cond := range st.GetConditions() {
				if cond.GetType() == "Ready" && cond.GetStatus() == "True" {
					reason = "Running"
				}
			}
		}
	}
	if p.GetMetadata().GetDeletionTimestamp() != nil {
		if st.GetReason() == "NodeLost" {
			reason = "Unknown"
		} else {
			reason = "Terminating"
		}
	}
	if reason == "" {
		reason = "Pending"
	}
	return reason, ready, total, restarts, lastRestart
}

func initializedCondition(st *corev1.PodStatus) bool {
	for _, c := range st.GetConditions() {
		if c.GetType() == "Initialized" {
			return c.GetStatus() == "True"
		}
	}
	return false
}

func podRow(obj object.Object, now time.Time) ([]string, []string) {
	p := obj.(*corev1.Pod)
	reason, ready, total, restarts, last := PodStatus(p)
	rs := strconv.Itoa(restarts)
	if restarts > 0 && !last.IsZero() {
		rs += " (" + HumanDuration(now.Sub(last)) + " ago)"
	}
	normal := []string{p.GetMetadata().GetName(), fmt.Sprintf("%d/%d", ready, total), reason, rs, Age(p.GetMetadata().GetCreationTimestamp(), now)}
	ip := orNone(p.GetStatus().GetPodIp())
	wide := []string{ip, orNone(p.GetSpec().GetNodeName()), orNone(p.GetStatus().GetNominatedNodeName()), readinessGates(p)}
	return normal, wide
}

// readinessGates is kubectl's READINESS GATES column: the gates whose
// condition is True over the gates, or <none>.
func readinessGates(p *corev1.Pod) string {
	gates := p.GetSpec().GetReadinessGates()
	if len(gates) == 0 {
		return "<none>"
	}
	ready := 0
	for _, g := range gates {
		for _, c := range p.GetStatus().GetConditions() {
			if c.GetType() == g.GetConditionType() {
				if c.GetStatus() == "True" {
					ready++
				}
				break
			}
		}
	}
	return fmt.Sprintf("%d/%d", ready, len(gates))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// ---------------------------------------------------------------- deployments and replicasets

func containersAndImages(spec *corev1.PodSpec) (string, string) {
	var names, images []string
	for _, c := range spec.GetContainers() {
		names = append(names, c.GetName())
		images = append(images, c.GetImage())
	}
	return strings.Join(names, ","), strings.Join(images, ",")
}

func deploymentRow(obj object.Object, now time.Time) ([]string, []string) {
	var (
		meta     *metav1.ObjectMeta
		replicas int32
		st       *appsv1.DeploymentStatus
		tmpl     *corev1.PodTemplateSpec
		sel      *metav1.LabelSelector
	)
	switch d := obj.(type) {
	case *appsv1.Deployment:
		meta, replicas, st, tmpl, sel = d.GetMetadata(), d.GetSpec().GetReplicas(), d.GetStatus(), d.GetSpec().GetTemplate(), d.GetSpec().GetSelector()
	case *appsv1beta1.Deployment:
		meta, replicas, st, tmpl, sel = d.GetMetadata(), d.GetSpec().GetReplicas(), d.GetStatus(), d.GetSpec().GetTemplate(), d.GetSpec().GetSelector()
	}
	containers, images := containersAndImages(tmpl.GetSpec())
	normal := []string{meta.GetName(), fmt.Sprintf("%d/%d", st.GetReadyReplicas(), replicas),
		strconv.Itoa(int(st.GetUpdatedReplicas())), strconv.Itoa(int(st.GetAvailableReplicas())), Age(meta.GetCreationTimestamp(), now)}
	return normal, []string{containers, images, FormatSelector(sel)}
}

func replicaSetRow(obj object.Object, now time.Time) ([]string, []string) {
	rs := obj.(*appsv1.ReplicaSet)
	containers, images := containersAndImages(rs.GetSpec().GetTemplate().GetSpec())
	normal := []string{rs.GetMetadata().GetName(), strconv.Itoa(int(rs.GetSpec().GetReplicas())),
		strconv.Itoa(int(rs.GetStatus().GetReplicas())), strconv.Itoa(int(rs.GetStatus().GetReadyReplicas())),
		Age(rs.GetMetadata().GetCreationTimestamp(), now)}
	return normal, []string{containers, images, FormatSelector(rs.GetSpec().GetSelector())}
}

// ---------------------------------------------------------------- nodes

// NodeStatus is the STATUS column of a node: Ready, NotReady or Unknown,
// with ",SchedulingDisabled" when cordoned.
func NodeStatus(n *corev1.Node) string {
	status := "Unknown"
	for _, c := range n.GetStatus().GetConditions() {
		if c.GetType() == "Ready" {
			switch c.GetStatus() {
			case "True":
				status = "Ready"
			case "False":
				status = "NotReady"
			}
		}
	}
	if n.GetSpec().GetUnschedulable() {
		status += ",SchedulingDisabled"
	}
	return status
}

// NodeRoles are the node's roles from its node-role.kubernetes.io/ labels.
func NodeRoles(n *corev1.Node) string {
	var roles []string
	for k, v := range n.GetMetadata().GetLabels() {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			if r := strings.TrimPrefix(k, "node-role.kubernetes.io/"); r != "" {
				roles = append(roles, r)
			}
		case k == "kubernetes.io/role" && v != "":
			roles = append(roles, v)
		}
	}
	if len(roles) == 0 {
		return "<none>"
	}
	slices.Sort(roles)
	return strings.Join(slices.Compact(roles), ",")
}

func nodeAddress(n *corev1.Node, typ string) string {
	for _, a := range n.GetStatus().GetAddresses() {
		if a.GetType() == typ {
			return a.GetAddress()
		}
	}
	return "<none>"
}

func nodeRow(obj object.Object, now time.Time) ([]string, []string) {
	n := obj.(*corev1.Node)
	info := n.GetStatus().GetNodeInfo()
	normal := []string{n.GetMetadata().GetName(), NodeStatus(n), NodeRoles(n), Age(n.GetMetadata().GetCreationTimestamp(), now), orNone(info.GetKubeletVersion())}
	return normal, []string{nodeAddress(n, "InternalIP"), nodeAddress(n, "ExternalIP"), orUnknown(info.GetOsImage()), orUnknown(info.GetKernelVersion()), orUnknown(info.GetContainerRuntimeVersion())}
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

// ---------------------------------------------------------------- the rest

func namespaceRow(obj object.Object, now time.Time) ([]string, []string) {
	ns := obj.(*corev1.Namespace)
	return []string{ns.GetMetadata().GetName(), ns.GetStatus().GetPhase(), Age(ns.GetMetadata().GetCreationTimestamp(), now)}, nil
}

func leaseRow(obj object.Object, now time.Time) ([]string, []string) {
	l := obj.(*coordinationv1.Lease)
	return []string{l.GetMetadata().GetName(), l.GetSpec().GetHolderIdentity(), Age(l.GetMetadata().GetCreationTimestamp(), now)}, nil
}

func configMapRow(obj object.Object, now time.Time) ([]string, []string) {
	cm := obj.(*corev1.ConfigMap)
	return []string{cm.GetMetadata().GetName(), strconv.Itoa(len(cm.GetData()) + len(cm.GetBinaryData())), Age(cm.GetMetadata().GetCreationTimestamp(), now)}, nil
}

// EventLastSeen is when an event last happened: lastTimestamp, else
// eventTime, else firstTimestamp, else its creation.
func EventLastSeen(e *corev1.Event) time.Time {
	switch {
	case e.GetLastTimestamp() != nil:
		return e.GetLastTimestamp().AsTime()
	case e.GetEventTime() != nil:
		return e.GetEventTime().AsTime()
	case e.GetFirstTimestamp() != nil:
		return e.GetFirstTimestamp().AsTime()
	case e.GetMetadata().GetCreationTimestamp() != nil:
		return e.GetMetadata().GetCreationTimestamp().AsTime()
	}
	return time.Time{}
}

// EventFirstSeen is when an event first happened.
func EventFirstSeen(e *corev1.Event) time.Time {
	if e.GetFirstTimestamp() != nil {
		return e.GetFirstTimestamp().AsTime()
	}
	if e.GetEventTime() != nil {
		return e.GetEventTime().AsTime()
	}
	return EventLastSeen(e)
}

// EventSource is "component, host" (or the reporting component).
func EventSource(e *corev1.Event) string {
	s := e.GetSource().GetComponent()
	if s == "" {
		s = e.GetReportingComponent()
	}
	if h := e.GetSource().GetHost(); h != "" {
		s += ", " + h
	}
	return s
}

func eventRow(obj object.Object, now time.Time) ([]string, []string) {
	e := obj.(*corev1.Event)
	io := e.GetInvolvedObject()
	ref := strings.ToLower(io.GetKind()) + "/" + io.GetName()
	count := e.GetCount()
	if count == 0 {
		count = 1
	}
	normal := []string{HumanDuration(now.Sub(EventLastSeen(e))), e.GetType(), e.GetReason(), ref, strings.TrimSpace(e.GetMessage())}
	wide := []string{EventSource(e), HumanDuration(now.Sub(EventFirstSeen(e))), strconv.Itoa(int(count)), e.GetMetadata().GetName()}
	return normal, wide
}

// SortEvents orders events by when they were last seen, oldest first.
func SortEvents(objs []object.Object) []object.Object {
	out := slices.Clone(objs)
	slices.SortStableFunc(out, func(a, b object.Object) int {
		return EventLastSeen(a.(*corev1.Event)).Compare(EventLastSeen(b.(*corev1.Event)))
	})
	return out
}

// SortEventsIf sorts objs when they are events, and returns them as they
// are otherwise.
func SortEventsIf(objs []object.Object) []object.Object {
	if len(objs) > 0 {
		if _, ok := objs[0].(*corev1.Event); ok {
			return SortEvents(objs)
		}
	}
	return objs
}

// resourceQuotaRow shows used/hard per resource as kubectl does: limits.*
// under LIMIT, everything else under REQUEST.
func resourceQuotaRow(obj object.Object, now time.Time) ([]string, []string) {
	q := obj.(*corev1.ResourceQuota)
	var req, lim []string
	hard := q.GetSpec().GetHard()
	for _, k := range slices.Sorted(maps.Keys(hard)) {
		used := q.GetStatus().GetUsed()[k]
		if used == "" {
			used = "0"
		}
		cell := k + ": " + used + "/" + hard[k]
		if strings.HasPrefix(k, "limits.") {
			lim = append(lim, cell)
		} else {
			req = append(req, cell)
		}
	}
	return []string{q.GetMetadata().GetName(), Age(q.GetMetadata().GetCreationTimestamp(), now), strings.Join(req, ", "), strings.Join(lim, ", ")}, nil
}

type binding interface {
	object.Object
	GetRoleRef() *rbacv1.RoleRef
	GetSubjects() []*rbacv1.Subject
}

// bindingRow: ROLE is Kind/name; the wide columns list the subjects by kind.
func bindingRow(obj object.Object, now time.Time) ([]string, []string) {
	b := obj.(binding)
	var users, groups, sas []string
	for _, s := range b.GetSubjects() {
		switch s.GetKind() {
		case "User":
			users = append(users, s.GetName())
		case "Group":
			groups = append(groups, s.GetName())
		case "ServiceAccount":
			sas = append(sas, s.GetNamespace()+"/"+s.GetName())
		}
	}
	ref := b.GetRoleRef()
	return []string{b.GetMetadata().GetName(), ref.GetKind() + "/" + ref.GetName(), Age(b.GetMetadata().GetCreationTimestamp(), now)},
		[]string{strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}

func webhookConfigurationRow(obj object.Object, now time.Time) ([]string, []string) {
	n := 0
	switch c := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		n = len(c.GetWebhooks())
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		n = len(c.GetWebhooks())
	}
	m := obj.GetMetadata()
	return []string{m.GetName(), strconv.Itoa(n), Age(m.GetCreationTimestamp(), now)}, nil
}

// serviceAccountRow: NAME SECRETS AGE, as kubectl; Skiff's service
// accounts list no secrets (their tokens are signed on demand).
func serviceAccountRow(obj object.Object, now time.Time) ([]string, []string) {
	m := obj.GetMetadata()
	return []string{m.GetName(), "0", Age(m.GetCreationTimestamp(), now)}, nil
}

// createdAtRow: NAME CREATED AT, as kubectl prints limit ranges and roles.
func createdAtRow(obj object.Object, _ time.Time) ([]string, []string) {
	m := obj.GetMetadata()
	return []string{m.GetName(), m.GetCreationTimestamp().AsTime().UTC().Format(time.RFC3339)}, nil
}

// ---------------------------------------------------------------- services

func serviceRow(obj object.Object, now time.Time) ([]string, []string) {
	svc := obj.(*corev1.Service)
	sp := svc.GetSpec()
	sel := "<none>"
	if len(sp.GetSelector()) > 0 {
		sel = FormatSelector(&metav1.LabelSelector{MatchLabels: sp.GetSelector()})
	}
	return []string{svc.GetMetadata().GetName(), sp.GetType(), orNone(sp.GetClusterIp()), ServiceExternalIP(svc), ServicePorts(sp.GetPorts()),
		Age(svc.GetMetadata().GetCreationTimestamp(), now)}, []string{sel}
}

// ServiceExternalIP is kubectl's EXTERNAL-IP of a Service: the external
// name, the load balancer's addresses (<pending> until it has some), the
// external IPs, else <none>.
func ServiceExternalIP(svc *corev1.Service) string {
	sp := svc.GetSpec()
	switch sp.GetType() {
	case "ExternalName":
		return sp.GetExternalName()
	case "LoadBalancer":
		var ips []string
		for _, in := range svc.GetStatus().GetLoadBalancer().GetIngress() {
			if in.GetIp() != "" {
				ips = append(ips, in.GetIp())
			} else if in.GetHostname() != "" {
				ips = append(ips, in.GetHostname())
			}
		}
		ips = append(ips, sp.GetExternalIps()...)
		if len(ips) == 0 {
			return "<pending>"
		}
		return strings.Join(ips, ",")
	}
	if len(sp.GetExternalIps()) > 0 {
		return strings.Join(sp.GetExternalIps(), ",")
	}
	return "<none>"
}

// ServicePorts is kubectl's PORT(S): port[:nodePort]/protocol, joined.
func ServicePorts(ports []*corev1.ServicePort) string {
	if len(ports) == 0 {
		return "<none>"
	}
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = strconv.Itoa(int(p.GetPort()))
		if p.GetNodePort() != 0 {
			parts[i] += ":" + strconv.Itoa(int(p.GetNodePort()))
		}
		parts[i] += "/" + p.GetProtocol()
	}
	return strings.Join(parts, ",")
}

func endpointSliceRow(obj object.Object, now time.Time) ([]string, []string) {
	es := obj.(*discoveryv1.EndpointSlice)
	ports := "<unset>"
	if len(es.GetPorts()) > 0 {
		parts := make([]string, len(es.GetPorts()))
		for i, p := range es.GetPorts() {
			parts[i] = "<unset>"
			if p.Port != nil {
				parts[i] = strconv.Itoa(int(p.GetPort()))
			}
		}
		ports = strings.Join(parts, ",")
	}
	return []string{es.GetMetadata().GetName(), es.GetAddressType(), ports, EndpointAddresses(es.GetEndpoints(), 3),
		Age(es.GetMetadata().GetCreationTimestamp(), now)}, nil
}

// EndpointAddresses lists the first max addresses of endpoints as kubectl
// does ("10.0.0.1,10.0.0.2 + 3 more..."), <unset> when there are none.
func EndpointAddresses(endpoints []*discoveryv1.Endpoint, max int) string {
	var all []string
	for _, e := range endpoints {
		all = append(all, e.GetAddresses()...)
	}
	if len(all) == 0 {
		return "<unset>"
	}
	if len(all) <= max {
		return strings.Join(all, ",")
	}
	return strings.Join(all[:max], ",") + fmt.Sprintf(" + %d more...", len(all)-max)
}
