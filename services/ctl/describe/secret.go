package describe

import (
	"maps"
	"slices"
	"strconv"

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

// envFrom is one source of a container's envFrom, as kubectl prints it.
func (p *out) envFrom(ef *corev1.EnvFromSource) {
	from, name, optional := "", "", false
	switch {
	case ef.GetConfigMapRef() != nil:
		from, name, optional = "ConfigMap", ef.GetConfigMapRef().GetName(), ef.GetConfigMapRef().GetOptional()
	case ef.GetSecretRef() != nil:
		from, name, optional = "Secret", ef.GetSecretRef().GetName(), ef.GetSecretRef().GetOptional()
	}
	if ef.GetPrefix() == "" {
		p.line(3, "%s\t%s\tOptional: %v", name, from, optional)
	} else {
		p.line(3, "%s\t%s with prefix '%s'\tOptional: %v", name, from, ef.GetPrefix(), optional)
	}
}

// secretVolume describes a secret, downward API or projected volume as
// kubectl does (names and paths, never contents).
func (p *out) secretVolume(v *corev1.Volume) {
	switch {
	case v.GetSecret() != nil:
		p.kv(2, "Type", "Secret (a volume populated by a Secret)")
		p.kv(2, "SecretName", v.GetSecret().GetSecretName())
		p.kv(2, "Optional", v.GetSecret().GetOptional())
	case v.GetDownwardApi() != nil:
		p.kv(2, "Type", "DownwardAPI (a volume populated by information about the pod)")
		p.downwardItems(v.GetDownwardApi().GetItems())
	case v.GetProjected() != nil:
		p.kv(2, "Type", "Projected (a volume that contains injected data from multiple sources)")
		for _, src := range v.GetProjected().GetSources() {
			switch {
			case src.GetSecret() != nil:
				p.kv(2, "SecretName", src.GetSecret().GetName())
				p.kv(2, "SecretOptionalName", optionalOf(src.GetSecret().Optional))
			case src.GetDownwardApi() != nil:
				p.kv(2, "DownwardAPI", "true")
			case src.GetConfigMap() != nil:
				p.kv(2, "ConfigMapName", src.GetConfigMap().GetName())
				p.kv(2, "ConfigMapOptional", optionalOf(src.GetConfigMap().Optional))
			case src.GetServiceAccountToken() != nil:
				sat := src.GetServiceAccountToken()
				if sat.ExpirationSeconds != nil {
					p.kv(2, "TokenExpirationSeconds", sat.GetExpirationSeconds())
				} else {
					p.kv(2, "TokenExpirationSeconds", "<unset>")
				}
			}
		}
	}
}

func (p *out) downwardItems(items []*corev1.DownwardAPIVolumeFile) {
	p.line(2, "Items:")
	for _, it := range items {
		if it.GetFieldRef() != nil {
			p.line(3, "%s -> %s", it.GetFieldRef().GetFieldPath(), it.GetPath())
		}
		if it.GetResourceFieldRef() != nil {
			p.line(3, "%s -> %s", it.GetResourceFieldRef().GetResource(), it.GetPath())
		}
	}
}

// optionalOf prints an optional bool as kubectl's %v of a *bool would
// mean it: <nil> when unset.
func optionalOf(b *bool) string {
	if b == nil {
		return "<nil>"
	}
	return strconv.FormatBool(*b)
}
