package cmd

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// InstantiateAnnotation marks a Job created by hand from a CronJob
// (create job --from=cronjob/NAME), as kubectl marks it.
const InstantiateAnnotation = "cronjob.kubernetes.io/instantiate"

func (r *root) createJobCmd() *cobra.Command {
	var (
		g           generatedFlags
		image, from string
	)
	c := &cobra.Command{
		Use:   "job NAME --image=image [--from=cronjob/name] -- [COMMAND] [args...]",
		Short: "Create a job with the specified name",
		Long: `Create a job with the specified name, as kubectl does: either of one
container running --image (the command after --, restartPolicy Never),
or from a CronJob's job template (--from=cronjob/NAME: its labels,
annotations and spec, the annotation cronjob.kubernetes.io/instantiate:
manual, and the CronJob as its controller, so that the CronJob's status
reports it as an unexpected Job and its deletion deletes the Job).`,
		Example: `  skiffctl create job my-job --image=busybox
  skiffctl create job my-job --image=busybox -- date
  skiffctl create job test-job --from=cronjob/a-cronjob`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(cmd, args)
			if err != nil {
				return err
			}
			var command []string
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				command = args[dash:]
			}
			if (image == "") == (from == "") {
				return errors.New("either --image or --from must be specified")
			}
			if len(command) > 0 && from != "" {
				return errors.New("cannot specify --from and command")
			}
			job := JobWithImage(name, image, command)
			if from != "" {
				if job, err = r.jobFromCronJob(cmd, name, from); err != nil {
					return err
				}
			}
			return r.createGenerated(cmd, &g, "batch/v1", "Job", job)
		},
	}
	c.Flags().StringVar(&image, "image", "", "the image of the Job's container")
	c.Flags().StringVar(&from, "from", "", "the resource to create the Job from (only cronjob/NAME)")
	g.add(c)
	return c
}

// jobFromCronJob reads the CronJob --from names (TYPE/NAME, any name of
// the CronJob resource) and makes Job name of it.
func (r *root) jobFromCronJob(cmd *cobra.Command, name, from string) (*batchv1.Job, error) {
	typ, cjName, ok := strings.Cut(from, "/")
	if !ok || typ == "" || cjName == "" {
		return nil, fmt.Errorf("from must be of the form TYPE/NAME: %q", from)
	}
	ctx := cmd.Context()
	m, err := r.kinds(ctx)
	if err != nil {
		return nil, err
	}
	k, err := m.ForResource(typ)
	if err != nil {
		return nil, err
	}
	if k.Kind != "CronJob" {
		return nil, fmt.Errorf("from must be an existing cronjob: %s is a %s", from, k.Kind)
	}
	ns, err := r.namespace()
	if err != nil {
		return nil, err
	}
	obj, err := r.getObject(ctx, k, ns, cjName)
	if err != nil {
		return nil, err
	}
	cj, ok := obj.(*batchv1.CronJob)
	if !ok {
		return nil, fmt.Errorf("unknown object type %T", obj)
	}
	return JobFromCronJob(cj, name), nil
}

// JobWithImage is kubectl's Job of create job --image: one container named
// as the Job, running command (if any) in image, never restarted.
func JobWithImage(name, image string, command []string) *batchv1.Job {
	return &batchv1.Job{
		Metadata: &metav1.ObjectMeta{Name: name},
		Spec: &batchv1.JobSpec{Template: &corev1.PodTemplateSpec{Spec: &corev1.PodSpec{
			Containers:    []*corev1.Container{{Name: name, Image: image, Command: command}},
			RestartPolicy: "Never",
		}}},
	}
}

// JobFromCronJob is kubectl's Job of create job --from=cronjob/NAME: the
// job template's labels and spec, its annotations over
// cronjob.kubernetes.io/instantiate: manual, and an owner reference to the
// CronJob with controller true (without blockOwnerDeletion, as kubectl
// writes it: that would need the cronjobs/finalizers permission).
func JobFromCronJob(cj *batchv1.CronJob, name string) *batchv1.Job {
	tmpl := cj.GetSpec().GetJobTemplate()
	annotations := map[string]string{InstantiateAnnotation: "manual"}
	maps.Copy(annotations, tmpl.GetMetadata().GetAnnotations())
	spec, _ := proto.Clone(tmpl.GetSpec()).(*batchv1.JobSpec)
	if spec == nil {
		spec = &batchv1.JobSpec{}
	}
	return &batchv1.Job{
		Metadata: &metav1.ObjectMeta{
			Name:        name,
			Labels:      maps.Clone(tmpl.GetMetadata().GetLabels()),
			Annotations: annotations,
			OwnerReferences: []*metav1.OwnerReference{{
				ApiVersion: "batch/v1",
				Kind:       "CronJob",
				Name:       cj.GetMetadata().GetName(),
				Uid:        cj.GetMetadata().GetUid(),
				Controller: proto.Bool(true),
			}},
		},
		Spec: spec,
	}
}
