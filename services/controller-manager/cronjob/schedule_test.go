package cronjob

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	batchv1 "skiff.dev/proto/batch/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// at parses a UTC time of 2026-11-<day>, "26 10:30" or "26 10:30:07".
func at(t *testing.T, s string) time.Time {
	t.Helper()
	for _, layout := range []string{"02 15:04", "02 15:04:05"} {
		if v, err := time.Parse(layout, s); err == nil {
			return time.Date(2026, time.November, v.Day(), v.Hour(), v.Minute(), v.Second(), 0, time.UTC)
		}
	}
	t.Fatalf("bad time %q", s)
	return time.Time{}
}

// schedCJ is a CronJob in UTC on schedule, created at created, last run at
// last ("": never), with startingDeadlineSeconds sds (nil: unset).
func schedCJ(t *testing.T, schedule, created, last string, sds *int64) *batchv1.CronJob {
	t.Helper()
	cj := &batchv1.CronJob{
		Metadata: &metav1.ObjectMeta{Name: "backup", Namespace: "default", Uid: "cj-uid", CreationTimestamp: timestamppb.New(at(t, created))},
		Spec:     &batchv1.CronJobSpec{Schedule: schedule, TimeZone: proto.String("UTC"), StartingDeadlineSeconds: sds},
		Status:   &batchv1.CronJobStatus{},
	}
	if last != "" {
		cj.Status.LastScheduleTime = timestamppb.New(at(t, last))
	}
	return cj
}

func TestMostRecentScheduleTime(t *testing.T) {
	cases := []struct {
		name, schedule, created, last, now string
		sds                                *int64
		withDeadline                       bool
		wantEarliest, wantRecent           string // "": nil
		wantMissed                         missed
		wantErr                            bool
	}{
		{name: "created, first time not yet", schedule: "0 * * * *", created: "26 10:30", now: "26 10:59",
			wantEarliest: "26 10:30"},
		{name: "created, first time now", schedule: "0 * * * *", created: "26 10:30", now: "26 11:00",
			wantEarliest: "26 10:30", wantRecent: "26 11:00"},
		{name: "created, first time passed, second not", schedule: "0 * * * *", created: "26 10:30", now: "26 11:59",
			wantEarliest: "26 10:30", wantRecent: "26 11:00"},
		{name: "created on a schedule time: that one is not run", schedule: "0 * * * *", created: "26 11:00", now: "26 11:30",
			wantEarliest: "26 11:00"},
		{name: "last run, next due", schedule: "0 * * * *", created: "20 08:00", last: "26 11:00", now: "26 12:10",
			wantEarliest: "26 11:00", wantRecent: "26 12:00"},
		{name: "last run, next not due", schedule: "0 * * * *", created: "20 08:00", last: "26 11:00", now: "26 11:10",
			wantEarliest: "26 11:00"},
		{name: "three missed: the most recent", schedule: "0 * * * *", created: "20 08:00", last: "26 11:00", now: "26 14:10",
			wantEarliest: "26 11:00", wantRecent: "26 14:00", wantMissed: fewMissed},
		{name: "100 missed is few", schedule: "0 * * * *", created: "20 08:00", last: "21 00:00", now: "25 04:00",
			wantEarliest: "21 00:00", wantRecent: "25 04:00", wantMissed: fewMissed},
		{name: "101 missed is many", schedule: "0 * * * *", created: "20 08:00", last: "21 00:00", now: "25 05:00",
			wantEarliest: "21 00:00", wantRecent: "25 05:00", wantMissed: manyMissed},
		{name: "every minute, 3 hours down: many", schedule: "*/1 * * * *", created: "26 07:00", last: "26 08:00", now: "26 11:00:30",
			wantEarliest: "26 08:00", wantRecent: "26 11:00", wantMissed: manyMissed},
		{name: "every minute, 3 hours down, deadline 200s: few", schedule: "*/1 * * * *", created: "26 07:00", last: "26 08:00", now: "26 11:00:30",
			sds: proto.Int64(200), withDeadline: true,
			wantEarliest: "26 10:57:10", wantRecent: "26 11:00", wantMissed: fewMissed},
		{name: "deadline ignored when asked (requeue)", schedule: "*/1 * * * *", created: "26 07:00", last: "26 08:00", now: "26 11:00:30",
			sds: proto.Int64(200), withDeadline: false,
			wantEarliest: "26 08:00", wantRecent: "26 11:00", wantMissed: manyMissed},
		{name: "deadline before the last run changes nothing", schedule: "0 * * * *", created: "20 08:00", last: "26 11:00", now: "26 12:10",
			sds: proto.Int64(7200), withDeadline: true,
			wantEarliest: "26 11:00", wantRecent: "26 12:00"},
		{name: "deadline shorter than the wait: the time is out of reach", schedule: "0 * * * *", created: "20 08:00", last: "26 11:00", now: "26 12:10",
			sds: proto.Int64(60), withDeadline: true,
			wantEarliest: "26 12:09"},
		{name: "irregular schedule over a weekend", schedule: "30 6-16/4 * * 1-5", created: "20 08:00", last: "27 14:30", now: "30 11:00",
			wantEarliest: "27 14:30", wantRecent: "30 10:30", wantMissed: fewMissed},
		{name: "@every 5m counts from creation", schedule: "@every 5m", created: "26 10:00:07", now: "26 10:26",
			wantEarliest: "26 10:00:07", wantRecent: "26 10:25:07", wantMissed: fewMissed},
		{name: "@hourly", schedule: "@hourly", created: "26 10:30", now: "26 11:00:01",
			wantEarliest: "26 10:30", wantRecent: "26 11:00"},
		{name: "February 31st never comes", schedule: "0 0 31 2 *", created: "26 10:30", now: "26 11:00",
			wantEarliest: "26 10:30", wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cj := schedCJ(t, c.schedule, c.created, c.last, c.sds)
			sched, err := parseSchedule(cj)
			if err != nil {
				t.Fatal(err)
			}
			earliest, recent, m, err := mostRecentScheduleTime(cj, at(t, c.now), sched, c.withDeadline)
			if (err != nil) != c.wantErr {
				t.Fatalf("error %v, want error %v", err, c.wantErr)
			}
			if !earliest.Equal(at(t, c.wantEarliest)) {
				t.Errorf("earliest %v, want %v", earliest, at(t, c.wantEarliest))
			}
			switch {
			case c.wantRecent == "" && recent != nil:
				t.Errorf("most recent %v, want none", recent)
			case c.wantRecent != "" && (recent == nil || !recent.Equal(at(t, c.wantRecent))):
				t.Errorf("most recent %v, want %v", recent, at(t, c.wantRecent))
			}
			if m != c.wantMissed {
				t.Errorf("missed %v, want %v", m, c.wantMissed)
			}
		})
	}
}

func TestNextScheduleTime(t *testing.T) {
	cases := []struct {
		name, schedule, created, last, now string
		sds                                *int64
		want                               string // "": nil
		wantTooMany                        bool
	}{
		{name: "not due", schedule: "*/1 * * * *", created: "26 10:00:30", now: "26 10:00:59"},
		{name: "due", schedule: "*/1 * * * *", created: "26 10:00:30", now: "26 10:01:00", want: "26 10:01"},
		{name: "outage, no deadline: one catch-up, warned", schedule: "*/1 * * * *", created: "26 07:00", last: "26 08:00", now: "26 11:00:30",
			want: "26 11:00", wantTooMany: true},
		{name: "outage, deadline 200s: one catch-up, quiet", schedule: "*/1 * * * *", created: "26 07:00", last: "26 08:00", now: "26 11:00:30",
			sds: proto.Int64(200), want: "26 11:00"},
		{name: "deadline passed for the only time", schedule: "0 * * * *", created: "20 08:00", last: "26 11:00", now: "26 12:10",
			sds: proto.Int64(60)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cj := schedCJ(t, c.schedule, c.created, c.last, c.sds)
			sched, _ := parseSchedule(cj)
			got, tooMany, err := nextScheduleTime(cj, at(t, c.now), sched)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.want == "" && got != nil:
				t.Errorf("got %v, want none", got)
			case c.want != "" && (got == nil || !got.Equal(at(t, c.want))):
				t.Errorf("got %v, want %v", got, at(t, c.want))
			}
			if tooMany != c.wantTooMany {
				t.Errorf("tooMany %v, want %v", tooMany, c.wantTooMany)
			}
		})
	}
}

func TestRequeueAfter(t *testing.T) {
	cases := []struct {
		name, schedule, created, last, now string
		want                               time.Duration
	}{
		{"before the first time", "0 * * * *", "26 10:30", "", "26 10:45", 15*time.Minute + nextScheduleDelta},
		{"after a run", "0 * * * *", "20 08:00", "26 11:00", "26 11:20", 40*time.Minute + nextScheduleDelta},
		{"a time due now: the one after it", "0 * * * *", "20 08:00", "26 11:00", "26 12:00", time.Hour + nextScheduleDelta},
		{"missed times: the next from now", "0 * * * *", "20 08:00", "26 11:00", "26 13:20", 40*time.Minute + nextScheduleDelta},
		{"every minute", "*/1 * * * *", "26 10:00:30", "", "26 10:00:30", 30*time.Second + nextScheduleDelta},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cj := schedCJ(t, c.schedule, c.created, c.last, nil)
			sched, _ := parseSchedule(cj)
			if got := requeueAfter(cj, at(t, c.now), sched); got != c.want {
				t.Errorf("requeue after %v, want %v", got, c.want)
			}
		})
	}
}

func TestTooLate(t *testing.T) {
	now := at(t, "26 12:00")
	cases := []struct {
		name      string
		sds       *int64
		scheduled time.Time
		want      bool
	}{
		{"no deadline", nil, now.Add(-24 * time.Hour), false},
		{"within the deadline", proto.Int64(10), now.Add(-9 * time.Second), false},
		{"at the deadline", proto.Int64(10), now.Add(-10 * time.Second), false},
		{"past the deadline", proto.Int64(10), now.Add(-11 * time.Second), true},
		{"deadline 0, late by a second", proto.Int64(0), now.Add(-time.Second), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cj := &batchv1.CronJob{Spec: &batchv1.CronJobSpec{StartingDeadlineSeconds: c.sds}}
			if got := tooLate(cj, c.scheduled, now); got != c.want {
				t.Errorf("tooLate %v, want %v", got, c.want)
			}
		})
	}
}

func TestScheduleSpec(t *testing.T) {
	cases := []struct {
		name, schedule string
		tz             *string
		want           string
		usesTZ         bool
	}{
		{"plain", "*/5 * * * *", nil, "*/5 * * * *", false},
		{"time zone", "0 9 * * *", proto.String("Europe/Paris"), "TZ=Europe/Paris 0 9 * * *", false},
		{"unknown time zone: left out", "0 9 * * *", proto.String("Mars/Base"), "0 9 * * *", false},
		{"TZ in the schedule", "TZ=UTC 0 9 * * *", nil, "TZ=UTC 0 9 * * *", true},
		{"CRON_TZ in the schedule wins over timeZone", "CRON_TZ=UTC 0 9 * * *", proto.String("Europe/Paris"), "CRON_TZ=UTC 0 9 * * *", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, usesTZ := scheduleSpec(&batchv1.CronJob{Spec: &batchv1.CronJobSpec{Schedule: c.schedule, TimeZone: c.tz}})
			if got != c.want || usesTZ != c.usesTZ {
				t.Errorf("got %q, %v; want %q, %v", got, usesTZ, c.want, c.usesTZ)
			}
		})
	}
}

// TestTimeZoneSchedule: 09:00 in Paris is 08:00 UTC in winter.
func TestTimeZoneSchedule(t *testing.T) {
	cj := schedCJ(t, "0 9 * * *", "26 06:00", "", nil)
	cj.Spec.TimeZone = proto.String("Europe/Paris")
	sched, err := parseSchedule(cj)
	if err != nil {
		t.Fatal(err)
	}
	_, recent, _, _ := mostRecentScheduleTime(cj, at(t, "26 08:00:05"), sched, true)
	if recent == nil || !recent.Equal(at(t, "26 08:00")) {
		t.Fatalf("most recent %v, want 08:00 UTC", recent)
	}
}

func TestJobName(t *testing.T) {
	cj := &batchv1.CronJob{Metadata: &metav1.ObjectMeta{Name: "backup"}}
	// 2026-11-26T07:20:00Z is 1795677600 s, 29927960 minutes after the epoch.
	if got, want := jobName(cj, at(t, "26 07:20")), "backup-29927960"; got != want {
		t.Errorf("jobName %q, want %q", got, want)
	}
	if got := jobName(cj, at(t, "26 07:20:59")); got != "backup-29927960" {
		t.Errorf("seconds changed the name: %q", got)
	}
}
