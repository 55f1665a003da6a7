package endpointslice

import (
	"skiff.dev/internal/informer"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	"skiff.dev/services/controller-manager/manager"
)

// NewOnSlices builds the controller on the given slices informer, for tests
// whose slices cache lags.
func NewOnSlices(mc *manager.Context, o Options, slices *informer.Informer[*discoveryv1.EndpointSlice]) *Controller {
	return newController(mc, o, slices)
}
