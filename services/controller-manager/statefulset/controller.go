package statefulset

import (
	"context"
	"slices"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/workqueue"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/history"
	"skiff.dev/services/controller-manager/manager"
)

// Name is the controller's name in --controllers.
const Name = "statefulset"

// DefaultWorkers is the default of Options.Workers (Kubernetes'
// --concurrent-statefulset-syncs).
const DefaultWorkers = 5

// Options configure the controller. Zero values pick the defaults.
type Options struct {
	// Workers is the number of StatefulSets synced in parallel
	// (--concurrent-statefulset-syncs, default 5).
	Workers int
}

// Controller keeps each StatefulSet's ordered pods and their claims.
type Controller struct {
	log   *zap.Logger
	rec   events.Recorder
	clock workqueue.Clock

	pods      *informer.Informer[*corev1.Pod]
	sets      *informer.Informer[*appsv1.StatefulSet]
	claims    *informer.Informer[*corev1.PersistentVolumeClaim]
	revisions *informer.Informer[*appsv1.ControllerRevision]

	podClient   *client.Resource[*corev1.Pod, *corev1.PodList]
	setClient   *client.Resource[*appsv1.StatefulSet, *appsv1.StatefulSetList]
	claimClient *client.Resource[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList]
	history     *history.History

	expectations *expectations
	queue        *controller.Controller
}

// orphanIndex indexes pods without a controller by namespace.
const orphanIndex = "statefulset.orphansByNamespace"

func orphanNamespace(p *corev1.Pod) []string {
	if controllerutil.ControllerOf(p.GetMetadata()) != nil {
		return nil
	}
	return []string{p.GetMetadata().GetNamespace()}
}

// New builds the controller on the shared informers of pods, StatefulSets,
// claims and ControllerRevisions; the manager starts them.
func New(mc *manager.Context, o Options) *Controller {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	parts := mc.For(Name)
	revClient := client.ControllerRevisions(mc.Conn)
	c := &Controller{
		log:          parts.Logger,
		rec:          parts.Recorder,
		clock:        parts.Clock,
		pods:         informer.For(mc.Informers, client.Pods(mc.Conn)),
		sets:         informer.For(mc.Informers, client.StatefulSets(mc.Conn)),
		claims:       informer.For(mc.Informers, client.PersistentVolumeClaims(mc.Conn)),
		revisions:    informer.For(mc.Informers, revClient),
		podClient:    client.Pods(mc.Conn),
		setClient:    client.StatefulSets(mc.Conn),
		claimClient:  client.PersistentVolumeClaims(mc.Conn),
		expectations: newExpectations(parts.Clock.Now),
	}
	c.history = history.New(revClient, c.revisions)
	c.queue = parts.Runner(Name, o.Workers, controller.ReconcileFunc(c.Reconcile))
	c.pods.AddIndex(orphanIndex, orphanNamespace)
	c.sets.AddHandler(informer.Handler[*appsv1.StatefulSet]{
		OnAdd:    c.addSet,
		OnUpdate: c.updateSet,
		OnDelete: c.deleteSet,
	})
	c.claims.AddHandler(informer.Handler[*corev1.PersistentVolumeClaim]{
		OnUpdate: func(old, cur *corev1.PersistentVolumeClaim) {
			if !slices.EqualFunc(old.GetMetadata().GetOwnerReferences(), cur.GetMetadata().GetOwnerReferences(), func(a, b *metav1.OwnerReference) bool { return proto.Equal(a, b) }) {
				c.claimChanged(cur)
			}
		},
		OnDelete: c.claimChanged,
	})
	c.pods.AddHandler(informer.Handler[*corev1.Pod]{
		OnAdd:    c.addPod,
		OnUpdate: c.updatePod,
		OnDelete: c.deletePod,
	})
	return c
}

// Run waits for the informers to sync, then syncs StatefulSets until ctx
// ends.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.pods, c.sets, c.claims, c.revisions) {
		return nil
	}
	return c.queue.Run(ctx)
}

func keyOf(set *appsv1.StatefulSet) string { return informer.Key(set) }
