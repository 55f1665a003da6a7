package apiserver

import "skiff.dev/services/apiserver/admission"

// wireAdmission builds the admission chain from cfg.Admission and gives it
// to the registries; its informers start in the first post-start hook. The
// second creates the system namespaces (with admission on or off), the
// third the kubernetes Service, the fourth the system PriorityClasses;
// the other parts' hooks run after them.
// Webhooks without a caBundle are verified with the cluster CA when TLS
// is on and the options name no other (WebhookClusterCA).
func (s *Server) wireAdmission() error {
	first := []postStartHook{s.systemNamespacesHook(), s.kubernetesServiceHook(), s.systemPriorityClassesHook()}
	defer func() { s.postStart = append(first, s.postStart...) }()
	o := s.cfg.Admission
	if o.WebhookClusterCA == nil && s.tls != nil && s.tls.CA != nil {
		o.WebhookClusterCA = s.tls.CA.Pool()
	}
	o.NoTokenVolumes = s.tls == nil || s.tls.ServiceAccountKey == nil // as tokenIssuer.create refuses
	chain, err := admission.New(o, admission.Config{Loopback: s.loopback, Registerer: s.cfg.Registry, Logger: s.log, Now: s.now})
	if err != nil || chain == nil {
		return err
	}
	for _, set := range s.admissionTargets {
		set(chain)
	}
	first = append([]postStartHook{{name: "admission", run: chain.Start}}, first...)
	return nil
}
