package registry

import "context"

type managedFieldsSetKey struct{}

// WithManagedFieldsSet marks ctx's writes as carrying managedFields a
// field manager computed (the HTTP API's writes): they are written as
// they are, none meaning none (Kubernetes' reset with [{}]). Other
// updates without managedFields keep the object's.
func WithManagedFieldsSet(ctx context.Context) context.Context {
	return context.WithValue(ctx, managedFieldsSetKey{}, true)
}

func managedFieldsSet(ctx context.Context) bool {
	set, _ := ctx.Value(managedFieldsSetKey{}).(bool)
	return set
}
