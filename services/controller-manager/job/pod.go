package job

import (
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
)

// The names Kubernetes gives a Job's pods' finalizer, annotations, labels
// and environment.
const (
	// TrackingFinalizer holds a Job's pod until the Job has counted it.
	TrackingFinalizer = "batch.kubernetes.io/job-tracking"
	// CompletionIndexAnnotation (and label) is an Indexed Job's pod's index.
	CompletionIndexAnnotation = "batch.kubernetes.io/job-completion-index"
	// IndexFailureCountAnnotation counts the failures of the index before
	// this pod (backoffLimitPerIndex).
	IndexFailureCountAnnotation = "batch.kubernetes.io/job-index-failure-count"
	// IndexIgnoredFailureCountAnnotation counts the failures of the index
	// the pod failure policy ignored.
	IndexIgnoredFailureCountAnnotation = "batch.kubernetes.io/job-index-ignored-failure-count"
	// CompletionIndexEnv is the environment variable holding the index.
	CompletionIndexEnv = "JOB_COMPLETION_INDEX"
)

// unknownIndex is the index of a pod without a valid one.
const unknownIndex = -1

// completionIndex returns p's completion index, or unknownIndex.
func completionIndex(p *corev1.Pod) int {
	v, ok := p.GetMetadata().GetAnnotations()[CompletionIndexAnnotation]
	if !ok {
		return unknownIndex
	}
	ix, err := strconv.Atoi(v)
	if err != nil || ix < 0 {
		return unknownIndex
	}
	return ix
}

func hasTrackingFinalizer(p *corev1.Pod) bool {
	return slices.Contains(p.GetMetadata().GetFinalizers(), TrackingFinalizer)
}

func isIndexed(j *batchv1.Job) bool { return j.GetSpec().GetCompletionMode() == "Indexed" }

// onlyReplaceFailedPods: a pod is replaced (and counted failed) only once
// it is Failed, not as soon as it is terminating.
func onlyReplaceFailedPods(j *batchv1.Job) bool {
	return j.GetSpec().GetPodReplacementPolicy() == "Failed" || j.GetSpec().GetPodFailurePolicy() != nil
}

// isPodFailed says whether p counts as failed: Failed, or (unless only
// failed pods are replaced) deleted before it succeeded, as an orphan pod
// may never reach the Failed phase (Kubernetes' isPodFailed).
func isPodFailed(p *corev1.Pod, j *batchv1.Job) bool {
	ph := p.GetStatus().GetPhase()
	if ph == "Failed" {
		return true
	}
	if onlyReplaceFailedPods(j) {
		return false
	}
	return p.GetMetadata().GetDeletionTimestamp() != nil && ph != "Succeeded"
}

// isTerminating says whether p is being deleted and not finished.
func isTerminating(p *corev1.Pod) bool {
	ph := p.GetStatus().GetPhase()
	return p.GetMetadata().GetDeletionTimestamp() != nil && ph != "Failed" && ph != "Succeeded"
}

// finishedTime is when p finished: its containers' last finishedAt, else
// its deletion, else its Ready condition's last change, else now.
func finishedTime(p *corev1.Pod, now time.Time) time.Time {
	var t time.Time
	for _, c := range p.GetStatus().GetContainerStatuses() {
		if f := c.GetState().GetTerminated().GetFinishedAt(); f != nil && f.AsTime().After(t) {
			t = f.AsTime()
		}
	}
	if !t.IsZero() {
		return t
	}
	if d := p.GetMetadata().GetDeletionTimestamp(); d != nil {
		return d.AsTime()
	}
	if c := controllerutil.PodReadyCondition(p); c.GetLastTransitionTime() != nil {
		return c.GetLastTransitionTime().AsTime()
	}
	return now
}

// annotationInt reads a non-negative integer annotation (0 if absent or bad).
func annotationInt(p *corev1.Pod, key string) int {
	n, err := strconv.Atoi(p.GetMetadata().GetAnnotations()[key])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// newPod returns a pod of j from its template: generateName "<job>-" (an
// Indexed Job's: "<job>-<index>-", with the index as annotation, label,
// hostname "<job>-<index>" and JOB_COMPLETION_INDEX in every container),
// the Job's controller reference and the tracking finalizer. failures is
// the index's failure count so far (backoffLimitPerIndex), ignored the
// failures the pod failure policy ignored; both are written only when set.
func newPod(j *batchv1.Job, index int, failures, ignored int) *corev1.Pod {
	t := j.GetSpec().GetTemplate()
	m := j.GetMetadata()
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{
			Namespace:       m.GetNamespace(),
			GenerateName:    m.GetName() + "-",
			Labels:          map[string]string{},
			Annotations:     map[string]string{},
			OwnerReferences: []*metav1.OwnerReference{controllerutil.NewControllerRef(j)},
			Finalizers:      []string{TrackingFinalizer},
		},
		Spec: proto.Clone(t.GetSpec()).(*corev1.PodSpec),
	}
	if p.Spec == nil {
		p.Spec = &corev1.PodSpec{}
	}
	for k, v := range t.GetMetadata().GetLabels() {
		p.Metadata.Labels[k] = v
	}
	for k, v := range t.GetMetadata().GetAnnotations() {
		p.Metadata.Annotations[k] = v
	}
	if index != unknownIndex {
		ix := strconv.Itoa(index)
		p.Metadata.GenerateName = m.GetName() + "-" + ix + "-"
		p.Metadata.Annotations[CompletionIndexAnnotation] = ix
		p.Metadata.Labels[CompletionIndexAnnotation] = ix
		if p.Spec.Hostname == "" {
			p.Spec.Hostname = m.GetName() + "-" + ix
		}
		env := &corev1.EnvVar{Name: CompletionIndexEnv, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{ApiVersion: "v1", FieldPath: "metadata.annotations['" + CompletionIndexAnnotation + "']"}}}
		for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
			if !slices.ContainsFunc(c.Env, func(e *corev1.EnvVar) bool { return e.GetName() == CompletionIndexEnv }) {
				c.Env = append(c.Env, proto.Clone(env).(*corev1.EnvVar))
			}
		}
		if j.GetSpec().BackoffLimitPerIndex != nil {
			p.Metadata.Annotations[IndexFailureCountAnnotation] = strconv.Itoa(failures)
			if ignored > 0 {
				p.Metadata.Annotations[IndexIgnoredFailureCountAnnotation] = strconv.Itoa(ignored)
			}
		}
	}
	return p
}
