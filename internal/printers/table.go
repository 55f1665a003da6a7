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

// Header returns the header of a table of objects like obj: its kind's
// columns upper-cased, as kubectl prints them (-o wide: all of them).
func Header(obj object.Object, o Options) []string {
	var h []string
	for _, c := range tableOf(obj).columns {
		if c.Priority == 0 || o.Wide {
			h = append(h, strings.ToUpper(c.Name))
		}
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
	t := tableOf(obj)
	cells := t.cells(obj, o.Now)
	var r []string
	for i, c := range t.columns {
		if c.Priority == 0 || o.Wide {
			r = append(r, fmt.Sprint(cells[i]))
		}
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
	for _, c := range st.GetConditions() {
		if c.GetType() == "PodScheduled" && c.GetReason() == "SchedulingGated" {
			reason = "SchedulingGated"
		}
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
	// A deleted pod that has finished keeps its phase's status.
	if deleted := p.GetMetadata().GetDeletionTimestamp() != nil; deleted && st.GetReason() == "NodeLost" {
		reason = "Unknown"
	} else if deleted && st.GetPhase() != "Succeeded" && st.GetPhase() != "Failed" {
		reason = "Terminating"
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

var podTable = kindTable{[]Column{
	nameColumn,
	column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
	column("Status", "The aggregate status of the containers in this pod."),
	column("Restarts", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
	ageColumn,
	wide(column("IP", doc("core/v1.PodStatus", "podIP"))),
	wide(column("Node", doc("core/v1.PodSpec", "nodeName"))),
	wide(column("Nominated Node", doc("core/v1.PodStatus", "nominatedNodeName"))),
	wide(column("Readiness Gates", doc("core/v1.PodSpec", "readinessGates"))),
}, podCells}

// podCells: RESTARTS is a string, "2 (5m ago)", as Kubernetes' is.
func podCells(obj object.Object, now time.Time) []any {
	p := obj.(*corev1.Pod)
	reason, ready, total, restarts, last := PodStatus(p)
	rs := strconv.Itoa(restarts)
	if restarts > 0 && !last.IsZero() {
		rs += " (" + HumanDuration(now.Sub(last)) + " ago)"
	}
	return []any{p.GetMetadata().GetName(), fmt.Sprintf("%d/%d", ready, total), reason, rs, Age(p.GetMetadata().GetCreationTimestamp(), now),
		orNone(p.GetStatus().GetPodIp()), orNone(p.GetSpec().GetNodeName()), orNone(p.GetStatus().GetNominatedNodeName()), readinessGates(p)}
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

var deploymentTable = kindTable{[]Column{
	nameColumn,
	column("Ready", "Number of the pod with ready state"),
	column("Up-to-date", doc("apps/v1.DeploymentStatus", "updatedReplicas")),
	column("Available", doc("apps/v1.DeploymentStatus", "availableReplicas")),
	ageColumn, containersColumn, imagesColumn, selectorColumn("apps/v1.DeploymentSpec"),
}, deploymentCells}

// deploymentCells: UP-TO-DATE and AVAILABLE are integers in string
// columns, as Kubernetes has them.
func deploymentCells(obj object.Object, now time.Time) []any {
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
	return []any{meta.GetName(), fmt.Sprintf("%d/%d", st.GetReadyReplicas(), replicas),
		int64(st.GetUpdatedReplicas()), int64(st.GetAvailableReplicas()), Age(meta.GetCreationTimestamp(), now),
		containers, images, FormatSelector(sel)}
}

var replicaSetTable = kindTable{[]Column{
	nameColumn,
	typed("integer", column("Desired", doc("apps/v1.ReplicaSetSpec", "replicas"))),
	typed("integer", column("Current", doc("apps/v1.ReplicaSetStatus", "replicas"))),
	typed("integer", column("Ready", doc("apps/v1.ReplicaSetStatus", "readyReplicas"))),
	ageColumn, containersColumn, imagesColumn, selectorColumn("apps/v1.ReplicaSetSpec"),
}, replicaSetCells}

func replicaSetCells(obj object.Object, now time.Time) []any {
	rs := obj.(*appsv1.ReplicaSet)
	containers, images := containersAndImages(rs.GetSpec().GetTemplate().GetSpec())
	return []any{rs.GetMetadata().GetName(), int64(rs.GetSpec().GetReplicas()), int64(rs.GetStatus().GetReplicas()),
		int64(rs.GetStatus().GetReadyReplicas()), Age(rs.GetMetadata().GetCreationTimestamp(), now),
		containers, images, FormatSelector(rs.GetSpec().GetSelector())}
}

// ---------------------------------------------------------------- nodes

// NodeStatus is the STATUS column of a node: Ready, NotReady (its Ready
// condition False or Unknown, as when its lease expired) or Unknown (no
// Ready condition yet), with ",SchedulingDisabled" when cordoned.
func NodeStatus(n *corev1.Node) string {
	status := "Unknown"
	for _, c := range n.GetStatus().GetConditions() {
		if c.GetType() == "Ready" {
			status = "NotReady"
			if c.GetStatus() == "True" {
				status = "Ready"
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

var nodeTable = kindTable{[]Column{
	nameColumn,
	column("Status", "The status of the node"),
	column("Roles", "The roles of the node"),
	ageColumn,
	column("Version", doc("core/v1.NodeSystemInfo", "kubeletVersion")),
	wide(column("Internal-IP", doc("core/v1.NodeStatus", "addresses"))),
	wide(column("External-IP", doc("core/v1.NodeStatus", "addresses"))),
	wide(column("OS-Image", doc("core/v1.NodeSystemInfo", "osImage"))),
	wide(column("Kernel-Version", doc("core/v1.NodeSystemInfo", "kernelVersion"))),
	wide(column("Container-Runtime", doc("core/v1.NodeSystemInfo", "containerRuntimeVersion"))),
}, nodeCells}

func nodeCells(obj object.Object, now time.Time) []any {
	n := obj.(*corev1.Node)
	info := n.GetStatus().GetNodeInfo()
	return []any{n.GetMetadata().GetName(), NodeStatus(n), NodeRoles(n), Age(n.GetMetadata().GetCreationTimestamp(), now), info.GetKubeletVersion(),
		nodeAddress(n, "InternalIP"), nodeAddress(n, "ExternalIP"), orUnknown(info.GetOsImage()), orUnknown(info.GetKernelVersion()), orUnknown(info.GetContainerRuntimeVersion())}
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

// ---------------------------------------------------------------- the rest

var namespaceTable = kindTable{[]Column{nameColumn, column("Status", "The status of the namespace"), ageColumn}, func(obj object.Object, now time.Time) []any {
	ns := obj.(*corev1.Namespace)
	return []any{ns.GetMetadata().GetName(), ns.GetStatus().GetPhase(), Age(ns.GetMetadata().GetCreationTimestamp(), now)}
}}

var leaseTable = kindTable{[]Column{nameColumn, column("Holder", doc("coordination/v1.LeaseSpec", "holderIdentity")), ageColumn}, func(obj object.Object, now time.Time) []any {
	l := obj.(*coordinationv1.Lease)
	return []any{l.GetMetadata().GetName(), l.GetSpec().GetHolderIdentity(), Age(l.GetMetadata().GetCreationTimestamp(), now)}
}}

// configMapTable: DATA counts the keys of data and binaryData, an integer
// in a string column as in Kubernetes.
var configMapTable = kindTable{[]Column{nameColumn, column("Data", doc("core/v1.ConfigMap", "data")), ageColumn}, func(obj object.Object, now time.Time) []any {
	cm := obj.(*corev1.ConfigMap)
	return []any{cm.GetMetadata().GetName(), int64(len(cm.GetData()) + len(cm.GetBinaryData())), Age(cm.GetMetadata().GetCreationTimestamp(), now)}
}}

// EventLastSeen is when an event last happened: lastTimestamp, else
// eventTime, else firstTimestamp, else its creation.
func EventLastSeen(e *corev1.Event) time.Time {
	switch {
	case e.GetLastTimestamp() != nil:
		return e.GetLastTimestamp().AsTime()
	case e.GetFirstTimestamp() != nil:
		return e.GetFirstTimestamp().AsTime()
	case e.GetEventTime() != nil:
		return e.GetEventTime().AsTime()
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

// eventTable: Kubernetes' -o wide columns of an event come between the
// others; COUNT is an integer in a string column, as in Kubernetes.
var eventTable = kindTable{[]Column{
	column("Last Seen", doc("core/v1.Event", "lastTimestamp")),
	column("Type", doc("core/v1.Event", "type")),
	column("Reason", doc("core/v1.Event", "reason")),
	column("Object", doc("core/v1.Event", "involvedObject")),
	wide(column("Subobject", doc("core/v1.ObjectReference", "fieldPath"))),
	wide(column("Source", doc("core/v1.Event", "source"))),
	column("Message", doc("core/v1.Event", "message")),
	wide(column("First Seen", doc("core/v1.Event", "firstTimestamp"))),
	wide(column("Count", doc("core/v1.Event", "count"))),
	wide(nameColumn),
}, eventCells}

func eventCells(obj object.Object, now time.Time) []any {
	e := obj.(*corev1.Event)
	io := e.GetInvolvedObject()
	ref := strings.ToLower(io.GetKind())
	if io.GetName() != "" {
		ref += "/" + io.GetName()
	}
	count := e.GetCount()
	if count == 0 {
		count = 1
	}
	return []any{HumanDuration(now.Sub(EventLastSeen(e))), e.GetType(), e.GetReason(), ref, io.GetFieldPath(), EventSource(e),
		strings.TrimSpace(e.GetMessage()), HumanDuration(now.Sub(EventFirstSeen(e))), int64(count), e.GetMetadata().GetName()}
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

var resourceQuotaTable = kindTable{[]Column{
	nameColumn,
	column("Request", "Request represents a minimum amount of cpu/memory that a container may consume."),
	column("Limit", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
	ageColumn,
}, resourceQuotaCells}

// resourceQuotaCells shows used/hard per resource as kubectl does:
// limits.* under LIMIT, everything else under REQUEST.
func resourceQuotaCells(obj object.Object, now time.Time) []any {
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
	return []any{q.GetMetadata().GetName(), strings.Join(req, ", "), strings.Join(lim, ", "), Age(q.GetMetadata().GetCreationTimestamp(), now)}
}

type binding interface {
	object.Object
	GetRoleRef() *rbacv1.RoleRef
	GetSubjects() []*rbacv1.Subject
}

// Role and cluster role bindings: ROLE is Kind/name; the wide columns
// list the subjects by kind.
var (
	roleBindingTable        = kindTable{bindingColumns("rbac/v1.RoleBinding", "roleBinding"), bindingCells}
	clusterRoleBindingTable = kindTable{bindingColumns("rbac/v1.ClusterRoleBinding", "clusterRoleBinding"), bindingCells}
)

func bindingColumns(typeName, binding string) []Column {
	return []Column{
		nameColumn,
		column("Role", doc(typeName, "roleRef")),
		ageColumn,
		wide(column("Users", "Users in the "+binding)),
		wide(column("Groups", "Groups in the "+binding)),
		wide(column("ServiceAccounts", "ServiceAccounts in the "+binding)),
	}
}

func bindingCells(obj object.Object, now time.Time) []any {
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
	return []any{b.GetMetadata().GetName(), ref.GetKind() + "/" + ref.GetName(), Age(b.GetMetadata().GetCreationTimestamp(), now),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}

var webhookConfigurationTable = kindTable{[]Column{
	nameColumn,
	typed("integer", column("Webhooks", "Webhooks indicates the number of webhooks registered in this configuration")),
	ageColumn,
}, webhookConfigurationCells}

func webhookConfigurationCells(obj object.Object, now time.Time) []any {
	n := 0
	switch c := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		n = len(c.GetWebhooks())
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		n = len(c.GetWebhooks())
	}
	m := obj.GetMetadata()
	return []any{m.GetName(), int64(n), Age(m.GetCreationTimestamp(), now)}
}

// serviceAccountTable: NAME SECRETS AGE, as kubectl; Skiff's service
// accounts list no secrets (their tokens are signed on demand).
var serviceAccountTable = kindTable{[]Column{nameColumn, column("Secrets", doc("core/v1.ServiceAccount", "secrets")), ageColumn}, func(obj object.Object, now time.Time) []any {
	m := obj.GetMetadata()
	return []any{m.GetName(), int64(0), Age(m.GetCreationTimestamp(), now)}
}}

// createdAtCells are the default table's: the name and the creation time
// in RFC 3339.
func createdAtCells(obj object.Object, _ time.Time) []any {
	m := obj.GetMetadata()
	return []any{m.GetName(), m.GetCreationTimestamp().AsTime().UTC().Format(time.RFC3339)}
}

// ---------------------------------------------------------------- services

var serviceTable = kindTable{[]Column{
	nameColumn,
	column("Type", doc("core/v1.ServiceSpec", "type")),
	column("Cluster-IP", doc("core/v1.ServiceSpec", "clusterIP")),
	column("External-IP", doc("core/v1.ServiceSpec", "externalIPs")),
	column("Port(s)", doc("core/v1.ServiceSpec", "ports")),
	ageColumn,
	selectorColumn("core/v1.ServiceSpec"),
}, serviceCells}

func serviceCells(obj object.Object, now time.Time) []any {
	svc := obj.(*corev1.Service)
	sp := svc.GetSpec()
	sel := "<none>"
	if len(sp.GetSelector()) > 0 {
		sel = FormatSelector(&metav1.LabelSelector{MatchLabels: sp.GetSelector()})
	}
	return []any{svc.GetMetadata().GetName(), sp.GetType(), orNone(sp.GetClusterIp()), ServiceExternalIP(svc), ServicePorts(sp.GetPorts()),
		Age(svc.GetMetadata().GetCreationTimestamp(), now), sel}
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

var endpointSliceTable = kindTable{[]Column{
	nameColumn,
	column("AddressType", doc("discovery/v1.EndpointSlice", "addressType")),
	column("Ports", doc("discovery/v1.EndpointSlice", "ports")),
	column("Endpoints", doc("discovery/v1.EndpointSlice", "endpoints")),
	ageColumn,
}, endpointSliceCells}

func endpointSliceCells(obj object.Object, now time.Time) []any {
	es := obj.(*discoveryv1.EndpointSlice)
	var ports []string
	for _, p := range es.GetPorts() {
		switch {
		case p.Port != nil:
			ports = append(ports, strconv.Itoa(int(p.GetPort())))
		case p.Name != nil:
			ports = append(ports, p.GetName())
		default:
			ports = append(ports, "*")
		}
	}
	return []any{es.GetMetadata().GetName(), es.GetAddressType(), firstOf(ports, 3), EndpointAddresses(es.GetEndpoints(), 3),
		Age(es.GetMetadata().GetCreationTimestamp(), now)}
}

// EndpointAddresses lists the first max addresses of endpoints as kubectl
// does ("10.0.0.1,10.0.0.2 + 3 more..."), <unset> when there are none.
func EndpointAddresses(endpoints []*discoveryv1.Endpoint, max int) string {
	var all []string
	for _, e := range endpoints {
		all = append(all, e.GetAddresses()...)
	}
	return firstOf(all, max)
}

// firstOf lists the first max items as kubectl does ("a,b,c + 2 more..."),
// <unset> when there are none.
func firstOf(items []string, max int) string {
	if len(items) == 0 {
		return "<unset>"
	}
	if len(items) <= max {
		return strings.Join(items, ",")
	}
	return strings.Join(items[:max], ",") + fmt.Sprintf(" + %d more...", len(items)-max)
}
