package events

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	corev1 "skiff.dev/proto/core/v1"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func eventAt(name, message string, at time.Time) *corev1.Event {
	return &corev1.Event{
		InvolvedObject: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: name, Uid: "uid-" + name},
		Source:         &corev1.EventSource{Component: "test"},
		Type:           EventTypeNormal,
		Reason:         "Tested",
		Message:        message,
		FirstTimestamp: timestamppb.New(at),
		LastTimestamp:  timestamppb.New(at),
		Count:          1,
	}
}

func TestSpamFilter(t *testing.T) {
	// Each step records n distinct events about one object at t0+after.
	type step struct {
		object      string
		after       time.Duration
		n           int
		wantAllowed int
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"a burst of 25 passes, the rest is dropped", []step{{"web", 0, 100, 25}}},
		{"each object has its own bucket", []step{{"web", 0, 30, 25}, {"db", 0, 30, 25}}},
		{"one token every 5 minutes", []step{
			{"web", 0, 25, 25},
			{"web", 299 * time.Second, 1, 0},
			{"web", 300 * time.Second, 2, 1},
			{"web", 900 * time.Second, 3, 2},
		}},
		{"refill stops at the burst", []step{{"web", 0, 25, 25}, {"web", 24 * time.Hour, 100, 25}}},
		{"an event older than the bucket's last use takes a token without refilling", []step{
			{"web", time.Hour, 24, 24},
			{"web", 0, 2, 1},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCorrelator(DefaultQPS, DefaultBurst, DefaultAggregationWindow, DefaultCacheSize)
			for i, s := range tc.steps {
				allowed := 0
				for j := range s.n {
					if c.allow(eventAt(s.object, fmt.Sprintf("step %d event %d", i, j), t0.Add(s.after))) {
						allowed++
					}
				}
				if allowed != s.wantAllowed {
					t.Errorf("step %d (%s at +%v): %d of %d allowed, want %d", i, s.object, s.after, allowed, s.n, s.wantAllowed)
				}
			}
		})
	}
}

func TestAggregationWindow(t *testing.T) {
	c := newCorrelator(DefaultQPS, DefaultBurst, 10*time.Minute, DefaultCacheSize)
	first := eventAt("web", "hello", t0)
	stored := eventAt("web", "hello", t0)
	c.stored(first, stored)
	cases := []struct {
		name string
		ev   *corev1.Event
		want bool
	}{
		{"same content a minute later", eventAt("web", "hello", t0.Add(time.Minute)), true},
		{"same content just inside the window", eventAt("web", "hello", t0.Add(10*time.Minute-time.Nanosecond)), true},
		{"same content after the window", eventAt("web", "hello", t0.Add(10*time.Minute)), false},
		{"another message", eventAt("web", "bye", t0), false},
		{"another object", eventAt("db", "hello", t0), false},
		{"another type", func() *corev1.Event { e := eventAt("web", "hello", t0); e.Type = EventTypeWarning; return e }(), false},
		{"another component", func() *corev1.Event { e := eventAt("web", "hello", t0); e.Source.Component = "other"; return e }(), false},
		{"another object version: still a repeat", func() *corev1.Event {
			e := eventAt("web", "hello", t0)
			e.InvolvedObject.ResourceVersion = "42"
			return e
		}(), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prev, ok := c.previous(tc.ev)
			if ok != tc.want {
				t.Fatalf("previous() found = %v, want %v", ok, tc.want)
			}
			if ok && prev != stored {
				t.Errorf("previous() = %v, want the stored event", prev)
			}
		})
	}
}

func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	c := newLRU[int](2)
	c.add("a", 1)
	c.add("b", 2)
	if _, ok := c.get("a"); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	c.add("c", 3) // evicts b
	if _, ok := c.get("b"); ok {
		t.Error("b still present, want it evicted")
	}
	for k, want := range map[string]int{"a": 1, "c": 3} {
		if v, ok := c.get(k); !ok || v != want {
			t.Errorf("get(%q) = %v, %v; want %v, true", k, v, ok, want)
		}
	}
	c.add("a", 10)
	if v, _ := c.get("a"); v != 10 || c.len() != 2 {
		t.Errorf("after replacing a: get(a) = %v, len = %d; want 10, 2", v, c.len())
	}
}
