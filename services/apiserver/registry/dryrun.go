package registry

import (
	"context"
	"errors"
)

// A dry run (Kubernetes' dryRun=All) does everything a write does but
// store it: defaults, admission (told it is a dry run: the ResourceQuota
// plugin checks but charges nothing, webhooks see dryRun), validation,
// preconditions; and answers with the object as it would have been
// stored (no resourceVersion of its own, no allocation of cluster IPs or
// node ports).

type dryRunKey struct{}

// WithDryRun marks ctx's writes as dry runs.
func WithDryRun(ctx context.Context) context.Context {
	return context.WithValue(ctx, dryRunKey{}, true)
}

// IsDryRun says whether ctx's writes are dry runs.
func IsDryRun(ctx context.Context) bool {
	dry, _ := ctx.Value(dryRunKey{}).(bool)
	return dry
}

// errDryRun ends a dry run's update before its write.
var errDryRun = errors.New("dry run: not written")
