package describe

import (
	"maps"
	"slices"

	corev1 "skiff.dev/proto/core/v1"
)

// secret describes a Secret as kubectl does: its metadata, its type and
// each key of its data with the value's size in bytes. Never a value:
// not even a service account token's, which kubectl prints.
func (p *out) secret(s *corev1.Secret) {
	m := s.GetMetadata()
	p.meta(m, true)
	p.multi(0, "Labels", m.GetLabels(), "=")
	p.multi(0, "Annotations", m.GetAnnotations(), ": ")
	p.line(0, "")
	p.kv(0, "Type", s.GetType())
	p.line(0, "")
	p.line(0, "Data")
	p.line(0, "====")
	for _, k := range slices.Sorted(maps.Keys(s.GetData())) {
		p.line(0, "%s:\t%d bytes", k, len(s.GetData()[k]))
	}
	// A stored Secret has no stringData (it is merged into data on
	// write); a manifest's (describe -f of one not yet applied) may:
	// its keys and sizes too, never its values.
	for _, k := range slices.Sorted(maps.Keys(s.GetStringData())) {
		if _, ok := s.GetData()[k]; !ok {
			p.line(0, "%s:\t%d bytes", k, len(s.GetStringData()[k]))
		}
	}
}
