package scenarios

import (
	"math"
	"math/bits"
	"time"
)

// Histogram counts durations in log-linear buckets, in the manner of an HDR
// histogram: values below 1024 ns have a bucket each, and every power of two
// above is split into 512 equal buckets, so a percentile is within 0.2% of
// the exact sample. It is a fixed 132 KiB whatever the number of samples,
// so ten million watch events cost no more than ten. Not safe for
// concurrent use: give each goroutine its own and Merge them.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

const (
	histExact = 1024 // values below are counted exactly
	histSub   = 512  // buckets per power of two above
	// histMaxExp bounds the values: below 2^(histMaxExp+10) ns, about 36
	// minutes; larger ones land in the last bucket.
	histMaxExp  = 31
	histBuckets = histExact + histMaxExp*histSub
)

// bucketOf maps a value in nanoseconds to its bucket.
func bucketOf(v uint64) int {
	if v < histExact {
		return int(v)
	}
	e := bits.Len64(v) - 10 // v>>e is in [512, 1023]
	if e > histMaxExp {
		return histBuckets - 1
	}
	return histExact + (e-1)*histSub + int(v>>e) - histSub
}

// bucketHigh is the largest value that falls in bucket b.
func bucketHigh(b int) uint64 {
	if b < histExact {
		return uint64(b)
	}
	e := (b-histExact)/histSub + 1
	m := uint64((b-histExact)%histSub + histSub)
	return (m+1)<<e - 1
}

// Record adds one sample; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d))]++
	h.n++
	if d > h.max {
		h.max = d
	}
}

// Merge adds every sample of o.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// Count is the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest sample.
func (h *Histogram) Max() time.Duration { return h.max }

// Percentile returns the smallest value (to the bucket's resolution) at or
// below which p percent of the samples fall; 0 without samples.
func (h *Histogram) Percentile(p float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	// The rank of the sample, 1-based: the nearest-rank definition.
	rank := uint64(math.Ceil(float64(h.n) * p / 100))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(time.Duration(bucketHigh(b)), h.max)
		}
	}
	return h.max
}
