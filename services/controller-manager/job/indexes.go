package job

import (
	"slices"
	"strconv"
	"strings"
)

// interval is the indexes first..last, inclusive.
type interval struct{ first, last int }

// indexSet is a set of completion indexes as ordered, non-overlapping,
// non-adjacent intervals: the form of status.completedIndexes and
// status.failedIndexes ("1,3-5,7").
type indexSet []interval

// parseIndexes reads an index set in Kubernetes' text format, ignoring
// indexes at or above completions and malformed fragments (as Kubernetes'
// parseIndexesFromString does).
func parseIndexes(s string, completions int) indexSet {
	var ixs []int
	if s == "" {
		return nil
	}
	for frag := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(frag, "-")
		first, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for ix := max(first, 0); ix <= last && ix < completions; ix++ {
			ixs = append(ixs, ix)
		}
	}
	return indexSet(nil).with(ixs)
}

// with returns the set with ixs added.
func (s indexSet) with(ixs []int) indexSet {
	if len(ixs) == 0 {
		return s
	}
	all := make([]int, 0, s.total()+len(ixs))
	for _, iv := range s {
		for ix := iv.first; ix <= iv.last; ix++ {
			all = append(all, ix)
		}
	}
	all = append(all, ixs...)
	slices.Sort(all)
	all = slices.Compact(all)
	var out indexSet
	for _, ix := range all {
		if n := len(out); n > 0 && out[n-1].last+1 == ix {
			out[n-1].last = ix
			continue
		}
		out = append(out, interval{ix, ix})
	}
	return out
}

// has reports whether ix is in the set.
func (s indexSet) has(ix int) bool {
	i, _ := slices.BinarySearchFunc(s, ix, func(iv interval, ix int) int {
		switch {
		case iv.last < ix:
			return -1
		case iv.first > ix:
			return 1
		}
		return 0
	})
	return i < len(s) && s[i].first <= ix && ix <= s[i].last
}

// total is the number of indexes in the set.
func (s indexSet) total() int {
	n := 0
	for _, iv := range s {
		n += iv.last - iv.first + 1
	}
	return n
}

// String renders the set in Kubernetes' text format.
func (s indexSet) String() string {
	var b strings.Builder
	for i, iv := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(iv.first))
		if iv.last > iv.first {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(iv.last))
		}
	}
	return b.String()
}
