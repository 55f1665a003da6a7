// Package manager wires the controllers of skiff-controller-manager: the
// shared pieces every controller gets (Context), the catalogue of
// controllers by name, and Run, which starts the chosen ones, behind leader
// election when asked. It owns no control loop itself.
package manager

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
)

// Context is what every controller is built from. Controllers take their
// informers from the shared factory (informer.For), so each kind is listed
// and watched once per process.
type Context struct {
	Conn         grpc.ClientConnInterface
	Informers    *informer.Factory
	Recorder     func(component string) events.Recorder
	Logger       *zap.Logger
	Registerer   prometheus.Registerer
	QueueMetrics *workqueue.Metrics
	Clock        workqueue.Clock
}
