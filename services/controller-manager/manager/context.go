// Package manager wires the controllers of skiff-controller-manager: the
// shared pieces every controller gets (Context), the catalogue of
// controllers by name, and Run, which starts the chosen ones, behind leader
// election when asked. It owns no control loop itself.
package manager

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"skiff.dev/internal/controller"
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

// For returns what one controller needs of the context, with every field
// the caller left nil given a working default (a no-op logger and
// recorder, the real clock): the controller's named logger, its event
// recorder (source component "<name>-controller"), the clock, and a
// constructor of runners that share the context's metrics.
func (mc *Context) For(name string) Parts {
	p := Parts{mc: mc, Logger: zap.NewNop(), Recorder: events.Nop(), Clock: workqueue.RealClock()}
	if mc.Logger != nil {
		p.Logger = mc.Logger
	}
	p.Logger = p.Logger.Named(name)
	if mc.Recorder != nil {
		p.Recorder = mc.Recorder(name + "-controller")
	}
	if mc.Clock != nil {
		p.Clock = mc.Clock
	}
	return p
}

// Parts is one controller's share of a Context.
type Parts struct {
	mc       *Context
	Logger   *zap.Logger
	Recorder events.Recorder
	Clock    workqueue.Clock
}

// Runner returns a runner of r named name (the queue's and the metrics'
// label) with workers workers.
func (p Parts) Runner(name string, workers int, r controller.Reconciler) *controller.Controller {
	return controller.New(r, controller.Options{
		Name: name, Workers: workers, Logger: p.Logger,
		Metrics: p.mc.QueueMetrics, Clock: p.Clock, Registerer: p.mc.Registerer,
	})
}
