package validation

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/defaults"
	"skiff.dev/internal/field"
	"skiff.dev/internal/labels"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
)

// Limits of a Job's spec, Kubernetes' (pkg/apis/batch/validation).
const (
	maxParallelismForIndexedJob              = 100_000
	completionsSoftLimit                     = 100_000
	parallelismLimitForHighCompletions       = 10_000
	maxFailedIndexesLimitForHighCompletions  = 10_000
	maxPodFailurePolicyRules                 = 20
	maxPodFailurePolicyOnExitCodesValues     = 255
	maxPodFailurePolicyOnPodConditionsValues = 20
	maxSuccessPolicyRules                    = 20
	maxSucceededIndexesLength                = 64 * 1024
	maxManagedByLength                       = 63
)

var (
	jobCompletionModes        = []string{"Indexed", "NonIndexed"}
	jobPodReplacementPolicies = []string{"Failed", "TerminatingOrFailed"}
	podFailurePolicyActions   = []string{"Count", "FailIndex", "FailJob", "Ignore"}
	onExitCodesOperators      = []string{"In", "NotIn"}
	conditionStatuses         = []string{"False", "True", "Unknown"}
)

// Job validates a batch/v1 Job being created: metadata (a DNS subdomain
// name), the selector and template labels the apiserver generated (unless
// spec.manualSelector), and the spec (see JobSpec). An object without a
// uid is a client's check before sending: the server generates the
// selector then, so its absence is not an error yet.
func Job(j *batchv1.Job) field.ErrorList {
	if j == nil {
		j = &batchv1.Job{}
	}
	errs := ObjectMeta(j.Metadata, true, NameIsDNSSubdomain, field.NewPath("metadata"))
	s := j.Spec
	if s == nil {
		s = &batchv1.JobSpec{}
	}
	clientSide := j.Metadata.GetUid() == "" && !s.GetManualSelector()
	if !clientSide {
		errs = append(errs, generatedJobSelector(j)...)
	}
	return append(errs, jobSpec(s, field.NewPath("spec"), !clientSide)...)
}

// JobSpec validates a Job's spec at p, its selector included (required,
// matching the template's labels) unless the selector is generated later
// (selectorRequired false: a CronJob's jobTemplate.spec, or a client's
// check). CronJob's validation calls it for spec.jobTemplate.spec.
func JobSpec(s *batchv1.JobSpec, p *field.Path, selectorRequired bool) field.ErrorList {
	return jobSpec(s, p, selectorRequired)
}

func jobSpec(s *batchv1.JobSpec, p *field.Path, selectorRequired bool) field.ErrorList {
	if s == nil {
		s = &batchv1.JobSpec{}
	}
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		v    *int32
	}{{"parallelism", s.Parallelism}, {"completions", s.Completions}, {"backoffLimit", s.BackoffLimit}} {
		if f.v != nil {
			errs = append(errs, nonNegative(int64(*f.v), p.Child(f.name))...)
		}
	}
	if s.ActiveDeadlineSeconds != nil {
		errs = append(errs, positive(*s.ActiveDeadlineSeconds, p.Child("activeDeadlineSeconds"))...)
	}
	if s.TtlSecondsAfterFinished != nil {
		errs = append(errs, nonNegative(int64(*s.TtlSecondsAfterFinished), p.Child("ttlSecondsAfterFinished"))...)
	}
	indexed := s.CompletionMode == "Indexed"
	if s.CompletionMode != "" && !slices.Contains(jobCompletionModes, s.CompletionMode) {
		errs = append(errs, field.NotSupported(p.Child("completionMode"), s.CompletionMode, jobCompletionModes))
	}
	if indexed {
		if s.Completions == nil {
			errs = append(errs, field.Required(p.Child("completions"), "when completion mode is Indexed"))
		}
		if s.Parallelism != nil && *s.Parallelism > maxParallelismForIndexedJob {
			errs = append(errs, field.Invalid(p.Child("parallelism"), *s.Parallelism,
				fmt.Sprintf("must be less than or equal to %d when completion mode is Indexed", maxParallelismForIndexedJob)))
		}
		if s.Completions != nil && s.BackoffLimitPerIndex != nil && *s.Completions > completionsSoftLimit && s.GetParallelism() > parallelismLimitForHighCompletions {
			errs = append(errs, field.Invalid(p.Child("parallelism"), s.GetParallelism(),
				fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", parallelismLimitForHighCompletions, completionsSoftLimit)))
		}
		if s.Completions != nil && s.MaxFailedIndexes != nil && *s.Completions > completionsSoftLimit && *s.MaxFailedIndexes > maxFailedIndexesLimitForHighCompletions {
			errs = append(errs, field.Invalid(p.Child("maxFailedIndexes"), *s.MaxFailedIndexes,
				fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", maxFailedIndexesLimitForHighCompletions, completionsSoftLimit)))
		}
	}
	if v := s.BackoffLimitPerIndex; v != nil {
		errs = append(errs, nonNegative(int64(*v), p.Child("backoffLimitPerIndex"))...)
		if !indexed {
			errs = append(errs, field.Invalid(p.Child("backoffLimitPerIndex"), *v, "requires indexed completion mode"))
		}
	}
	if v := s.MaxFailedIndexes; v != nil {
		mp := p.Child("maxFailedIndexes")
		errs = append(errs, nonNegative(int64(*v), mp)...)
		if s.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Required(p.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
		if s.Completions != nil && *v > *s.Completions {
			errs = append(errs, field.Invalid(mp, *v, "must be less than or equal to completions"))
		}
		if *v > completionsSoftLimit {
			errs = append(errs, field.Invalid(mp, *v, fmt.Sprintf("must be less than or equal to %d", completionsSoftLimit)))
		}
	}
	if s.ManagedBy != nil {
		errs = append(errs, managedBy(*s.ManagedBy, p.Child("managedBy"))...)
	}
	if s.PodFailurePolicy != nil {
		errs = append(errs, podFailurePolicy(s, p.Child("podFailurePolicy"))...)
	}
	if s.SuccessPolicy != nil {
		errs = append(errs, successPolicy(s, p.Child("successPolicy"))...)
	}
	if rp := s.PodReplacementPolicy; rp != "" {
		switch {
		case s.PodFailurePolicy != nil && rp != "Failed":
			errs = append(errs, field.NotSupported(p.Child("podReplacementPolicy"), rp, []string{"Failed"}))
		case !slices.Contains(jobPodReplacementPolicies, rp):
			errs = append(errs, field.NotSupported(p.Child("podReplacementPolicy"), rp, jobPodReplacementPolicies))
		}
	}

	if selectorRequired || s.Selector != nil {
		sp := p.Child("selector")
		if s.Selector == nil {
			errs = append(errs, field.Required(sp, ""))
		} else if selErrs := LabelSelector(s.Selector, sp); len(selErrs) > 0 {
			errs = append(errs, selErrs...)
		} else if sel, err := labels.FromProto(s.Selector); err == nil && !sel.Matches(s.Template.GetMetadata().GetLabels()) {
			errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels"), labelsString(s.Template.GetMetadata().GetLabels()), "`selector` does not match template `labels`"))
		}
	}
	return append(errs, jobTemplate(s, p.Child("template"))...)
}

// jobTemplate validates a Job's pod template: a valid template whose
// restartPolicy is OnFailure or Never (Never only, with a pod failure
// policy or a backoff limit per index).
func jobTemplate(s *batchv1.JobSpec, tp *field.Path) field.ErrorList {
	t := s.Template
	if t == nil {
		return field.ErrorList{field.Required(tp, "")}
	}
	errs := podTemplateSpec(t, tp)
	rpp := tp.Child("spec", "restartPolicy")
	switch rp := t.Spec.GetRestartPolicy(); {
	case rp != "OnFailure" && rp != "Never":
		errs = append(errs, field.NotSupported(rpp, rp, []string{"OnFailure", "Never"}))
	case s.PodFailurePolicy != nil && rp != "Never":
		errs = append(errs, field.Invalid(rpp, rp, `only "Never" is supported when podFailurePolicy is specified`))
	case s.BackoffLimitPerIndex != nil && rp != "Never":
		errs = append(errs, field.Invalid(rpp, rp, `only "Never" is supported when backoffLimitPerIndex is specified`))
	}
	return errs
}

// managedBy is a domain-prefixed path of at most 63 characters.
func managedBy(v string, p *field.Path) field.ErrorList {
	if len(v) > maxManagedByLength {
		return field.ErrorList{field.TooLong(p, maxManagedByLength)}
	}
	domain, path, ok := strings.Cut(v, "/")
	if !ok || path == "" {
		return field.ErrorList{field.Invalid(p, v, "must be a domain-prefixed path (such as \"acme.io/foo\")")}
	}
	return invalidEach(p, v, isDNS1123Subdomain(domain))
}

// generatedJobSelector checks, for a Job whose selector the apiserver
// generated, that its template carries the generated labels and that the
// selector selects them (Kubernetes' ValidateGeneratedSelector).
func generatedJobSelector(j *batchv1.Job) field.ErrorList {
	s := j.GetSpec()
	if s.GetManualSelector() || s.GetSelector() == nil {
		return nil // a missing selector is reported by the spec's checks
	}
	var errs field.ErrorList
	uid, name := j.GetMetadata().GetUid(), j.GetMetadata().GetName()
	if uid == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	tl := s.GetTemplate().GetMetadata().GetLabels()
	lp := field.NewPath("spec", "template", "metadata", "labels")
	for _, l := range []struct{ key, want string }{
		{defaults.LegacyJobControllerUIDLabel, uid}, {defaults.LegacyJobNameLabel, name},
		{defaults.JobControllerUIDLabel, uid}, {defaults.JobNameLabel, name},
	} {
		v, ok := tl[l.key]
		switch {
		case !ok:
			errs = append(errs, field.Required(lp.Key(l.key), fmt.Sprintf("must be '%s'", l.want)))
		case v != l.want:
			errs = append(errs, field.Invalid(lp.Key(l.key), v, fmt.Sprintf("must be '%s'", l.want)))
		}
	}
	if sel, err := labels.FromProto(s.Selector); err == nil && !sel.Matches(map[string]string{defaults.JobControllerUIDLabel: uid}) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), selectorString(s.Selector), "`selector` not auto-generated"))
	}
	return errs
}

func podFailurePolicy(s *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rp := p.Child("rules")
	rules := s.PodFailurePolicy.GetRules()
	if len(rules) > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rp, len(rules), maxPodFailurePolicyRules))
	}
	var containers []string
	for _, c := range s.GetTemplate().GetSpec().GetContainers() {
		containers = append(containers, c.GetName())
	}
	for _, c := range s.GetTemplate().GetSpec().GetInitContainers() {
		containers = append(containers, c.GetName())
	}
	for i, r := range rules {
		errs = append(errs, podFailurePolicyRule(s, r, rp.Index(i), containers)...)
	}
	return errs
}

func podFailurePolicyRule(s *batchv1.JobSpec, r *batchv1.PodFailurePolicyRule, p *field.Path, containers []string) field.ErrorList {
	var errs field.ErrorList
	ap := p.Child("action")
	switch a := r.GetAction(); {
	case a == "":
		errs = append(errs, field.Required(ap, fmt.Sprintf("valid values: %q", podFailurePolicyActions)))
	case a == "FailIndex":
		if s.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Invalid(ap, a, "requires the backoffLimitPerIndex to be set"))
		}
	case !slices.Contains(podFailurePolicyActions, a):
		errs = append(errs, field.NotSupported(ap, a, podFailurePolicyActions))
	}
	if r.OnExitCodes != nil {
		errs = append(errs, onExitCodes(r.OnExitCodes, p.Child("onExitCodes"), containers)...)
	}
	if len(r.OnPodConditions) > 0 {
		cp := p.Child("onPodConditions")
		if len(r.OnPodConditions) > maxPodFailurePolicyOnPodConditionsValues {
			errs = append(errs, field.TooMany(cp, len(r.OnPodConditions), maxPodFailurePolicyOnPodConditionsValues))
		}
		for j, pat := range r.OnPodConditions {
			pp := cp.Index(j)
			errs = append(errs, invalidEach(pp.Child("type"), pat.GetType(), isQualifiedName(pat.GetType()))...)
			switch st := pat.GetStatus(); {
			case st == "":
				errs = append(errs, field.Required(pp.Child("status"), fmt.Sprintf("valid values: %q", conditionStatuses)))
			case !slices.Contains(conditionStatuses, st):
				errs = append(errs, field.NotSupported(pp.Child("status"), st, conditionStatuses))
			}
		}
	}
	switch {
	case r.OnExitCodes != nil && len(r.OnPodConditions) > 0:
		errs = append(errs, field.Invalid(p, "", "specifying both OnExitCodes and OnPodConditions is not supported"))
	case r.OnExitCodes == nil && len(r.OnPodConditions) == 0:
		errs = append(errs, field.Invalid(p, "", "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return errs
}

func onExitCodes(r *batchv1.PodFailurePolicyOnExitCodesRequirement, p *field.Path, containers []string) field.ErrorList {
	var errs field.ErrorList
	op := p.Child("operator")
	switch o := r.GetOperator(); {
	case o == "":
		errs = append(errs, field.Required(op, fmt.Sprintf("valid values: %q", onExitCodesOperators)))
	case !slices.Contains(onExitCodesOperators, o):
		errs = append(errs, field.NotSupported(op, o, onExitCodesOperators))
	}
	if r.ContainerName != nil && !slices.Contains(containers, *r.ContainerName) {
		errs = append(errs, field.Invalid(p.Child("containerName"), *r.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	vp := p.Child("values")
	vals := r.GetValues()
	switch {
	case len(vals) == 0:
		errs = append(errs, field.Invalid(vp, "[]", "at least one value is required"))
	case len(vals) > maxPodFailurePolicyOnExitCodesValues:
		errs = append(errs, field.TooMany(vp, len(vals), maxPodFailurePolicyOnExitCodesValues))
	default:
		seen := map[int32]bool{}
		ordered := true
		for j, v := range vals {
			if r.GetOperator() == "In" && v == 0 {
				errs = append(errs, field.Invalid(vp.Index(j), v, "must not be 0 for the In operator"))
			}
			if seen[v] {
				errs = append(errs, field.Duplicate(vp.Index(j), v))
			}
			seen[v] = true
			if j > 0 && vals[j-1] > v {
				ordered = false
			}
		}
		if !ordered {
			errs = append(errs, field.Invalid(vp, fmt.Sprint(vals), "must be ordered"))
		}
	}
	return errs
}

func successPolicy(s *batchv1.JobSpec, p *field.Path) field.ErrorList {
	if s.CompletionMode != "Indexed" {
		return field.ErrorList{field.Invalid(p, "", "requires indexed completion mode")}
	}
	var errs field.ErrorList
	rp := p.Child("rules")
	rules := s.SuccessPolicy.GetRules()
	if len(rules) == 0 {
		errs = append(errs, field.Required(rp, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(rules) > maxSuccessPolicyRules {
		errs = append(errs, field.TooMany(rp, len(rules), maxSuccessPolicyRules))
	}
	completions := s.GetCompletions()
	for i, r := range rules {
		pp := rp.Index(i)
		var total int32
		if r.SucceededIndexes != nil {
			ip := pp.Child("succeededIndexes")
			if len(*r.SucceededIndexes) > maxSucceededIndexesLength {
				errs = append(errs, field.TooLong(ip, maxSucceededIndexesLength))
			}
			n, err := indexesFormat(*r.SucceededIndexes, completions)
			if err != nil {
				errs = append(errs, field.Invalid(ip, *r.SucceededIndexes, "error parsing succeededIndexes: "+err.Error()))
			}
			total = n
		}
		if r.SucceededCount != nil {
			cp := pp.Child("succeededCount")
			errs = append(errs, nonNegative(int64(*r.SucceededCount), cp)...)
			if *r.SucceededCount > completions {
				errs = append(errs, field.Invalid(cp, *r.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
			}
			if r.SucceededIndexes != nil && *r.SucceededCount > total {
				errs = append(errs, field.Invalid(cp, *r.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total)))
			}
		}
		if r.SucceededIndexes == nil && r.SucceededCount == nil {
			errs = append(errs, field.Required(pp, "at least one of succeededCount or succeededIndexes must be specified"))
		}
	}
	return errs
}

// indexesFormat checks an index set in Kubernetes' text format ("1,3-5,7":
// increasing, non-overlapping intervals of indexes below completions) and
// returns how many indexes it holds.
func indexesFormat(s string, completions int32) (int32, error) {
	if s == "" {
		return 0, nil
	}
	var total int32
	prev := int64(-1)
	for _, frag := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(frag, "-")
		first, err := strconv.ParseInt(lo, 10, 32)
		if err != nil {
			return total, fmt.Errorf("cannot convert string to integer for index: %q", lo)
		}
		last := first
		if isRange {
			if last, err = strconv.ParseInt(hi, 10, 32); err != nil {
				return total, fmt.Errorf("cannot convert string to integer for index: %q", hi)
			}
			if first >= last {
				return total, fmt.Errorf("first index must be less than the last index, got first: %d, last: %d", first, last)
			}
		}
		switch {
		case first < 0:
			return total, fmt.Errorf("too small index: %d", first)
		case last >= int64(completions):
			return total, fmt.Errorf("too large index: %d", last)
		case first <= prev:
			return total, fmt.Errorf("non-increasing order, previous: %d, current: %d", prev, first)
		}
		total += int32(last - first + 1)
		prev = last
	}
	return total, nil
}

// JobUpdate validates an update of a Job: the new object as on create,
// immutable metadata, and what Kubernetes keeps: selector, completionMode,
// podFailurePolicy, successPolicy, backoffLimitPerIndex and managedBy;
// completions, but an Indexed Job's may change together with parallelism
// (elastic Indexed Jobs); the template, but a suspended Job that never
// started may change its pods' scheduling directives (nodeSelector,
// affinity, tolerations) and its labels and annotations.
func JobUpdate(newJ, oldJ *batchv1.Job) field.ErrorList {
	errs := ObjectMetaUpdate(newJ.GetMetadata(), oldJ.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, Job(newJ)...)
	ns, os := newJ.GetSpec(), oldJ.GetSpec()
	p := field.NewPath("spec")
	if !proto.Equal(ns.GetSelector(), os.GetSelector()) {
		errs = append(errs, field.Invalid(p.Child("selector"), selectorString(ns.GetSelector()), fieldImmutableErrorMsg))
	}
	if ns.Completions == nil || os.Completions == nil || *ns.Completions != *os.Completions {
		elastic := ns.GetCompletionMode() == "Indexed" && ns.Completions != nil && os.Completions != nil
		switch {
		case !elastic && (ns.Completions != nil || os.Completions != nil):
			errs = append(errs, field.Invalid(p.Child("completions"), fmtOptional(ns.Completions), fieldImmutableErrorMsg))
		case elastic && *ns.Completions != ns.GetParallelism():
			errs = append(errs, field.Invalid(p.Child("completions"), *ns.Completions, "can only be modified in tandem with spec.parallelism"))
		}
	}
	errs = append(errs, immutable(ns.GetCompletionMode(), os.GetCompletionMode(), p.Child("completionMode"))...)
	if !proto.Equal(ns.GetPodFailurePolicy(), os.GetPodFailurePolicy()) {
		errs = append(errs, field.Invalid(p.Child("podFailurePolicy"), "", fieldImmutableErrorMsg))
	}
	if !proto.Equal(ns.GetSuccessPolicy(), os.GetSuccessPolicy()) {
		errs = append(errs, field.Invalid(p.Child("successPolicy"), "", fieldImmutableErrorMsg))
	}
	if fmtOptional(ns.BackoffLimitPerIndex) != fmtOptional(os.BackoffLimitPerIndex) {
		errs = append(errs, field.Invalid(p.Child("backoffLimitPerIndex"), fmtOptional(ns.BackoffLimitPerIndex), fieldImmutableErrorMsg))
	}
	if fmtOptional(ns.ManagedBy) != fmtOptional(os.ManagedBy) {
		errs = append(errs, field.Invalid(p.Child("managedBy"), fmtOptional(ns.ManagedBy), fieldImmutableErrorMsg))
	}
	if !templateUpdateAllowed(ns.GetTemplate(), os.GetTemplate(), os.GetSuspend() && oldJ.GetStatus().GetStartTime() == nil) {
		errs = append(errs, field.Invalid(p.Child("template"), "", fieldImmutableErrorMsg))
	}
	return errs
}

// templateUpdateAllowed reports whether a Job's template may change from
// old to cur: not at all, but for the scheduling directives and the
// template's labels and annotations of a suspended Job not started yet.
func templateUpdateAllowed(cur, old *corev1.PodTemplateSpec, mutableScheduling bool) bool {
	if proto.Equal(cur, old) {
		return true
	}
	if !mutableScheduling || cur == nil || old == nil {
		return false
	}
	c, o := proto.Clone(cur).(*corev1.PodTemplateSpec), proto.Clone(old).(*corev1.PodTemplateSpec)
	for _, t := range []*corev1.PodTemplateSpec{c, o} {
		if t.Metadata != nil {
			t.Metadata.Labels, t.Metadata.Annotations = nil, nil
		}
		if t.Spec != nil {
			t.Spec.NodeSelector, t.Spec.Affinity, t.Spec.Tolerations = nil, nil, nil
		}
	}
	return proto.Equal(c, o)
}
