package defaults

import corev1 "skiff.dev/proto/core/v1"

// SecretTypeOpaque is the type of a Secret created without one.
const SecretTypeOpaque = "Opaque"

// Secret defaults a Secret as Kubernetes does: type "Opaque", and
// stringData merged into data (a key in both takes stringData's value),
// then cleared: stringData is write-only, never stored nor returned.
func Secret(s *corev1.Secret) {
	if s == nil {
		return
	}
	if s.Type == "" {
		s.Type = SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
}
