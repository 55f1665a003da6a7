package cmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	deployment "skiff.dev/internal/deployutil"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/ctl/describe"
)

// Annotations kubectl's rollout commands use.
const (
	restartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"
	changeCauseAnnotation = "kubernetes.io/change-cause"
)

func (r *root) rolloutCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "rollout SUBCOMMAND",
		Short: "Manage the rollout of a deployment, daemonset or statefulset",
		Long: `Manage the rollout of a deployment, daemonset or statefulset: watch its
status, list its history, roll it back; restart a deployment's pods, pause
and resume it.`,
		Example: `  skiffctl rollout status deployment/web
  skiffctl rollout status daemonset/node-agent
  skiffctl rollout history statefulset/db
  skiffctl rollout undo deployment/web --to-revision=2
  skiffctl rollout restart deployment/web`,
	}
	c.AddCommand(r.rolloutStatusCmd(), r.rolloutHistoryCmd(), r.rolloutUndoCmd(), r.rolloutRestartCmd(),
		r.rolloutPauseCmd(true), r.rolloutPauseCmd(false))
	return c
}

// deploymentArgs resolves "deployment/web" or "deployment web" to its name.
func (r *root) deploymentArgs(ctx context.Context, args []string) (ns string, names []string, err error) {
	ns, kind, names, err := r.rolloutArgs(ctx, args)
	if err == nil && kind != "Deployment" {
		err = fmt.Errorf("no support for %s here: only deployments", kind)
	}
	return ns, names, err
}

// rolloutArgs resolves "daemonset/agent" or "statefulset web" to the kind
// (Deployment, DaemonSet or StatefulSet: one kind at a time) and names.
func (r *root) rolloutArgs(ctx context.Context, args []string) (ns, kind string, names []string, err error) {
	refs, err := r.parseResources(ctx, args)
	if err != nil {
		return "", "", nil, err
	}
	for _, ref := range refs {
		switch k := ref.kind.Kind; {
		case k != "Deployment" && k != "DaemonSet" && k != "StatefulSet":
			return "", "", nil, fmt.Errorf("no rollout support for %s: only deployments, daemonsets and statefulsets have rollouts", ref.kind.GroupResource())
		case kind != "" && k != kind:
			return "", "", nil, errors.New("rollout takes resources of one kind at a time")
		default:
			kind = k
		}
		if len(ref.names) == 0 {
			return "", "", nil, errors.New("required resource not specified")
		}
		names = append(names, ref.names...)
	}
	ns, err = r.namespace()
	return ns, kind, names, err
}

// RolloutStatus is kubectl's status of a deployment's rollout: a message,
// whether it is done, and an error when its progress deadline passed.
func RolloutStatus(d *appsv1.Deployment) (string, bool, error) {
	name := d.GetMetadata().GetName()
	st := d.GetStatus()
	if d.GetMetadata().GetGeneration() > st.GetObservedGeneration() {
		return "Waiting for deployment spec update to be observed...", false, nil
	}
	for _, c := range st.GetConditions() {
		if c.GetType() == "Progressing" && c.GetReason() == "ProgressDeadlineExceeded" {
			return "", false, fmt.Errorf("deployment %q exceeded its progress deadline", name)
		}
	}
	replicas := d.GetSpec().GetReplicas()
	if d.GetSpec().Replicas == nil {
		replicas = 1
	}
	switch {
	case st.GetUpdatedReplicas() < replicas:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d out of %d new replicas have been updated...", name, st.GetUpdatedReplicas(), replicas), false, nil
	case st.GetReplicas() > st.GetUpdatedReplicas():
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d old replicas are pending termination...", name, st.GetReplicas()-st.GetUpdatedReplicas()), false, nil
	case st.GetAvailableReplicas() < st.GetUpdatedReplicas():
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...", name, st.GetAvailableReplicas(), st.GetUpdatedReplicas()), false, nil
	}
	return fmt.Sprintf("deployment %q successfully rolled out", name), true, nil
}

func (r *root) rolloutStatusCmd() *cobra.Command {
	var (
		watch   bool
		timeout time.Duration
	)
	c := &cobra.Command{
		Use:   "status (TYPE NAME | TYPE/NAME)",
		Short: "Show the status of the rollout",
		Long: `Show the status of a rollout and, with --watch (the default), follow it
until it is done (exit 0) or, for a deployment, its progress deadline passes
(exit 1). A daemonset is done when every node that should run its pod runs
an updated, available one; a statefulset when its partition is updated and
ready (kubectl's status viewers).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ns, kind, names, err := r.rolloutArgs(ctx, args)
			if err != nil {
				return err
			}
			if len(names) != 1 {
				return errors.New("rollout status takes one resource")
			}
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			conn, err := r.connect()
			if err != nil {
				return err
			}
			switch kind {
			case "DaemonSet":
				return followStatus(ctx, r, client.DaemonSets(conn), "daemon set", ns, names[0], watch, DaemonSetRolloutStatus)
			case "StatefulSet":
				return followStatus(ctx, r, client.StatefulSets(conn), "statefulset", ns, names[0], watch, StatefulSetRolloutStatus)
			}
			return followStatus(ctx, r, client.Deployments(conn), "deployment", ns, names[0], watch, RolloutStatus)
		},
	}
	c.Flags().BoolVarP(&watch, "watch", "w", true, "follow the rollout until it ends")
	c.Flags().DurationVar(&timeout, "timeout", 0, "how long to wait (0: no limit)")
	return c
}

func (r *root) timedOut(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &exitError{code: 1, msg: "timed out waiting for the condition"}
	}
	if ctx.Err() != nil {
		return &exitError{code: 1, msg: "interrupted"}
	}
	return err
}

// history returns d and the ReplicaSets it controls, by revision.
func history(ctx context.Context, conn grpcConn, ns, name string) (*appsv1.Deployment, []*appsv1.ReplicaSet, error) {
	d, err := client.Deployments(conn).Get(ctx, ns, name)
	if err != nil {
		return nil, nil, err
	}
	items, err := listAll(ctx, client.ReplicaSets(conn), listOptions(ns, "", ""))
	if err != nil {
		return nil, nil, err
	}
	var rses []*appsv1.ReplicaSet
	for _, rs := range items {
		if controlledByUID(rs.GetMetadata().GetOwnerReferences(), d.GetMetadata().GetUid()) {
			rses = append(rses, rs)
		}
	}
	slices.SortFunc(rses, func(a, b *appsv1.ReplicaSet) int {
		ra, _ := deployment.Revision(a)
		rb, _ := deployment.Revision(b)
		return int(ra - rb)
	})
	return d, rses, nil
}

func (r *root) rolloutHistoryCmd() *cobra.Command {
	var revision int64
	c := &cobra.Command{
		Use:   "history (TYPE NAME | TYPE/NAME) [--revision=N]",
		Short: "View rollout history",
		Long: `List the revisions of a deployment (one per ReplicaSet it keeps) or of a
daemonset or statefulset (one per ControllerRevision) with their change
causes (the kubernetes.io/change-cause annotation); --revision shows the pod
template of one.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ns, kind, names, err := r.rolloutArgs(ctx, args)
			if err != nil {
				return err
			}
			conn, err := r.connect()
			if err != nil {
				return err
			}
			for _, name := range names {
				if kind != "Deployment" {
					if err := r.printRevisionHistory(ctx, conn, kind, ns, name, revision); err != nil {
						return err
					}
					continue
				}
				_, rses, err := history(ctx, conn, ns, name)
				if err != nil {
					return err
				}
				ref := "deployment.apps/" + name
				if revision > 0 {
					for _, rs := range rses {
						if v, _ := deployment.Revision(rs); v == revision {
							fmt.Fprintf(r.env.Out, "%s with revision #%d\n", ref, revision)
							tmpl := proto.Clone(rs.GetSpec().GetTemplate()).(*corev1.PodTemplateSpec)
							delete(tmpl.GetMetadata().GetLabels(), "pod-template-hash")
							return describe.PodTemplate(r.env.Out, tmpl)
						}
					}
					return fmt.Errorf("unable to find the specified revision")
				}
				fmt.Fprintln(r.env.Out, ref)
				tw := newTable(r.env.Out)
				fmt.Fprintln(tw, "REVISION\tCHANGE-CAUSE")
				for _, rs := range rses {
					v, _ := deployment.Revision(rs)
					if v == 0 {
						continue
					}
					cause := rs.GetMetadata().GetAnnotations()[changeCauseAnnotation]
					if cause == "" {
						cause = "<none>"
					}
					fmt.Fprintf(tw, "%d\t%s\n", v, cause)
				}
				tw.Flush()
				fmt.Fprintln(r.env.Out)
			}
			return nil
		},
	}
	c.Flags().Int64Var(&revision, "revision", 0, "show the pod template of this revision")
	return c
}

func (r *root) rolloutUndoCmd() *cobra.Command {
	var (
		toRevision int64
		dryRun     string
	)
	c := &cobra.Command{
		Use:   "undo (TYPE NAME | TYPE/NAME) [--to-revision=N]",
		Short: "Undo a previous rollout",
		Long: `Roll a deployment, daemonset or statefulset back to its previous revision
(or --to-revision): its pod template becomes that revision's again, and the
controller rolls it out as a new revision.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			mode, err := dryRunMode(dryRun)
			if err != nil {
				return err
			}
			ns, kind, names, err := r.rolloutArgs(ctx, args)
			if err != nil {
				return err
			}
			conn, err := r.connect()
			if err != nil {
				return err
			}
			suffix := ""
			if mode != "" {
				suffix = " (dry run)"
			}
			for _, name := range names {
				if kind != "Deployment" {
					var result string
					err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
						var err error
						result, err = undoToRevision(ctx, conn, kind, ns, name, toRevision, mode != "")
						return err
					})
					if err != nil {
						return err
					}
					fmt.Fprintf(r.env.Out, "%s.apps/%s %s%s\n", strings.ToLower(kind), name, result, suffix)
					continue
				}
				result := ""
				err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
					d, rses, err := history(ctx, conn, ns, name)
					if err != nil {
						return err
					}
					if d.GetSpec().GetPaused() {
						return fmt.Errorf("you cannot rollback a paused deployment; resume it first with 'skiffctl rollout resume deployment/%s' and try again", name)
					}
					tmpl, err := deployment.RollbackTemplate(d, rses, toRevision)
					if errors.Is(err, deployment.ErrRevisionNotFound) {
						if toRevision == 0 {
							return fmt.Errorf("no rollout history found for deployment %q", name)
						}
						return fmt.Errorf("unable to find specified revision %d in history", toRevision)
					}
					if err != nil {
						return err
					}
					if proto.Equal(tmpl, d.GetSpec().GetTemplate()) {
						rev := toRevision
						if rev == 0 {
							rev, _ = strconv.ParseInt(d.GetMetadata().GetAnnotations()[deployment.RevisionAnnotation], 10, 64)
						}
						result = fmt.Sprintf("skipped rollback (current template already matches revision %d)", rev)
						return nil
					}
					d.Spec.Template = tmpl
					if mode == "" {
						if _, err := client.Deployments(conn).Update(ctx, d); err != nil {
							return err
						}
					}
					result = "rolled back"
					return nil
				})
				if err != nil {
					return err
				}
				fmt.Fprintf(r.env.Out, "deployment.apps/%s %s%s\n", name, result, suffix)
			}
			return nil
		},
	}
	c.Flags().Int64Var(&toRevision, "to-revision", 0, "the revision to roll back to (0: the previous one)")
	c.Flags().StringVar(&dryRun, "dry-run", "none", `"none", "client" or "server"`)
	c.Flags().Lookup("dry-run").NoOptDefVal = "client"
	return c
}

// updateDeployments reads, changes and writes each deployment (retrying
// on conflict); change returns false when there is nothing to do, and its
// message.
func (r *root) updateDeployments(ctx context.Context, args []string, change func(d *appsv1.Deployment) (bool, string, error)) error {
	ns, names, err := r.deploymentArgs(ctx, args)
	if err != nil {
		return err
	}
	conn, err := r.connect()
	if err != nil {
		return err
	}
	deps := client.Deployments(conn)
	for _, name := range names {
		var msg string
		err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
			d, err := deps.Get(ctx, ns, name)
			if err != nil {
				return err
			}
			changed, m, err := change(d)
			msg = m
			if err != nil || !changed {
				return err
			}
			_, err = deps.Update(ctx, d)
			return err
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(r.env.Out, "deployment.apps/%s %s\n", name, msg)
	}
	return nil
}

func (r *root) rolloutRestartCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "restart (TYPE NAME | TYPE/NAME)",
		Short: "Restart a resource",
		Long: `Restart a deployment's pods by rolling it out again: the pod template gets
the annotation kubectl.kubernetes.io/restartedAt with the current time.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			now := r.env.Now().UTC().Format(time.RFC3339)
			return r.updateDeployments(cmd.Context(), args, func(d *appsv1.Deployment) (bool, string, error) {
				if d.GetSpec().GetPaused() {
					return false, "", fmt.Errorf("can't restart paused deployment (run rollout resume first)")
				}
				t := d.GetSpec().GetTemplate()
				if t.Metadata == nil {
					t.Metadata = &metav1.ObjectMeta{}
				}
				if t.Metadata.Annotations == nil {
					t.Metadata.Annotations = map[string]string{}
				}
				t.Metadata.Annotations[restartedAtAnnotation] = now
				return true, "restarted", nil
			})
		},
	}
}

func (r *root) rolloutPauseCmd(pause bool) *cobra.Command {
	use, past, short := "pause", "paused", "Mark the provided resource as paused"
	if !pause {
		use, past, short = "resume", "resumed", "Resume a paused resource"
	}
	return &cobra.Command{
		Use:   use + " (TYPE NAME | TYPE/NAME)",
		Short: short,
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.updateDeployments(cmd.Context(), args, func(d *appsv1.Deployment) (bool, string, error) {
				if d.GetSpec().GetPaused() == pause {
					if pause {
						return false, "already paused", nil
					}
					return false, "is not paused", nil
				}
				d.Spec.Paused = pause
				return true, past, nil
			})
		},
	}
}
