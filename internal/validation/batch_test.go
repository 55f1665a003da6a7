package validation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/defaults"
	"skiff.dev/internal/validation"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// defaultedJob is a Job "pi" as the apiserver holds it after defaults.
func defaultedJob() *batchv1.Job {
	j := &batchv1.Job{
		Metadata: &metav1.ObjectMeta{Name: "pi", Namespace: "default", Uid: "u-1"},
		Spec: &batchv1.JobSpec{Template: &corev1.PodTemplateSpec{
			Spec: &corev1.PodSpec{RestartPolicy: "Never", Containers: []*corev1.Container{{Name: "pi", Image: "perl"}}},
		}},
	}
	defaults.Job(j)
	return j
}

func indexed(completions int32) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		j.Spec.CompletionMode = "Indexed"
		j.Spec.Completions = ptr(completions)
	}
}

func TestJobValid(t *testing.T) {
	j := defaultedJob()
	before := proto.Clone(j)
	expectErrors(t, validation.Job(j), nil)
	unchanged(t, before, j)
}

func TestJobRules(t *testing.T) {
	exitRule := func(action, op string, vals ...int32) *batchv1.PodFailurePolicyRule {
		return &batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: vals}}
	}
	pfp := func(rules ...*batchv1.PodFailurePolicyRule) func(*batchv1.Job) {
		return func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules}
			j.Spec.PodReplacementPolicy = "Failed"
		}
	}
	all := func(fs ...func(*batchv1.Job)) func(*batchv1.Job) {
		return func(j *batchv1.Job) {
			for _, f := range fs {
				f(j)
			}
		}
	}
	cases := []struct {
		name   string
		mutate func(*batchv1.Job)
		want   []string
	}{
		{"restartPolicy Always", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "Always" }, []string{"spec.template.spec.restartPolicy: Unsupported value"}},
		{"restartPolicy OnFailure", func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "OnFailure" }, nil},
		{"negative parallelism", func(j *batchv1.Job) { j.Spec.Parallelism = ptr[int32](-1) }, []string{"spec.parallelism: Invalid value"}},
		{"negative completions", func(j *batchv1.Job) { j.Spec.Completions = ptr[int32](-1) }, []string{"spec.completions: Invalid value"}},
		{"negative backoffLimit", func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr[int32](-1) }, []string{"spec.backoffLimit: Invalid value"}},
		{"zero activeDeadlineSeconds", func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr[int64](0) }, []string{"spec.activeDeadlineSeconds: Invalid value"}},
		{"completion mode unknown", func(j *batchv1.Job) { j.Spec.CompletionMode = "Sometimes" }, []string{"spec.completionMode: Unsupported value"}},
		{"Indexed without completions", func(j *batchv1.Job) { j.Spec.CompletionMode = "Indexed"; j.Spec.Completions = nil }, []string{"spec.completions: Required value"}},
		{"Indexed", indexed(5), nil},
		{"backoffLimitPerIndex without Indexed", func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr[int32](1) }, []string{"spec.backoffLimitPerIndex: Invalid value"}},
		{"backoffLimitPerIndex with OnFailure", all(indexed(5), func(j *batchv1.Job) {
			j.Spec.BackoffLimitPerIndex = ptr[int32](1)
			j.Spec.Template.Spec.RestartPolicy = "OnFailure"
		}), []string{"spec.template.spec.restartPolicy: Invalid value"}},
		{"maxFailedIndexes without backoffLimitPerIndex", all(indexed(5), func(j *batchv1.Job) { j.Spec.MaxFailedIndexes = ptr[int32](1) }),
			[]string{"spec.backoffLimitPerIndex: Required value"}},
		{"maxFailedIndexes above completions", all(indexed(5), func(j *batchv1.Job) {
			j.Spec.BackoffLimitPerIndex = ptr[int32](1)
			j.Spec.MaxFailedIndexes = ptr[int32](6)
		}), []string{"spec.maxFailedIndexes: Invalid value"}},
		{"podFailurePolicy FailJob on exit code", pfp(exitRule("FailJob", "In", 42)), nil},
		{"podFailurePolicy with OnFailure", all(pfp(exitRule("FailJob", "In", 42)), func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "OnFailure" }),
			[]string{"spec.template.spec.restartPolicy: Invalid value"}},
		{"podFailurePolicy replacement TerminatingOrFailed", all(pfp(exitRule("FailJob", "In", 42)), func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = "TerminatingOrFailed" }),
			[]string{"spec.podReplacementPolicy: Unsupported value"}},
		{"podFailurePolicy action missing", pfp(exitRule("", "In", 1)), []string{"spec.podFailurePolicy.rules[0].action: Required value"}},
		{"podFailurePolicy action unknown", pfp(exitRule("Retry", "In", 1)), []string{"spec.podFailurePolicy.rules[0].action: Unsupported value"}},
		{"podFailurePolicy FailIndex without backoffLimitPerIndex", pfp(exitRule("FailIndex", "In", 1)), []string{"spec.podFailurePolicy.rules[0].action: Invalid value"}},
		{"podFailurePolicy In 0", pfp(exitRule("Count", "In", 0, 1)), []string{"spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value"}},
		{"podFailurePolicy values unordered and duplicated", pfp(exitRule("Count", "NotIn", 3, 1, 1)),
			[]string{"spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value", "spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value"}},
		{"podFailurePolicy no values", pfp(exitRule("Count", "In")), []string{"spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value"}},
		{"podFailurePolicy operator missing", pfp(exitRule("Count", "", 1)), []string{"spec.podFailurePolicy.rules[0].onExitCodes.operator: Required value"}},
		{"podFailurePolicy unknown container", all(pfp(exitRule("Count", "In", 1)), func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy.Rules[0].OnExitCodes.ContainerName = ptr("nope")
		}), []string{"spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value"}},
		{"podFailurePolicy neither requirement", pfp(&batchv1.PodFailurePolicyRule{Action: "Ignore"}), []string{"spec.podFailurePolicy.rules[0]: Invalid value"}},
		{"podFailurePolicy both requirements", pfp(&batchv1.PodFailurePolicyRule{Action: "Ignore",
			OnExitCodes:     &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{1}},
			OnPodConditions: []*batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: "DisruptionTarget", Status: "True"}}}),
			[]string{"spec.podFailurePolicy.rules[0]: Invalid value"}},
		{"podFailurePolicy condition status bad", pfp(&batchv1.PodFailurePolicyRule{Action: "Ignore",
			OnPodConditions: []*batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: "DisruptionTarget", Status: "Maybe"}}}),
			[]string{"spec.podFailurePolicy.rules[0].onPodConditions[0].status: Unsupported value"}},
		{"successPolicy without Indexed", func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []*batchv1.SuccessPolicyRule{{SucceededCount: ptr[int32](1)}}}
		}, []string{"spec.successPolicy: Invalid value"}},
		{"successPolicy Indexed", all(indexed(10), func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []*batchv1.SuccessPolicyRule{{SucceededIndexes: ptr("0,2-4"), SucceededCount: ptr[int32](2)}}}
		}), nil},
		{"successPolicy bad indexes and count", all(indexed(10), func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []*batchv1.SuccessPolicyRule{
				{SucceededIndexes: ptr("3,1")}, {SucceededIndexes: ptr("0-10")}, {SucceededIndexes: ptr("0-1"), SucceededCount: ptr[int32](3)}, {}}}
		}), []string{
			"spec.successPolicy.rules[0].succeededIndexes: Invalid value", "spec.successPolicy.rules[1].succeededIndexes: Invalid value",
			"spec.successPolicy.rules[2].succeededCount: Invalid value", "spec.successPolicy.rules[3]: Required value"}},
		{"successPolicy empty", all(indexed(10), func(j *batchv1.Job) { j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{} }),
			[]string{"spec.successPolicy.rules: Required value"}},
		{"selector not generated", func(j *batchv1.Job) { j.Spec.Selector.MatchLabels["batch.kubernetes.io/controller-uid"] = "other" },
			[]string{"spec.selector: Invalid value", "spec.template.metadata.labels: Invalid value"}},
		{"template label conflicting", func(j *batchv1.Job) { j.Spec.Template.Metadata.Labels["job-name"] = "other" },
			[]string{"spec.template.metadata.labels[job-name]: Invalid value"}},
		{"manual selector matching", func(j *batchv1.Job) {
			j.Spec.ManualSelector = ptr(true)
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"job-name": "pi"}}
		}, nil},
		{"manual selector missing", func(j *batchv1.Job) { j.Spec.ManualSelector = ptr(true); j.Spec.Selector = nil },
			[]string{"spec.selector: Required value"}},
		{"client-side: no uid, no selector yet", func(j *batchv1.Job) {
			j.Metadata.Uid = ""
			j.Spec.Selector = nil
		}, nil},
		{"managedBy not a path", func(j *batchv1.Job) { j.Spec.ManagedBy = ptr("kueue") }, []string{"spec.managedBy: Invalid value"}},
		{"managedBy", func(j *batchv1.Job) { j.Spec.ManagedBy = ptr("kueue.x-k8s.io/multikueue") }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := defaultedJob()
			c.mutate(j)
			expectErrors(t, validation.Job(j), c.want)
		})
	}
}

func TestJobUpdateRules(t *testing.T) {
	cases := []struct {
		name   string
		old    func(*batchv1.Job)
		mutate func(*batchv1.Job)
		want   []string
	}{
		{"parallelism may change", nil, func(j *batchv1.Job) { j.Spec.Parallelism = ptr[int32](4) }, nil},
		{"completions immutable", nil, func(j *batchv1.Job) { j.Spec.Completions = ptr[int32](4) }, []string{"spec.completions: Invalid value"}},
		{"Indexed completions with parallelism", indexed(5), func(j *batchv1.Job) { j.Spec.Completions = ptr[int32](7); j.Spec.Parallelism = ptr[int32](7) }, nil},
		{"Indexed completions alone", indexed(5), func(j *batchv1.Job) { j.Spec.Completions = ptr[int32](7) }, []string{"spec.completions: Invalid value"}},
		{"template immutable", nil, func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "python" }, []string{"spec.template: Invalid value"}},
		{"suspended, not started: nodeSelector may change", func(j *batchv1.Job) { j.Spec.Suspend = ptr(true) },
			func(j *batchv1.Job) { j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"} }, nil},
		{"completionMode immutable", nil, func(j *batchv1.Job) { j.Spec.CompletionMode = "Indexed" }, []string{"spec.completionMode: Invalid value"}},
		{"selector immutable", nil, func(j *batchv1.Job) { j.Spec.Selector.MatchLabels["job-name"] = "pi" },
			[]string{"spec.selector: Invalid value", "spec.selector: Invalid value"}}, // and not auto-generated,
		{"suspend may change", nil, func(j *batchv1.Job) { j.Spec.Suspend = ptr(true) }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := defaultedJob()
			if c.old != nil {
				c.old(old)
			}
			old.Metadata.ResourceVersion = "5"
			cur := proto.Clone(old).(*batchv1.Job)
			c.mutate(cur)
			expectErrors(t, validation.JobUpdate(cur, old), c.want)
		})
	}
}
