package podresources

import (
	"fmt"

	"skiff.dev/internal/quantity"
	corev1 "skiff.dev/proto/core/v1"
)

// withOverhead adds the pod's spec.overhead to total: to every resource
// (all), or only to those total has (limits). An unparsable overhead
// (validation refuses them) counts as zero and is the error unless err
// already is one.
func withOverhead(total map[string]quantity.Quantity, spec *corev1.PodSpec, all bool, err error) (map[string]quantity.Quantity, error) {
	for name, v := range spec.GetOverhead() {
		q, perr := quantity.Parse(v)
		if perr != nil {
			if err == nil {
				err = fmt.Errorf("overhead: resource %q: %w", name, perr)
			}
			continue
		}
		cur, ok := total[name]
		if !ok && !all {
			continue
		}
		if sum, aerr := cur.Add(q); aerr == nil {
			total[name] = sum
		}
	}
	return total, err
}
