package cronjob

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"skiff.dev/internal/validation"
	batchv1 "skiff.dev/proto/batch/v1"
)

// nextScheduleDelta pads every requeue at a schedule time, so that the
// sync it wakes finds the time passed (Kubernetes' 100ms, for clock skew).
const nextScheduleDelta = 100 * time.Millisecond

// tooManyMissed is the count of missed schedule times above which a sync
// warns (TooManyMissedTimes) instead of quietly catching up: more than 80
// hourly runs over a long weekend, fewer than a clock decades off.
const tooManyMissed = 100

// missed says how many schedule times passed unrun since the earliest time
// a sync considers.
type missed int

const (
	noneMissed missed = iota // at most the one being due now
	fewMissed                // more than one, at most tooManyMissed
	manyMissed               // more than tooManyMissed
)

func (m missed) String() string {
	switch m {
	case noneMissed:
		return "none"
	case fewMissed:
		return "few"
	case manyMissed:
		return "many"
	}
	return fmt.Sprintf("missed(%d)", int(m))
}

// scheduleSpec is the line the cron parser reads for cj: its schedule,
// with a TZ= prefix naming spec.timeZone when it has a loadable one. A
// schedule that already names a zone itself (TZ= or CRON_TZ=, refused by
// validation since timeZone exists but still found in older objects) is
// read as it is, and usesTZ says so (the sync warns UnsupportedSchedule).
func scheduleSpec(cj *batchv1.CronJob) (line string, usesTZ bool) {
	s := cj.GetSpec()
	if strings.Contains(s.GetSchedule(), "TZ") {
		return s.GetSchedule(), true
	}
	if s.TimeZone != nil {
		if _, err := time.LoadLocation(*s.TimeZone); err == nil {
			return "TZ=" + *s.TimeZone + " " + s.GetSchedule(), false
		}
	}
	return s.GetSchedule(), false
}

// parseSchedule parses cj's schedule (see scheduleSpec) as validation does.
// Without a time zone the schedule runs in the controller's local zone, as
// Kubernetes'.
func parseSchedule(cj *batchv1.CronJob) (cron.Schedule, error) {
	line, _ := scheduleSpec(cj)
	return validation.ParseSchedule(line)
}

// errNoInterval: a schedule that parses but names no real time, such as
// February 31st ("0 0 31 2 *"): two successive times are the same (zero).
var errNoInterval = errors.New("time difference between two schedules is less than 1 second")

// mostRecentScheduleTime is the heart of the schedule arithmetic (Kubernetes'
// function of the same name). It considers the schedule times after the
// earliest one not yet handled, which is status.lastScheduleTime, or the
// CronJob's creation when it never ran, or, when withDeadline and
// startingDeadlineSeconds is set, now minus that deadline if that is later.
// It returns that earliest time; the most recent schedule time at or
// before now (nil: none came yet); and how many were missed. It finds the
// most recent time without walking every missed one: it takes the interval
// between the first two times, skips that many intervals, and lets the
// schedule walk the rest (irregular schedules such as "30 6-16/4 * * 1-5"
// are walked from one interval before the estimate).
func mostRecentScheduleTime(cj *batchv1.CronJob, now time.Time, sched cron.Schedule, withDeadline bool) (time.Time, *time.Time, missed, error) {
	earliest := cj.GetMetadata().GetCreationTimestamp().AsTime()
	if lst := cj.GetStatus().GetLastScheduleTime(); lst != nil {
		earliest = lst.AsTime()
	}
	if sds := cj.GetSpec().StartingDeadlineSeconds; withDeadline && sds != nil {
		if deadline := now.Add(-time.Duration(*sds) * time.Second); deadline.After(earliest) {
			earliest = deadline
		}
	}
	t1 := sched.Next(earliest)
	t2 := sched.Next(t1)
	if now.Before(t1) {
		return earliest, nil, noneMissed, nil
	}
	if now.Before(t2) {
		return earliest, &t1, noneMissed, nil
	}
	interval := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if interval < 1 {
		return earliest, nil, noneMissed, errNoInterval
	}
	count := int64(now.Sub(t1).Seconds())/interval + 1
	var mostRecent time.Time
	from := t1.Add(time.Duration((count-2)*interval) * time.Second)
	for t := sched.Next(from); !t.After(now); t = sched.Next(t) {
		mostRecent = t
	}
	m := fewMissed
	if count > tooManyMissed {
		m = manyMissed
	}
	if mostRecent.IsZero() {
		return earliest, nil, m, nil
	}
	return earliest, &mostRecent, m, nil
}

// nextScheduleTime is the schedule time a sync at now should run, if any:
// the most recent one not yet handled, within startingDeadlineSeconds.
// tooMany reports more than 100 missed times (the sync warns
// TooManyMissedTimes, and still runs only the most recent).
func nextScheduleTime(cj *batchv1.CronJob, now time.Time, sched cron.Schedule) (scheduled *time.Time, tooMany bool, err error) {
	_, mostRecent, m, err := mostRecentScheduleTime(cj, now, sched, true)
	if mostRecent == nil || mostRecent.After(now) {
		return nil, false, err
	}
	return mostRecent, m == manyMissed, err
}

// requeueAfter is how long until the next schedule time after the last one
// handled (or now, when some were missed or the schedule is broken), plus
// nextScheduleDelta: when the CronJob's key is due again.
func requeueAfter(cj *batchv1.CronJob, now time.Time, sched cron.Schedule) time.Duration {
	earliest, mostRecent, m, err := mostRecentScheduleTime(cj, now, sched, false)
	from := now
	switch {
	case err != nil:
	case mostRecent != nil:
		from = *mostRecent
	case m == noneMissed:
		from = earliest
	}
	return sched.Next(from).Add(nextScheduleDelta).Sub(now)
}

// tooLate reports a schedule time whose startingDeadlineSeconds passed
// before now: it is not run (MissSchedule).
func tooLate(cj *batchv1.CronJob, scheduled, now time.Time) bool {
	sds := cj.GetSpec().StartingDeadlineSeconds
	return sds != nil && scheduled.Add(time.Duration(*sds)*time.Second).Before(now)
}

// jobName is the name of the Job of cj's run at scheduled:
// <cronjob>-<minutes since the epoch>. The name is the lock that keeps a
// run from being created twice (by a sync that read an old status).
func jobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.GetMetadata().GetName(), scheduled.Unix()/60)
}
