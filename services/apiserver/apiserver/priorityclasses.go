package apiserver

import (
	"context"
	"fmt"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/defaults"
)

// systemPriorityClassesHook creates the system PriorityClasses
// (system-node-critical, system-cluster-critical) when they are missing,
// as Kubernetes' apiserver does at start; existing ones are left alone
// (validation keeps their value and globalDefault what they must be).
func (s *Server) systemPriorityClassesHook() postStartHook {
	return postStartHook{name: "scheduling/bootstrap-system-priority-classes", run: func(ctx context.Context) error {
		pcs := client.PriorityClasses(s.loopback)
		for _, pc := range defaults.SystemPriorityClasses() {
			_, err := pcs.Create(ctx, pc)
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating PriorityClass %s: %w", pc.GetMetadata().GetName(), err)
			}
		}
		return nil
	}}
}
