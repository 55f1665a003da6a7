package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
)

// localVolumes removes the directories of deleted local-path volumes of
// this node: a PersistentVolume with a deletionTimestamp, the finalizer
// skiff.dev/local-path-volume and a nodeAffinity naming this node has its
// directory removed (only when it is under Config.LocalVolumeRoot), then
// its finalizer, which lets the apiserver delete it.
type localVolumes struct {
	root string
	node string // the node's kubernetes.io/hostname label
	log  *zap.Logger

	pvs    *informer.Informer[*corev1.PersistentVolume]
	client *client.Resource[*corev1.PersistentVolume, *corev1.PersistentVolumeList]
	ctrl   *controller.Controller
}

func newLocalVolumes(a *Agent) *localVolumes {
	node := a.cfg.NodeName
	if h, ok := a.cfg.Labels["kubernetes.io/hostname"]; ok {
		node = h
	}
	lv := &localVolumes{
		root:   a.cfg.LocalVolumeRoot,
		node:   node,
		log:    a.log.Named("local-volumes"),
		client: client.PersistentVolumes(a.cfg.API),
	}
	lv.pvs = informer.New(informer.FromClient(lv.client), informer.Options{Logger: a.log.Named("informer")})
	lv.ctrl = controller.New(controller.ReconcileFunc(lv.reconcile), controller.Options{
		Name: "node-agent-local-volumes", Logger: lv.log, Registerer: a.cfg.Registerer,
	})
	enqueue := func(pv *corev1.PersistentVolume) {
		if lv.due(pv) {
			lv.ctrl.Enqueue(pv.GetMetadata().GetName())
		}
	}
	lv.pvs.AddHandler(informer.Handler[*corev1.PersistentVolume]{
		OnAdd:    enqueue,
		OnUpdate: func(_, cur *corev1.PersistentVolume) { enqueue(cur) },
	})
	return lv
}

func (lv *localVolumes) run(ctx context.Context) {
	done := make(chan struct{})
	go func() { defer close(done); lv.pvs.Run(ctx) }()
	if informer.WaitForSync(ctx, lv.pvs) {
		_ = lv.ctrl.Run(ctx)
	}
	<-done
}

// due reports a volume of this node being deleted that waits for the
// agent's cleanup.
func (lv *localVolumes) due(pv *corev1.PersistentVolume) bool {
	return pv.GetMetadata().GetDeletionTimestamp() != nil &&
		slices.Contains(pv.GetMetadata().GetFinalizers(), LocalPathFinalizer) &&
		volumeOnNode(pv, lv.node)
}

// volumeOnNode reports whether pv's required nodeAffinity pins it to the
// node with hostname label node: every term requires
// kubernetes.io/hostname In values including it.
func volumeOnNode(pv *corev1.PersistentVolume, node string) bool {
	terms := pv.GetSpec().GetNodeAffinity().GetRequired().GetNodeSelectorTerms()
	if len(terms) == 0 {
		return false
	}
	for _, t := range terms {
		if !slices.ContainsFunc(t.GetMatchExpressions(), func(r *corev1.NodeSelectorRequirement) bool {
			return r.GetKey() == "kubernetes.io/hostname" && r.GetOperator() == "In" && slices.Contains(r.GetValues(), node)
		}) {
			return false
		}
	}
	return true
}

// reconcile cleans up the volume named key if it is due.
func (lv *localVolumes) reconcile(ctx context.Context, key string) (controller.Result, error) {
	pv, ok := lv.pvs.Store().Get(key)
	if !ok || !lv.due(pv) {
		return controller.Result{}, nil
	}
	if err := lv.removeDir(pv); err != nil {
		return controller.Result{}, err
	}
	err := client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		cur, err := lv.client.Get(ctx, "", key)
		if err != nil {
			return err
		}
		if cur.GetMetadata().GetUid() != pv.GetMetadata().GetUid() {
			return nil
		}
		i := slices.Index(cur.GetMetadata().GetFinalizers(), LocalPathFinalizer)
		if i < 0 {
			return nil
		}
		next := proto.Clone(cur).(*corev1.PersistentVolume)
		next.Metadata.Finalizers = slices.Delete(next.Metadata.Finalizers, i, i+1)
		_, err = lv.client.Update(ctx, next)
		return err
	})
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, fmt.Errorf("removing the finalizer of persistentvolume %s: %w", key, err)
	}
	lv.log.Info("local volume removed", zap.String("volume", key), zap.String("path", pv.GetSpec().GetLocal().GetPath()))
	return controller.Result{}, nil
}

// removeDir removes pv's directory when it is under the root. A path
// elsewhere is not the agent's to remove: the finalizer goes anyway, so
// that the volume is not kept forever.
func (lv *localVolumes) removeDir(pv *corev1.PersistentVolume) error {
	path := filepath.Clean(pv.GetSpec().GetLocal().GetPath())
	if pv.GetSpec().GetLocal() == nil || !underRoot(lv.root, path) {
		lv.log.Warn("deleted local-path volume's path is not under the local volume root; left alone",
			zap.String("volume", pv.GetMetadata().GetName()), zap.String("path", path), zap.String("root", lv.root))
		return nil
	}
	if err := os.RemoveAll(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the directory of persistentvolume %s: %w", pv.GetMetadata().GetName(), err)
	}
	return nil
}
