package printers

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"skiff.dev/internal/object"
	"skiff.dev/internal/storageclass"
	appsv1 "skiff.dev/proto/apps/v1"
	batchv1 "skiff.dev/proto/batch/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	nodev1 "skiff.dev/proto/node/v1"
	policyv1 "skiff.dev/proto/policy/v1"
	schedulingv1 "skiff.dev/proto/scheduling/v1"
	storagev1 "skiff.dev/proto/storage/v1"
)

// workloadColumns are kubectl's columns of the batch, DaemonSet,
// StatefulSet and storage kinds.
func workloadColumns(obj object.Object) (columns, bool) {
	wide := []string{"CONTAINERS", "IMAGES", "SELECTOR"}
	switch obj.(type) {
	case *batchv1.Job:
		return columns{[]string{"NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"}, wide, jobRow}, true
	case *batchv1.CronJob:
		return columns{[]string{"NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"}, wide, cronJobRow}, true
	case *appsv1.DaemonSet:
		return columns{[]string{"NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"}, wide, daemonSetRow}, true
	case *appsv1.StatefulSet:
		return columns{[]string{"NAME", "READY", "AGE"}, []string{"CONTAINERS", "IMAGES"}, statefulSetRow}, true
	case *appsv1.ControllerRevision:
		return columns{[]string{"NAME", "CONTROLLER", "REVISION", "AGE"}, nil, controllerRevisionRow}, true
	case *corev1.PersistentVolume:
		return columns{[]string{"NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"},
			[]string{"VOLUMEMODE"}, persistentVolumeRow}, true
	case *corev1.PersistentVolumeClaim:
		return columns{[]string{"NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"},
			[]string{"VOLUMEMODE"}, persistentVolumeClaimRow}, true
	case *policyv1.PodDisruptionBudget:
		return columns{[]string{"NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"}, nil, podDisruptionBudgetRow}, true
	case *storagev1.StorageClass:
		return columns{[]string{"NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"}, nil, storageClassRow}, true
	case *schedulingv1.PriorityClass:
		return priorityClassColumns, true
	case *nodev1.RuntimeClass:
		return runtimeClassColumns, true
	}
	return columns{}, false
}

// JobStatus is the STATUS column of a Job, as kubectl prints it.
func JobStatus(j *batchv1.Job) string {
	has := func(typ string) bool {
		for _, c := range j.GetStatus().GetConditions() {
			if c.GetType() == typ && c.GetStatus() == "True" {
				return true
			}
		}
		return false
	}
	switch {
	case has("Complete"):
		return "Complete"
	case has("Failed"):
		return "Failed"
	case j.GetMetadata().GetDeletionTimestamp() != nil:
		return "Terminating"
	case has("Suspended"):
		return "Suspended"
	case has("FailureTarget"):
		return "FailureTarget"
	case has("SuccessCriteriaMet"):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

func jobRow(obj object.Object, now time.Time) ([]string, []string) {
	j := obj.(*batchv1.Job)
	sp, st := j.GetSpec(), j.GetStatus()
	var completions string
	switch {
	case sp.Completions != nil:
		completions = fmt.Sprintf("%d/%d", st.GetSucceeded(), sp.GetCompletions())
	case sp.GetParallelism() > 1:
		completions = fmt.Sprintf("%d/1 of %d", st.GetSucceeded(), sp.GetParallelism())
	default:
		completions = fmt.Sprintf("%d/1", st.GetSucceeded())
	}
	duration := ""
	if st.GetStartTime() != nil {
		end := now
		if st.GetCompletionTime() != nil {
			end = st.GetCompletionTime().AsTime()
		}
		duration = HumanDuration(end.Sub(st.GetStartTime().AsTime()))
	}
	containers, images := containersAndImages(sp.GetTemplate().GetSpec())
	return []string{j.GetMetadata().GetName(), JobStatus(j), completions, duration, Age(j.GetMetadata().GetCreationTimestamp(), now)},
		[]string{containers, images, FormatSelector(sp.GetSelector())}
}

func cronJobRow(obj object.Object, now time.Time) ([]string, []string) {
	cj := obj.(*batchv1.CronJob)
	sp := cj.GetSpec()
	last := "<none>"
	if t := cj.GetStatus().GetLastScheduleTime(); t != nil {
		last = Age(t, now)
	}
	tz := "<none>"
	if sp.TimeZone != nil {
		tz = sp.GetTimeZone()
	}
	js := sp.GetJobTemplate().GetSpec()
	containers, images := containersAndImages(js.GetTemplate().GetSpec())
	return []string{cj.GetMetadata().GetName(), sp.GetSchedule(), tz, strconv.FormatBool(sp.GetSuspend()),
			strconv.Itoa(len(cj.GetStatus().GetActive())), last, Age(cj.GetMetadata().GetCreationTimestamp(), now)},
		[]string{containers, images, FormatSelector(js.GetSelector())}
}

func daemonSetRow(obj object.Object, now time.Time) ([]string, []string) {
	ds := obj.(*appsv1.DaemonSet)
	st := ds.GetStatus()
	sel := "<none>"
	if ns := ds.GetSpec().GetTemplate().GetSpec().GetNodeSelector(); len(ns) > 0 {
		sel = FormatLabels(ns)
	}
	containers, images := containersAndImages(ds.GetSpec().GetTemplate().GetSpec())
	n := func(v int32) string { return strconv.Itoa(int(v)) }
	return []string{ds.GetMetadata().GetName(), n(st.GetDesiredNumberScheduled()), n(st.GetCurrentNumberScheduled()), n(st.GetNumberReady()),
			n(st.GetUpdatedNumberScheduled()), n(st.GetNumberAvailable()), sel, Age(ds.GetMetadata().GetCreationTimestamp(), now)},
		[]string{containers, images, FormatSelector(ds.GetSpec().GetSelector())}
}

func statefulSetRow(obj object.Object, now time.Time) ([]string, []string) {
	ss := obj.(*appsv1.StatefulSet)
	containers, images := containersAndImages(ss.GetSpec().GetTemplate().GetSpec())
	return []string{ss.GetMetadata().GetName(), fmt.Sprintf("%d/%d", ss.GetStatus().GetReadyReplicas(), ss.GetSpec().GetReplicas()),
		Age(ss.GetMetadata().GetCreationTimestamp(), now)}, []string{containers, images}
}

func controllerRevisionRow(obj object.Object, now time.Time) ([]string, []string) {
	cr := obj.(*appsv1.ControllerRevision)
	controller := "<none>"
	for _, ref := range cr.GetMetadata().GetOwnerReferences() {
		if ref.GetController() {
			controller = strings.ToLower(ref.GetKind())
			if group, _, ok := strings.Cut(ref.GetApiVersion(), "/"); ok {
				controller += "." + group
			}
			controller += "/" + ref.GetName()
		}
	}
	return []string{cr.GetMetadata().GetName(), controller, strconv.FormatInt(cr.GetRevision(), 10), Age(cr.GetMetadata().GetCreationTimestamp(), now)}, nil
}

// AccessModes is kubectl's short form of access modes ("RWO,ROX").
func AccessModes(modes []string) string {
	short := map[string]string{"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}
	var out []string
	for _, m := range modes {
		if s, ok := short[m]; ok && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, ",")
}

func volumeMode(m *string) string {
	if m == nil {
		return "<unset>"
	}
	return *m
}

func persistentVolumeRow(obj object.Object, now time.Time) ([]string, []string) {
	pv := obj.(*corev1.PersistentVolume)
	sp := pv.GetSpec()
	claim := ""
	if ref := sp.GetClaimRef(); ref != nil {
		claim = ref.GetNamespace() + "/" + ref.GetName()
	}
	return []string{pv.GetMetadata().GetName(), sp.GetCapacity()["storage"], AccessModes(sp.GetAccessModes()),
			sp.GetPersistentVolumeReclaimPolicy(), pv.GetStatus().GetPhase(), claim, sp.GetStorageClassName(), "<unset>",
			pv.GetStatus().GetReason(), Age(pv.GetMetadata().GetCreationTimestamp(), now)},
		[]string{volumeMode(sp.VolumeMode)}
}

func persistentVolumeClaimRow(obj object.Object, now time.Time) ([]string, []string) {
	pvc := obj.(*corev1.PersistentVolumeClaim)
	sp, st := pvc.GetSpec(), pvc.GetStatus()
	phase := st.GetPhase()
	if pvc.GetMetadata().GetDeletionTimestamp() != nil {
		phase = "Terminating"
	}
	capacity, modes := "", ""
	if sp.GetVolumeName() != "" {
		capacity, modes = st.GetCapacity()["storage"], AccessModes(st.GetAccessModes())
	}
	return []string{pvc.GetMetadata().GetName(), phase, sp.GetVolumeName(), capacity, modes, sp.GetStorageClassName(), "<unset>",
		Age(pvc.GetMetadata().GetCreationTimestamp(), now)}, []string{volumeMode(sp.VolumeMode)}
}

// IsDefaultClass says whether a StorageClass is annotated as the
// cluster's default.
func IsDefaultClass(sc *storagev1.StorageClass) bool { return storageclass.IsDefault(sc) }

func storageClassRow(obj object.Object, now time.Time) ([]string, []string) {
	sc := obj.(*storagev1.StorageClass)
	name := sc.GetMetadata().GetName()
	if IsDefaultClass(sc) {
		name += " (default)"
	}
	reclaim, binding := "Delete", "Immediate"
	if sc.ReclaimPolicy != nil {
		reclaim = sc.GetReclaimPolicy()
	}
	if sc.VolumeBindingMode != nil {
		binding = sc.GetVolumeBindingMode()
	}
	return []string{name, sc.GetProvisioner(), reclaim, binding, strconv.FormatBool(sc.GetAllowVolumeExpansion()),
		Age(sc.GetMetadata().GetCreationTimestamp(), now)}, nil
}

func podDisruptionBudgetRow(obj object.Object, now time.Time) ([]string, []string) {
	pdb := obj.(*policyv1.PodDisruptionBudget)
	ios := func(v *metav1.IntOrString) string {
		switch x := v.GetValue().(type) {
		case *metav1.IntOrString_StrVal:
			return x.StrVal
		case *metav1.IntOrString_IntVal:
			return strconv.Itoa(int(x.IntVal))
		}
		return "N/A"
	}
	return []string{pdb.GetMetadata().GetName(), ios(pdb.GetSpec().GetMinAvailable()), ios(pdb.GetSpec().GetMaxUnavailable()),
		strconv.Itoa(int(pdb.GetStatus().GetDisruptionsAllowed())), Age(pdb.GetMetadata().GetCreationTimestamp(), now)}, nil
}
