package printers

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"skiff.dev/internal/quantity"
	"skiff.dev/services/ctl/printers/jsonpath"
)

// SortOrder is --sort-by: the order of trees (objects' JSON forms) by the
// first value at field (a JSONPath, short forms allowed), as kubectl
// sorts: numbers numerically, strings that are all quantities as
// quantities, RFC 3339 times by time, other strings in natural order
// ("pod-2" before "pod-10"); an object without the field comes first.
// order[i] is the index in trees of the i-th object. A field no object
// has is an error, as are values that do not sort (booleans, maps,
// lists, a number against a string).
func SortOrder(trees []any, field string) ([]int, error) {
	tmpl, err := RelaxedJSONPath(field)
	if err != nil {
		return nil, err
	}
	p, err := jsonpath.Parse(tmpl)
	if err != nil {
		return nil, fmt.Errorf("sorting error: %v", err)
	}
	p.AllowMissingKeys(true)
	keys := make([]any, len(trees))
	found := false
	for i, t := range trees {
		results, err := p.FindResults(t)
		if err != nil {
			return nil, err
		}
		if len(results) > 0 && len(results[0]) > 0 {
			keys[i], found = results[0][0], true
			if _, ok := keys[i].(string); !ok {
				if _, ok := number(keys[i]); !ok {
					return nil, fmt.Errorf("field %s is an unsortable type: %T", tmpl, keys[i])
				}
			}
		} else {
			keys[i] = missing{}
		}
	}
	if len(trees) > 0 && !found {
		return nil, fmt.Errorf("couldn't find any field with path %q in the list of objects", tmpl)
	}
	// All strings, or all numbers: anything else does not compare.
	strs, allQuantities, allTimes := 0, true, true
	for _, k := range keys {
		if s, ok := k.(string); ok {
			strs++
			if _, err := quantity.Parse(s); err != nil {
				allQuantities = false
			}
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				allTimes = false
			}
		}
	}
	if strs > 0 {
		for _, k := range keys {
			if _, ok := number(k); ok {
				return nil, fmt.Errorf("field %s has numbers and strings: they do not sort together", tmpl)
			}
		}
	}
	order := make([]int, len(trees))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ka, kb := keys[a], keys[b]
		_, ma := ka.(missing)
		_, mb := kb.(missing)
		switch {
		case ma && mb:
			return 0
		case ma:
			return -1
		case mb:
			return 1
		}
		if x, ok := number(ka); ok {
			y, _ := number(kb)
			return cmp.Compare(x, y)
		}
		x, y := ka.(string), kb.(string)
		switch {
		case allQuantities:
			return quantity.MustParse(x).Cmp(quantity.MustParse(y))
		case allTimes:
			tx, _ := time.Parse(time.RFC3339Nano, x)
			ty, _ := time.Parse(time.RFC3339Nano, y)
			return tx.Compare(ty)
		}
		return naturalCompare(x, y)
	})
	return order, nil
}

type missing struct{}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// naturalCompare orders strings with their runs of digits compared as
// numbers (kubectl's sortorder.NaturalLess): "a2" < "a10".
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		switch {
		case da && db:
			na, ra := digits(a)
			nb, rb := digits(b)
			// Compare the numbers' values: without leading zeros, the
			// longer is larger, else the larger string.
			ta, tb := trimZeros(na), trimZeros(nb)
			if len(ta) != len(tb) {
				return cmp.Compare(len(ta), len(tb))
			}
			if ta != tb {
				return cmp.Compare(ta, tb)
			}
			if len(na) != len(nb) { // same value: fewer leading zeros first
				return cmp.Compare(len(na), len(nb))
			}
			a, b = ra, rb
		case da != db || a[0] != b[0]:
			return cmp.Compare(int(a[0]), int(b[0]))
		default:
			a, b = a[1:], b[1:]
		}
	}
	return cmp.Compare(len(a), len(b))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digits(s string) (num, rest string) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}
