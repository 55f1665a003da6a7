package events

import "time"

// Clock stamps events; tests may step a fake one. Rate limits and
// aggregation windows are measured on events' timestamps, so on this clock.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
