// Package cronjob is the CronJob controller: it creates a CronJob's Jobs at
// the times of its schedule, as Kubernetes' cronjob controller (v2) does,
// and keeps its status: the running Jobs (status.active), the last
// schedule time run and the last successful completion.
//
// One sync (Reconcile of a CronJob's key) does, in order:
//
//  1. history: finished Jobs beyond successfulJobsHistoryLimit and
//     failedJobsHistoryLimit are deleted, the oldest first, their pods in
//     the background (SuccessfulDelete);
//  2. status.active: Jobs that finished leave it (SawCompletedJob),
//     references to Jobs that are gone too (MissingJob); a running Job the
//     CronJob controls but does not list is reported (UnexpectedJob), after
//     a fresh read of the CronJob shows the cache was not just behind;
//  3. the schedule: unless suspended or being deleted, the most recent
//     schedule time not yet run, within startingDeadlineSeconds (else
//     MissSchedule), more than 100 missed times warning TooManyMissedTimes
//     and still running only the most recent one;
//  4. concurrency: Forbid skips the run while a Job is active
//     (JobAlreadyActive); Replace deletes the active Jobs first; Allow
//     runs alongside;
//  5. the Job, <cronjob>-<schedule time in minutes since the epoch> (the
//     name is the lock against running a time twice), with the template's
//     labels, annotations and spec, the annotation
//     batch.kubernetes.io/cronjob-scheduled-timestamp, and a controller
//     reference (SuccessfulCreate);
//  6. the status, written once if it changed; the key is requeued at the
//     next schedule time (plus 100ms).
//
// Files: controller.go (wiring, event handlers: a Job wakes its CronJob, a
// changed schedule requeues at the new next time), sync.go (the sync and
// its effects), and the pure decisions, table tested: schedule.go (the
// schedule arithmetic: most recent time, missed times, deadline, requeue,
// Job names), jobs.go (the Job of a run, status.active against the Jobs,
// which history to delete).
//
// Time is the manager's clock (manager.Context.Clock), so tests step a
// fake clock through hours of schedule in milliseconds. The controller
// reads CronJobs and Jobs from the shared informers; it never touches pods
// (the Job controller does) and leaves a deleted CronJob's Jobs to the
// garbage collector.
package cronjob
