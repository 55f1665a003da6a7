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

// workloadTable is the table of the batch, DaemonSet, StatefulSet,
// storage and scheduling kinds.
func workloadTable(obj object.Object) (kindTable, bool) {
	switch obj.(type) {
	case *batchv1.Job:
		return jobTable, true
	case *batchv1.CronJob:
		return cronJobTable, true
	case *appsv1.DaemonSet:
		return daemonSetTable, true
	case *appsv1.StatefulSet:
		return statefulSetTable, true
	case *appsv1.ControllerRevision:
		return controllerRevisionTable, true
	case *corev1.PersistentVolume:
		return persistentVolumeTable, true
	case *corev1.PersistentVolumeClaim:
		return persistentVolumeClaimTable, true
	case *policyv1.PodDisruptionBudget:
		return podDisruptionBudgetTable, true
	case *storagev1.StorageClass:
		return storageClassTable, true
	case *schedulingv1.PriorityClass:
		return priorityClassTable, true
	case *nodev1.RuntimeClass:
		return runtimeClassTable, true
	}
	return kindTable{}, false
}

// printBool is a boolean as Kubernetes' printer writes an optional one:
// True, False, or <unset>.
func printBool(set, v bool) string {
	switch {
	case !set:
		return "<unset>"
	case v:
		return "True"
	}
	return "False"
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

var jobTable = kindTable{[]Column{
	nameColumn,
	column("Status", "Status of the job."),
	column("Completions", doc("batch/v1.JobStatus", "succeeded")),
	column("Duration", "Time required to complete the job."),
	ageColumn, containersColumn, imagesColumn, selectorColumn("batch/v1.JobSpec"),
}, jobCells}

func jobCells(obj object.Object, now time.Time) []any {
	j := obj.(*batchv1.Job)
	sp, st := j.GetSpec(), j.GetStatus()
	var completions string
	switch {
	case sp != nil && sp.Completions != nil:
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
	return []any{j.GetMetadata().GetName(), JobStatus(j), completions, duration, Age(j.GetMetadata().GetCreationTimestamp(), now),
		containers, images, FormatSelector(sp.GetSelector())}
}

// cronJobTable: SUSPEND is a boolean column of strings and ACTIVE an
// integer, as in Kubernetes.
var cronJobTable = kindTable{[]Column{
	nameColumn,
	column("Schedule", doc("batch/v1.CronJobSpec", "schedule")),
	column("Timezone", doc("batch/v1.CronJobSpec", "timeZone")),
	typed("boolean", column("Suspend", doc("batch/v1.CronJobSpec", "suspend"))),
	typed("integer", column("Active", doc("batch/v1.CronJobStatus", "active"))),
	column("Last Schedule", doc("batch/v1.CronJobStatus", "lastScheduleTime")),
	ageColumn, containersColumn, imagesColumn, selectorColumn("batch/v1.JobSpec"),
}, cronJobCells}

func cronJobCells(obj object.Object, now time.Time) []any {
	cj := obj.(*batchv1.CronJob)
	sp := cj.GetSpec()
	last := "<none>"
	if t := cj.GetStatus().GetLastScheduleTime(); t != nil {
		last = Age(t, now)
	}
	tz := "<none>"
	if sp != nil && sp.TimeZone != nil {
		tz = sp.GetTimeZone()
	}
	js := sp.GetJobTemplate().GetSpec()
	containers, images := containersAndImages(js.GetTemplate().GetSpec())
	return []any{cj.GetMetadata().GetName(), sp.GetSchedule(), tz, printBool(sp != nil && sp.Suspend != nil, sp.GetSuspend()),
		int64(len(cj.GetStatus().GetActive())), last, Age(cj.GetMetadata().GetCreationTimestamp(), now),
		containers, images, FormatSelector(js.GetSelector())}
}

var daemonSetTable = kindTable{[]Column{
	nameColumn,
	typed("integer", column("Desired", doc("apps/v1.DaemonSetStatus", "desiredNumberScheduled"))),
	typed("integer", column("Current", doc("apps/v1.DaemonSetStatus", "currentNumberScheduled"))),
	typed("integer", column("Ready", doc("apps/v1.DaemonSetStatus", "numberReady"))),
	typed("integer", column("Up-to-date", doc("apps/v1.DaemonSetStatus", "updatedNumberScheduled"))),
	typed("integer", column("Available", doc("apps/v1.DaemonSetStatus", "numberAvailable"))),
	column("Node Selector", doc("core/v1.PodSpec", "nodeSelector")),
	ageColumn, containersColumn, imagesColumn, selectorColumn("apps/v1.DaemonSetSpec"),
}, daemonSetCells}

func daemonSetCells(obj object.Object, now time.Time) []any {
	ds := obj.(*appsv1.DaemonSet)
	st := ds.GetStatus()
	sel := "<none>"
	if ns := ds.GetSpec().GetTemplate().GetSpec().GetNodeSelector(); len(ns) > 0 {
		sel = FormatLabels(ns)
	}
	containers, images := containersAndImages(ds.GetSpec().GetTemplate().GetSpec())
	return []any{ds.GetMetadata().GetName(), int64(st.GetDesiredNumberScheduled()), int64(st.GetCurrentNumberScheduled()), int64(st.GetNumberReady()),
		int64(st.GetUpdatedNumberScheduled()), int64(st.GetNumberAvailable()), sel, Age(ds.GetMetadata().GetCreationTimestamp(), now),
		containers, images, FormatSelector(ds.GetSpec().GetSelector())}
}

var statefulSetTable = kindTable{[]Column{
	nameColumn, column("Ready", "Number of the pod with ready state"), ageColumn, containersColumn, imagesColumn,
}, func(obj object.Object, now time.Time) []any {
	ss := obj.(*appsv1.StatefulSet)
	containers, images := containersAndImages(ss.GetSpec().GetTemplate().GetSpec())
	return []any{ss.GetMetadata().GetName(), fmt.Sprintf("%d/%d", ss.GetStatus().GetReadyReplicas(), ss.GetSpec().GetReplicas()),
		Age(ss.GetMetadata().GetCreationTimestamp(), now), containers, images}
}}

// controllerRevisionTable: REVISION is an integer in a string column, as
// in Kubernetes.
var controllerRevisionTable = kindTable{[]Column{
	nameColumn,
	column("Controller", "Controller of the object"),
	column("Revision", doc("apps/v1.ControllerRevision", "revision")),
	ageColumn,
}, controllerRevisionCells}

func controllerRevisionCells(obj object.Object, now time.Time) []any {
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
	return []any{cr.GetMetadata().GetName(), controller, cr.GetRevision(), Age(cr.GetMetadata().GetCreationTimestamp(), now)}
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

// volumeMode is a volume's or claim's spec.volumeMode, <unset> when
// unset.
func volumeMode(m *string) string {
	if m == nil {
		return "<unset>"
	}
	return *m
}

var persistentVolumeTable = kindTable{[]Column{
	nameColumn,
	column("Capacity", doc("core/v1.PersistentVolumeSpec", "capacity")),
	column("Access Modes", doc("core/v1.PersistentVolumeSpec", "accessModes")),
	column("Reclaim Policy", doc("core/v1.PersistentVolumeSpec", "persistentVolumeReclaimPolicy")),
	column("Status", doc("core/v1.PersistentVolumeStatus", "phase")),
	column("Claim", doc("core/v1.PersistentVolumeSpec", "claimRef")),
	column("StorageClass", "StorageClass of the pv"),
	column("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
	column("Reason", doc("core/v1.PersistentVolumeStatus", "reason")),
	ageColumn,
	wide(column("VolumeMode", doc("core/v1.PersistentVolumeSpec", "volumeMode"))),
}, persistentVolumeCells}

func persistentVolumeCells(obj object.Object, now time.Time) []any {
	pv := obj.(*corev1.PersistentVolume)
	sp := pv.GetSpec()
	phase := pv.GetStatus().GetPhase()
	if pv.GetMetadata().GetDeletionTimestamp() != nil {
		phase = "Terminating"
	}
	var mode *string
	if sp != nil {
		mode = sp.VolumeMode
	}
	claim := ""
	if ref := sp.GetClaimRef(); ref != nil {
		claim = ref.GetNamespace() + "/" + ref.GetName()
	}
	return []any{pv.GetMetadata().GetName(), sp.GetCapacity()["storage"], AccessModes(sp.GetAccessModes()),
		sp.GetPersistentVolumeReclaimPolicy(), phase, claim, sp.GetStorageClassName(), "<unset>",
		pv.GetStatus().GetReason(), Age(pv.GetMetadata().GetCreationTimestamp(), now), volumeMode(mode)}
}

var persistentVolumeClaimTable = kindTable{[]Column{
	nameColumn,
	column("Status", doc("core/v1.PersistentVolumeClaimStatus", "phase")),
	column("Volume", doc("core/v1.PersistentVolumeClaimSpec", "volumeName")),
	column("Capacity", doc("core/v1.PersistentVolumeClaimStatus", "capacity")),
	column("Access Modes", doc("core/v1.PersistentVolumeClaimStatus", "accessModes")),
	column("StorageClass", "StorageClass of the pvc"),
	column("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
	ageColumn,
	wide(column("VolumeMode", doc("core/v1.PersistentVolumeClaimSpec", "volumeMode"))),
}, persistentVolumeClaimCells}

func persistentVolumeClaimCells(obj object.Object, now time.Time) []any {
	pvc := obj.(*corev1.PersistentVolumeClaim)
	sp, st := pvc.GetSpec(), pvc.GetStatus()
	var mode *string
	if sp != nil {
		mode = sp.VolumeMode
	}
	phase := st.GetPhase()
	if pvc.GetMetadata().GetDeletionTimestamp() != nil {
		phase = "Terminating"
	}
	capacity, modes := "", ""
	if sp.GetVolumeName() != "" {
		capacity, modes = st.GetCapacity()["storage"], AccessModes(st.GetAccessModes())
	}
	return []any{pvc.GetMetadata().GetName(), phase, sp.GetVolumeName(), capacity, modes, sp.GetStorageClassName(), "<unset>",
		Age(pvc.GetMetadata().GetCreationTimestamp(), now), volumeMode(mode)}
}

// IsDefaultClass says whether a StorageClass is annotated as the
// cluster's default.
func IsDefaultClass(sc *storagev1.StorageClass) bool { return storageclass.IsDefault(sc) }

// storageClassTable: ALLOWVOLUMEEXPANSION is a boolean in a string
// column, as in Kubernetes.
var storageClassTable = kindTable{[]Column{
	nameColumn,
	column("Provisioner", doc("storage/v1.StorageClass", "provisioner")),
	column("ReclaimPolicy", doc("storage/v1.StorageClass", "reclaimPolicy")),
	column("VolumeBindingMode", doc("storage/v1.StorageClass", "volumeBindingMode")),
	column("AllowVolumeExpansion", doc("storage/v1.StorageClass", "allowVolumeExpansion")),
	ageColumn,
}, storageClassCells}

func storageClassCells(obj object.Object, now time.Time) []any {
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
	return []any{name, sc.GetProvisioner(), reclaim, binding, sc.GetAllowVolumeExpansion(), Age(sc.GetMetadata().GetCreationTimestamp(), now)}
}

var podDisruptionBudgetTable = kindTable{[]Column{
	nameColumn,
	column("Min Available", "The minimum number of pods that must be available."),
	column("Max Unavailable", "The maximum number of pods that may be unavailable."),
	typed("integer", column("Allowed Disruptions", "Calculated number of pods that may be disrupted at this time.")),
	ageColumn,
}, podDisruptionBudgetCells}

func podDisruptionBudgetCells(obj object.Object, now time.Time) []any {
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
	return []any{pdb.GetMetadata().GetName(), ios(pdb.GetSpec().GetMinAvailable()), ios(pdb.GetSpec().GetMaxUnavailable()),
		int64(pdb.GetStatus().GetDisruptionsAllowed()), Age(pdb.GetMetadata().GetCreationTimestamp(), now)}
}
