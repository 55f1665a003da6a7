package cmd

// drain is kubectl's drain (k8s.io/kubectl/pkg/drain and pkg/cmd/drain):
// cordon the node, list its pods, sort them with kubectl's filters
// (DaemonSet-managed, mirror, local storage, unmanaged), then evict (or,
// with --disable-eviction, delete) the ones to go, each in parallel,
// retrying an eviction a PodDisruptionBudget refuses (429) every 5 s, and
// wait for each pod to be gone. The filters and their messages are pure
// (podFilters.filter, podDeleteList); the effects are the drainer's.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/labels"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// Kubernetes' words of the filters (k8s.io/kubectl/pkg/drain/filters.go).
const (
	daemonSetFatal      = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
	daemonSetWarning    = "ignoring DaemonSet-managed Pods"
	localStorageFatal   = "Pods with local storage (use --delete-emptydir-data to override)"
	localStorageWarning = "deleting Pods with local storage"
	unmanagedFatal      = "cannot delete Pods that declare no controller (use --force to override)"
	unmanagedWarning    = "deleting Pods that declare no controller"

	mirrorPodAnnotation = "kubernetes.io/config.mirror"
	// namespaceTerminatingCause is the cause of an eviction refused because
	// the pod's namespace is being deleted.
	namespaceTerminatingCause = "NamespaceTerminating"
	// evictRetryDelay is how long drain waits before evicting a pod again
	// after a 429 (kubectl's EvictErrorRetryDelay).
	evictRetryDelay = 5 * time.Second
)

// podDeleteReason is what a filter made of a pod.
type podDeleteReason int

const (
	podOkay podDeleteReason = iota
	podSkip
	podWarning
	podError
)

// podDeleteStatus is a filter's verdict on one pod.
type podDeleteStatus struct {
	delete  bool
	reason  podDeleteReason
	message string
}

func okay() podDeleteStatus { return podDeleteStatus{delete: true, reason: podOkay} }
func skip() podDeleteStatus { return podDeleteStatus{reason: podSkip} }
func warn(del bool, msg string) podDeleteStatus {
	return podDeleteStatus{delete: del, reason: podWarning, message: msg}
}
func fatal(msg string) podDeleteStatus { return podDeleteStatus{reason: podError, message: msg} }

type podDelete struct {
	pod    *corev1.Pod
	status podDeleteStatus
}

// podDeleteList is every pod of the node with its verdict.
type podDeleteList []podDelete

// pods are the pods to evict or delete.
func (l podDeleteList) pods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range l {
		if p.status.delete {
			out = append(out, p.pod)
		}
	}
	return out
}

// grouped joins the ns/name of the pods with reason by message, in the
// order the messages first appear (kubectl's order is a map's).
func (l podDeleteList) grouped(reason podDeleteReason, defaultMsg string) (msgs []string, pods map[string][]string) {
	pods = map[string][]string{}
	for _, p := range l {
		if p.status.reason != reason {
			continue
		}
		msg := p.status.message
		if msg == "" {
			msg = defaultMsg
		}
		if _, ok := pods[msg]; !ok {
			msgs = append(msgs, msg)
		}
		meta := p.pod.GetMetadata()
		pods[msg] = append(pods[msg], meta.GetNamespace()+"/"+meta.GetName())
	}
	return msgs, pods
}

// warnings is kubectl's WARNING line: "msg: ns/a, ns/b; msg2: ns/c".
func (l podDeleteList) warnings() string {
	msgs, pods := l.grouped(podWarning, "")
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m + ": " + strings.Join(pods[m], ", ")
	}
	return strings.Join(out, "; ")
}

// errors are the reasons the node cannot be drained, one per message.
func (l podDeleteList) errors() []error {
	msgs, pods := l.grouped(podError, "unexpected error")
	var errs []error
	for _, m := range msgs {
		if strings.HasPrefix(strings.ToLower(m), "cannot delete") {
			errs = append(errs, fmt.Errorf("%s: %s", m, strings.Join(pods[m], ", ")))
		} else {
			errs = append(errs, fmt.Errorf("cannot delete %s: %s", m, strings.Join(pods[m], ", ")))
		}
	}
	return errs
}

// podFilters are kubectl's drain filters, applied in its order; the first
// that keeps a pod decides.
type podFilters struct {
	force, ignoreDaemonSets, deleteEmptyDirData bool
	// daemonSet reads a pod's DaemonSet (nil: it exists).
	daemonSet func(namespace, name string) error
}

func (f *podFilters) filter(pods []*corev1.Pod) podDeleteList {
	chain := []func(*corev1.Pod) podDeleteStatus{f.daemonSetFilter, mirrorPodFilter, f.localStorageFilter, f.unreplicatedFilter}
	out := make(podDeleteList, 0, len(pods))
	for _, p := range pods {
		var st podDeleteStatus
		for _, fn := range chain {
			if st = fn(p); !st.delete {
				break
			}
		}
		out = append(out, podDelete{pod: p, status: st})
	}
	return out
}

func finished(p *corev1.Pod) bool {
	ph := p.GetStatus().GetPhase()
	return ph == "Succeeded" || ph == "Failed"
}

func controllerOf(p *corev1.Pod) *metav1.OwnerReference {
	for _, ref := range p.GetMetadata().GetOwnerReferences() {
		if ref.GetController() {
			return ref
		}
	}
	return nil
}

func (f *podFilters) daemonSetFilter(p *corev1.Pod) podDeleteStatus {
	ref := controllerOf(p)
	if ref == nil || ref.GetKind() != "DaemonSet" || finished(p) {
		return okay()
	}
	if f.daemonSet != nil {
		if err := f.daemonSet(p.GetMetadata().GetNamespace(), ref.GetName()); err != nil {
			if apierrors.IsNotFound(err) && f.force {
				return warn(true, err.Error()) // an orphan: deleted with --force
			}
			return fatal(err.Error())
		}
	}
	if !f.ignoreDaemonSets {
		return fatal(daemonSetFatal)
	}
	return warn(false, daemonSetWarning)
}

func mirrorPodFilter(p *corev1.Pod) podDeleteStatus {
	if _, ok := p.GetMetadata().GetAnnotations()[mirrorPodAnnotation]; ok {
		return skip()
	}
	return okay()
}

func (f *podFilters) localStorageFilter(p *corev1.Pod) podDeleteStatus {
	local := false
	for _, v := range p.GetSpec().GetVolumes() {
		if v.GetEmptyDir() != nil {
			local = true
		}
	}
	if !local || finished(p) {
		return okay()
	}
	if !f.deleteEmptyDirData {
		return fatal(localStorageFatal)
	}
	return warn(true, localStorageWarning)
}

func (f *podFilters) unreplicatedFilter(p *corev1.Pod) podDeleteStatus {
	if finished(p) || controllerOf(p) != nil {
		return okay()
	}
	if f.force {
		return warn(true, unmanagedWarning)
	}
	return fatal(unmanagedFatal)
}

// aggregate is utilerrors.Aggregate's rendering: one error as itself,
// more as "[a, b]".
type aggregate []error

func (a aggregate) Error() string {
	if len(a) == 1 {
		return a[0].Error()
	}
	s := make([]string, len(a))
	for i, e := range a {
		s[i] = e.Error()
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func newAggregate(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return aggregate(errs)
}

// ----------------------------------------------------------------- command

type drainFlags struct {
	selector, podSelector                                        string
	force, ignoreDaemonSets, deleteEmptyDirData, disableEviction bool
	gracePeriod                                                  int
	timeout                                                      time.Duration
	dryRun                                                       string
}

// drainDeps is what drain takes from outside besides the API: its clock
// (the retry delay and --timeout).
type drainDeps struct {
	clock workqueue.Clock
}

func (r *root) drainCmd() *cobra.Command {
	return r.drainCmdWith(drainDeps{clock: workqueue.RealClock()})
}

// drainCmdWith is drain with its dependencies.
func (r *root) drainCmdWith(deps drainDeps) *cobra.Command {
	d := drainFlags{gracePeriod: -1}
	c := &cobra.Command{
		Use:   "drain NODE",
		Short: "Drain node in preparation for maintenance",
		Long: `Drain node in preparation for maintenance.

The node is marked unschedulable (cordoned), then its pods are evicted:
each eviction respects the PodDisruptionBudgets that select the pod, and
one a budget refuses is tried again every 5 seconds until --timeout.
With --disable-eviction the pods are deleted instead, bypassing the budgets.
DaemonSet-managed pods are not deleted (their DaemonSet would recreate them
at once): drain stops unless --ignore-daemonsets. Mirror pods are skipped.
Pods with emptyDir volumes need --delete-emptydir-data; pods that no
controller manages (and DaemonSet pods whose DaemonSet is gone) need
--force. Finished pods are always deleted. drain waits until every pod is
gone. Use uncordon to put the node back into service.`,
		Example: `  skiffctl drain node-1 --ignore-daemonsets
  skiffctl drain node-1 --force --grace-period=900
  skiffctl drain node-1 --ignore-daemonsets --dry-run=client`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && d.selector == "" {
				return usageError(cmd, "USAGE: %s [flags]", cmd.Use)
			}
			if len(args) > 0 && d.selector != "" {
				return usageError(cmd, "cannot specify both a node name and a --selector option")
			}
			if d.podSelector != "" {
				if _, err := labels.Parse(d.podSelector); err != nil {
					return errors.New("--pod-selector=<pod_selector> must be a valid label selector")
				}
			}
			mode, err := dryRunMode(d.dryRun)
			if err != nil {
				return err
			}
			return r.drain(cmd.Context(), args, &d, mode, deps)
		},
	}
	f := c.Flags()
	f.BoolVar(&d.force, "force", false, "Continue even if there are pods not managed by a ReplicationController, ReplicaSet, Job, DaemonSet or StatefulSet.")
	f.BoolVar(&d.ignoreDaemonSets, "ignore-daemonsets", false, "Ignore DaemonSet-managed pods.")
	f.BoolVar(&d.deleteEmptyDirData, "delete-emptydir-data", false, "Continue even if there are pods using emptyDir (local data that will be deleted when the node is drained).")
	f.IntVar(&d.gracePeriod, "grace-period", -1, "Period of time in seconds given to each pod to terminate gracefully. If negative, the default value specified in the pod will be used.")
	f.DurationVar(&d.timeout, "timeout", 0, "The length of time to wait before giving up, zero means infinite")
	f.StringVarP(&d.selector, "selector", "l", "", "Selector (label query) to filter on")
	f.StringVar(&d.podSelector, "pod-selector", "", "Label selector to filter pods on the node")
	f.BoolVar(&d.disableEviction, "disable-eviction", false, "Force drain to use delete, even if eviction is supported. This will bypass checking PodDisruptionBudgets, use with caution.")
	f.StringVar(&d.dryRun, "dry-run", "none", `"none", "client" (print what would be evicted) or "server"`)
	f.Lookup("dry-run").NoOptDefVal = "client"
	return c
}

// lockedWriter serializes the writes of drain's parallel evictions.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// drainer drains nodes: it holds the clients and the flags of one run.
type drainer struct {
	flags       *drainFlags
	dryRun      string // "" or "client"
	clock       workqueue.Clock
	retryDelay  time.Duration
	out, errOut io.Writer
	nodes       *client.Resource[*corev1.Node, *corev1.NodeList]
	pods        *client.Resource[*corev1.Pod, *corev1.PodList]
	evict       func(context.Context, *corev1.Eviction) error
	filters     podFilters
}

func (r *root) drain(ctx context.Context, args []string, f *drainFlags, mode string, deps drainDeps) error {
	conn, err := r.connect()
	if err != nil {
		return err
	}
	mu := &sync.Mutex{}
	d := &drainer{
		flags: f, dryRun: mode, clock: deps.clock, retryDelay: evictRetryDelay,
		out: lockedWriter{mu, r.env.Out}, errOut: lockedWriter{mu, r.env.Err},
		nodes: client.Nodes(conn), pods: client.Pods(conn),
		filters: podFilters{force: f.force, ignoreDaemonSets: f.ignoreDaemonSets, deleteEmptyDirData: f.deleteEmptyDirData},
	}
	podsAPI := corev1.NewPodsClient(conn)
	d.evict = func(ctx context.Context, e *corev1.Eviction) error {
		if _, err := podsAPI.Evict(ctx, e); err != nil {
			return apierrors.FromError(err)
		}
		return nil
	}
	daemonSets := client.DaemonSets(conn)
	d.filters.daemonSet = func(ns, name string) error {
		_, err := daemonSets.Get(ctx, ns, name)
		return err
	}

	// The nodes, as kubectl's builder reads them before anything changes.
	var nodes []string
	if f.selector != "" {
		items, err := listAll(ctx, d.nodes, listOptions("", f.selector, ""))
		if err != nil {
			return err
		}
		for _, n := range items {
			nodes = append(nodes, n.GetMetadata().GetName())
		}
	}
	for _, name := range args {
		if _, err := d.nodes.Get(ctx, "", name); err != nil {
			return err
		}
		nodes = append(nodes, name)
	}

	for _, n := range nodes {
		d.cordon(ctx, n)
	}
	var fatals []error
	var remaining []string
	for _, n := range nodes {
		if err := d.drainNode(ctx, n); err != nil {
			fmt.Fprintf(d.errOut, "error: unable to drain node %q due to error: %s, continuing command...\n", n, err)
			fatals = append(fatals, err)
			remaining = append(remaining, n)
			continue
		}
		fmt.Fprintf(d.out, "node/%s drained%s\n", n, d.dryRunSuffix())
	}
	if len(remaining) == 0 {
		return nil
	}
	fmt.Fprintf(d.errOut, "There are pending nodes to be drained:\n")
	for _, n := range remaining {
		fmt.Fprintf(d.errOut, " %s\n", n)
	}
	// kubectl's CheckErr: an aggregate's errors one a line as they are,
	// any other error after "error: ".
	err = fatals[0]
	if len(fatals) > 1 {
		err = aggregate(fatals)
	}
	var agg aggregate
	if errors.As(err, &agg) {
		for _, e := range agg {
			fmt.Fprintln(d.errOut, e.Error())
		}
		return errSilent
	}
	return err
}

func (d *drainer) dryRunSuffix() string {
	if d.dryRun == "client" {
		return " (dry run)"
	}
	return ""
}

// cordon marks the node unschedulable; a failure is reported and the
// drain goes on, as kubectl's does.
func (d *drainer) cordon(ctx context.Context, name string) {
	changed := false
	err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		node, err := d.nodes.Get(ctx, "", name)
		if err != nil {
			return err
		}
		if changed = !node.GetSpec().GetUnschedulable(); !changed || d.dryRun != "" {
			return nil
		}
		if node.Spec == nil {
			node.Spec = &corev1.NodeSpec{}
		}
		node.Spec.Unschedulable = true
		_, err = d.nodes.Update(ctx, node)
		return err
	})
	if err != nil {
		fmt.Fprintf(d.errOut, "error: unable to cordon node %q: %v\n", name, err)
		return
	}
	verb := "cordoned"
	if !changed {
		verb = "already cordoned"
	}
	fmt.Fprintf(d.out, "node/%s %s%s\n", name, verb, d.dryRunSuffix())
}

// podsForDeletion lists the node's pods and filters them.
func (d *drainer) podsForDeletion(ctx context.Context, node string) (podDeleteList, []error) {
	pods, err := listAll(ctx, d.pods, listOptions("", d.flags.podSelector, "spec.nodeName="+node))
	if err != nil {
		return nil, []error{err}
	}
	l := d.filters.filter(pods)
	return l, l.errors()
}

// drainNode evicts or deletes the node's pods and waits for them to go.
func (d *drainer) drainNode(ctx context.Context, node string) error {
	list, errs := d.podsForDeletion(ctx, node)
	if len(errs) > 0 {
		return aggregate(errs)
	}
	if w := list.warnings(); w != "" {
		fmt.Fprintf(d.errOut, "WARNING: %s\n", w)
	}
	pods := list.pods()
	if d.dryRun == "client" {
		for _, p := range pods {
			fmt.Fprintf(d.out, "evicting pod %s/%s (dry run)\n", p.GetMetadata().GetNamespace(), p.GetMetadata().GetName())
		}
		return nil
	}
	var err error
	if d.flags.disableEviction {
		err = d.deletePods(ctx, pods)
	} else {
		err = d.evictPods(ctx, pods)
	}
	if err == nil {
		return nil
	}
	pending, newErrs := d.podsForDeletion(ctx, node)
	if pods := pending.pods(); len(pods) > 0 {
		fmt.Fprintf(d.errOut, "There are pending pods in node %q when an error occurred: %v\n", node, err)
		for _, p := range pods {
			fmt.Fprintf(d.errOut, "pod/%s\n", p.GetMetadata().GetName())
		}
	}
	if len(newErrs) > 0 {
		fmt.Fprintf(d.errOut, "Following errors occurred while getting the list of pods to delete:\n%s", newAggregate(newErrs))
	}
	return err
}

func (d *drainer) deleteOptions() *corev1.DeleteOptions {
	o := &corev1.DeleteOptions{}
	if d.flags.gracePeriod >= 0 {
		g := int64(d.flags.gracePeriod)
		o.GracePeriodSeconds = &g
	}
	return o
}

// withTimeout is ctx ended after --timeout on the drainer's clock (0:
// never); its cause is then context.DeadlineExceeded.
func (d *drainer) withTimeout(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	if d.flags.timeout <= 0 {
		return ctx, func() { cancel(nil) }
	}
	t := d.clock.NewTimer(d.flags.timeout)
	stopped := make(chan struct{})
	go func() {
		select {
		case <-t.C():
			cancel(context.DeadlineExceeded)
		case <-stopped:
		}
	}()
	return ctx, func() {
		t.Stop()
		close(stopped)
		cancel(nil)
	}
}

// globalTimeout is --timeout as kubectl prints it (0: "infinite").
func (d *drainer) globalTimeout() time.Duration {
	if d.flags.timeout <= 0 {
		return time.Duration(1<<63 - 1)
	}
	return d.flags.timeout
}

// evictPods evicts every pod in parallel and waits for each to be gone.
func (d *drainer) evictPods(ctx context.Context, pods []*corev1.Pod) error {
	ctx, stop := d.withTimeout(ctx)
	defer stop()
	results := make(chan error, len(pods))
	for _, p := range pods {
		go func() { results <- d.evictPod(ctx, p) }()
	}
	var errs []error
	for range pods {
		if err := <-results; err != nil {
			errs = append(errs, err)
		}
	}
	return newAggregate(errs)
}

func (d *drainer) evictPod(ctx context.Context, pod *corev1.Pod) error {
	ns, name := pod.GetMetadata().GetNamespace(), pod.GetMetadata().GetName()
	active := pod
attempts:
	for {
		fmt.Fprintf(d.out, "evicting pod %s/%s\n", ns, name)
		if ctx.Err() != nil {
			return fmt.Errorf("error when evicting pods/%q -n %q: global timeout reached: %v", name, ns, d.globalTimeout())
		}
		err := d.evict(ctx, &corev1.Eviction{
			Metadata:      &metav1.ObjectMeta{Namespace: ns, Name: name},
			DeleteOptions: d.deleteOptions(),
		})
		if err == nil {
			break
		}
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case ctx.Err() != nil:
			continue // the timeout's error, above
		case apierrors.IsTooManyRequests(err):
			fmt.Fprintf(d.errOut, "error when evicting pods/%q -n %q (will retry after %v): %v\n", name, ns, d.retryDelay, err)
			d.sleep(ctx, d.retryDelay)
		case apierrors.IsForbidden(err) && hasCause(err, namespaceTerminatingCause):
			if active.GetMetadata().GetDeletionTimestamp() != nil {
				break attempts // deleted with its namespace: wait for it
			}
			fmt.Fprintf(d.errOut, "error when evicting pod %q from terminating namespace %q (will retry after %v): %v\n", name, ns, d.retryDelay, err)
			d.sleep(ctx, d.retryDelay)
		default:
			return fmt.Errorf("error when evicting pods/%q -n %q: %v", name, ns, err)
		}
		if fresh, err := d.pods.Get(ctx, ns, name); err == nil {
			active = fresh
		}
	}
	if err := d.waitGone(ctx, active); err != nil {
		return fmt.Errorf("error when waiting for pod %q in namespace %q to terminate: %v", name, ns, err)
	}
	fmt.Fprintf(d.out, "pod/%s evicted\n", name)
	return nil
}

// deletePods deletes the pods one after the other, then waits for them.
func (d *drainer) deletePods(ctx context.Context, pods []*corev1.Pod) error {
	ctx, stop := d.withTimeout(ctx)
	defer stop()
	for _, p := range pods {
		_, err := d.pods.Delete(ctx, &metav1.DeleteRequest{
			Namespace: p.GetMetadata().GetNamespace(), Name: p.GetMetadata().GetName(),
			GracePeriodSeconds: d.deleteOptions().GracePeriodSeconds,
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	results := make(chan error, len(pods))
	for _, p := range pods {
		go func() {
			err := d.waitGone(ctx, p)
			if err == nil {
				fmt.Fprintf(d.out, "pod/%s deleted\n", p.GetMetadata().GetName())
			}
			results <- err
		}()
	}
	var first error
	for range pods {
		if err := <-results; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// sleep waits d on the drainer's clock, or until ctx ends.
func (d *drainer) sleep(ctx context.Context, dur time.Duration) {
	t := d.clock.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C():
	case <-ctx.Done():
	}
}

// waitGone waits until the pod is deleted or replaced by another of its
// name (another uid): it reads the pod, then watches it from there.
func (d *drainer) waitGone(ctx context.Context, pod *corev1.Pod) error {
	ns, name, uid := pod.GetMetadata().GetNamespace(), pod.GetMetadata().GetName(), pod.GetMetadata().GetUid()
	gone := func(p *corev1.Pod) bool { return p.GetMetadata().GetUid() != uid }
	for {
		cur, err := d.pods.Get(ctx, ns, name)
		if apierrors.IsNotFound(err) || (err == nil && gone(cur)) {
			return nil
		}
		if err != nil {
			return timeoutCause(ctx, err)
		}
		w, err := d.pods.Watch(ctx, &metav1.ListOptions{Namespace: ns, FieldSelector: "metadata.name=" + name,
			ResourceVersion: cur.GetMetadata().GetResourceVersion()})
		if err != nil {
			return timeoutCause(ctx, err)
		}
		for {
			ev, err := w.Next()
			if err != nil {
				w.Stop()
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				if errors.Is(err, io.EOF) || apierrors.IsServiceUnavailable(err) || apierrors.IsExpired(err) {
					break // read it again and watch anew
				}
				return err
			}
			if ev.Type == "DELETED" || (ev.Type != "BOOKMARK" && gone(ev.Object)) {
				w.Stop()
				return nil
			}
		}
	}
}

// timeoutCause is err, or the context's cause when the context ended.
func timeoutCause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

func hasCause(err error, reason string) bool {
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		return false
	}
	for _, c := range se.Status.GetDetails().GetCauses() {
		if c.GetReason() == reason {
			return true
		}
	}
	return false
}
