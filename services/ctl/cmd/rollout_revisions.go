package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/object"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	crhistory "skiff.dev/services/controller-manager/history"
	"skiff.dev/services/ctl/describe"
)

// DaemonSets and StatefulSets keep their history in ControllerRevisions
// (the controller-manager's history package): each holds the patch
// {"spec":{"template":...}} that restores one template, a revision
// number, and the owner's annotations at the time (so the change cause).

// DaemonSetRolloutStatus is kubectl's DaemonSetStatusViewer.
func DaemonSetRolloutStatus(ds *appsv1.DaemonSet) (string, bool, error) {
	if t := ds.GetSpec().GetUpdateStrategy().GetType(); t != "RollingUpdate" {
		return "", true, fmt.Errorf("rollout status is only available for RollingUpdate strategy type")
	}
	name, st := ds.GetMetadata().GetName(), ds.GetStatus()
	if ds.GetMetadata().GetGeneration() > st.GetObservedGeneration() {
		return "Waiting for daemon set spec update to be observed...", false, nil
	}
	switch desired := st.GetDesiredNumberScheduled(); {
	case st.GetUpdatedNumberScheduled() < desired:
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...", name, st.GetUpdatedNumberScheduled(), desired), false, nil
	case st.GetNumberAvailable() < desired:
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...", name, st.GetNumberAvailable(), desired), false, nil
	}
	return fmt.Sprintf("daemon set %q successfully rolled out", name), true, nil
}

// StatefulSetRolloutStatus is kubectl's StatefulSetStatusViewer: partition
// aware, then currentRevision == updateRevision.
func StatefulSetRolloutStatus(sts *appsv1.StatefulSet) (string, bool, error) {
	strategy := sts.GetSpec().GetUpdateStrategy()
	if strategy.GetType() != "" && strategy.GetType() != "RollingUpdate" {
		return "", true, fmt.Errorf("rollout status is only available for RollingUpdate strategy type")
	}
	st := sts.GetStatus()
	if st.GetObservedGeneration() == 0 || sts.GetMetadata().GetGeneration() > st.GetObservedGeneration() {
		return "Waiting for statefulset spec update to be observed...", false, nil
	}
	replicas := sts.GetSpec().Replicas
	if replicas != nil && st.GetReadyReplicas() < *replicas {
		return fmt.Sprintf("Waiting for %d pods to be ready...", *replicas-st.GetReadyReplicas()), false, nil
	}
	if ru := strategy.GetRollingUpdate(); ru != nil {
		if replicas != nil && ru.Partition != nil {
			if want := *replicas - *ru.Partition; st.GetUpdatedReplicas() < want {
				return fmt.Sprintf("Waiting for partitioned roll out to finish: %d out of %d new pods have been updated...", st.GetUpdatedReplicas(), want), false, nil
			}
		}
		return fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...", st.GetUpdatedReplicas()), true, nil
	}
	if st.GetUpdateRevision() != st.GetCurrentRevision() {
		return fmt.Sprintf("waiting for statefulset rolling update to complete %d pods at revision %s...", st.GetUpdatedReplicas(), st.GetUpdateRevision()), false, nil
	}
	return fmt.Sprintf("statefulset rolling update complete %d pods at revision %s...", st.GetCurrentReplicas(), st.GetCurrentRevision()), true, nil
}

// followStatus prints status(obj) for object ns/name each time it changes
// until it is done (or at once without watch): kubectl's rollout status
// loop, for any kind.
func followStatus[T object.Object, L proto.Message](ctx context.Context, r *root, res *client.Resource[T, L], kind, ns, name string, watch bool, status func(T) (string, bool, error)) error {
	last := ""
	report := func(obj T) (bool, error) {
		msg, done, err := status(obj)
		if err != nil {
			return false, &exitError{code: 1, msg: err.Error()}
		}
		if msg != last {
			fmt.Fprintln(r.env.Out, msg)
			last = msg
		}
		return done, nil
	}
	for {
		obj, err := res.Get(ctx, ns, name)
		if err != nil {
			return r.timedOut(ctx, err)
		}
		done, err := report(obj)
		if err != nil || done || !watch {
			return err
		}
		w, err := res.Watch(ctx, &metav1.ListOptions{Namespace: ns, FieldSelector: "metadata.name=" + name, ResourceVersion: obj.GetMetadata().GetResourceVersion()})
		if err != nil {
			return r.timedOut(ctx, err)
		}
	events:
		for {
			ev, err := w.Next()
			if err != nil {
				w.Stop()
				if ctx.Err() != nil {
					return r.timedOut(ctx, err)
				}
				if errors.Is(err, io.EOF) || apierrors.IsServiceUnavailable(err) || apierrors.IsExpired(err) {
					break events // read it again, watch again
				}
				return err
			}
			switch ev.Type {
			case "DELETED":
				w.Stop()
				return fmt.Errorf("%s %q was deleted", kind, name)
			case "ADDED", "MODIFIED":
				done, err := report(ev.Object)
				if err != nil || done {
					w.Stop()
					return err
				}
			}
		}
	}
}

// revisionOwner is a DaemonSet or a StatefulSet read for its history.
type revisionOwner struct {
	ref      string // daemonset.apps/<name>
	uid      string
	template *corev1.PodTemplateSpec
	update   func(ctx context.Context, t *corev1.PodTemplateSpec) error
}

func getRevisionOwner(ctx context.Context, conn grpcConn, kind, ns, name string) (*revisionOwner, error) {
	switch kind {
	case "DaemonSet":
		ds, err := client.DaemonSets(conn).Get(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		return &revisionOwner{ref: "daemonset.apps/" + name, uid: ds.GetMetadata().GetUid(), template: ds.GetSpec().GetTemplate(),
			update: func(ctx context.Context, t *corev1.PodTemplateSpec) error {
				ds.Spec.Template = t
				_, err := client.DaemonSets(conn).Update(ctx, ds)
				return err
			}}, nil
	case "StatefulSet":
		sts, err := client.StatefulSets(conn).Get(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		return &revisionOwner{ref: "statefulset.apps/" + name, uid: sts.GetMetadata().GetUid(), template: sts.GetSpec().GetTemplate(),
			update: func(ctx context.Context, t *corev1.PodTemplateSpec) error {
				sts.Spec.Template = t
				_, err := client.StatefulSets(conn).Update(ctx, sts)
				return err
			}}, nil
	}
	return nil, fmt.Errorf("no rollout history for kind %s", kind)
}

// ownedRevisions are the ControllerRevisions uid controls, by revision.
func ownedRevisions(ctx context.Context, conn grpcConn, ns, uid string) ([]*appsv1.ControllerRevision, error) {
	items, err := listAll(ctx, client.ControllerRevisions(conn), listOptions(ns, "", ""))
	if err != nil {
		return nil, err
	}
	var out []*appsv1.ControllerRevision
	for _, cr := range items {
		if controlledByUID(cr.GetMetadata().GetOwnerReferences(), uid) {
			out = append(out, cr)
		}
	}
	crhistory.SortControllerRevisions(out)
	return out, nil
}

// printRevisionHistory is kubectl's DaemonSet/StatefulSet history viewer.
func (r *root) printRevisionHistory(ctx context.Context, conn grpcConn, kind, ns, name string, revision int64) error {
	owner, err := getRevisionOwner(ctx, conn, kind, ns, name)
	if err != nil {
		return err
	}
	revs, err := ownedRevisions(ctx, conn, ns, owner.uid)
	if err != nil {
		return err
	}
	if revision > 0 {
		i := slices.IndexFunc(revs, func(cr *appsv1.ControllerRevision) bool { return cr.GetRevision() == revision })
		if i < 0 {
			return fmt.Errorf("unable to find the specified revision")
		}
		t, err := crhistory.TemplateFromPatch(revs[i].GetData())
		if err != nil {
			return err
		}
		fmt.Fprintf(r.env.Out, "%s with revision #%d\n", owner.ref, revision)
		return describe.PodTemplate(r.env.Out, t)
	}
	fmt.Fprintln(r.env.Out, owner.ref)
	tw := newTable(r.env.Out)
	fmt.Fprintln(tw, "REVISION\tCHANGE-CAUSE")
	for _, cr := range revs {
		cause := cr.GetMetadata().GetAnnotations()[changeCauseAnnotation]
		if cause == "" {
			cause = "<none>"
		}
		fmt.Fprintf(tw, "%d\t%s\n", cr.GetRevision(), cause)
	}
	tw.Flush()
	fmt.Fprintln(r.env.Out)
	return nil
}

// undoToRevision is kubectl's DaemonSet/StatefulSet rollbacker: the
// template of revision toRevision (0: the one before the newest) becomes
// the owner's again. It returns kubectl's result words.
func undoToRevision(ctx context.Context, conn grpcConn, kind, ns, name string, toRevision int64, dryRun bool) (string, error) {
	owner, err := getRevisionOwner(ctx, conn, kind, ns, name)
	if err != nil {
		return "", err
	}
	revs, err := ownedRevisions(ctx, conn, ns, owner.uid)
	if err != nil {
		return "", err
	}
	var to *appsv1.ControllerRevision
	switch {
	case toRevision > 0:
		i := slices.IndexFunc(revs, func(cr *appsv1.ControllerRevision) bool { return cr.GetRevision() == toRevision })
		if i < 0 {
			return "", fmt.Errorf("unable to find specified revision %d in history", toRevision)
		}
		to = revs[i]
	case len(revs) < 2:
		return "", fmt.Errorf("no last revision to roll back to")
	default:
		to = revs[len(revs)-2]
	}
	t, err := crhistory.TemplateFromPatch(to.GetData())
	if err != nil {
		return "", err
	}
	if proto.Equal(t, owner.template) {
		return fmt.Sprintf("skipped rollback (current template already matches revision %d)", to.GetRevision()), nil
	}
	if !dryRun {
		if err := owner.update(ctx, t); err != nil {
			return "", err
		}
	}
	return "rolled back", nil
}
