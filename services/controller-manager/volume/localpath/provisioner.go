package localpath

import (
	"context"
	"fmt"
	"path"
	"slices"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/controller"
	"skiff.dev/internal/events"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	storagev1 "skiff.dev/proto/storage/v1"
	"skiff.dev/services/controller-manager/manager"
	pvctrl "skiff.dev/services/controller-manager/volume/persistentvolume"
)

// Name is the controller's name in --controllers.
const Name = "local-path-provisioner"

// The interface with the scheduler and the node agent.
const (
	// Provisioner is the provisioner's name in StorageClasses.
	Provisioner = "skiff.dev/local-path"
	// DefaultClassName is the default class the controller makes.
	DefaultClassName = "local-path"
	// AnnVolumeRoot on a Node: the directory under which its node agent
	// keeps local-path volumes.
	AnnVolumeRoot = "skiff.dev/local-volume-root"
	// Finalizer on a provisioned volume: the node agent removes it after
	// removing the volume's directory.
	Finalizer = "skiff.dev/local-path-volume"
	// LabelHostname is the Node label the volumes' node affinity names.
	LabelHostname = "kubernetes.io/hostname"
	// AnnIsDefaultClass marks the default StorageClass.
	AnnIsDefaultClass = "storageclass.kubernetes.io/is-default-class"
)

// Options configure the controller.
type Options struct {
	// DefaultStorageClass is the name of the default StorageClass made at
	// start ("": none is made). skiff-controller-manager's
	// --default-storage-class, "local-path" by default.
	DefaultStorageClass string
	// Workers provision in parallel (default 1).
	Workers int
}

// indexSelectedNode indexes claims by their selected-node annotation.
const indexSelectedNode = "selectedNode"

// classKey is the queue key of the default class's check (claim keys
// always have a slash).
const classKey = "storageclass"

// Controller provisions local-path volumes; see the package doc.
type Controller struct {
	opts     Options
	claims   *informer.Informer[*corev1.PersistentVolumeClaim]
	volumes  *informer.Informer[*corev1.PersistentVolume]
	classes  *informer.Informer[*storagev1.StorageClass]
	nodes    *informer.Informer[*corev1.Node]
	pvAPI    *client.Resource[*corev1.PersistentVolume, *corev1.PersistentVolumeList]
	classAPI *client.Resource[*storagev1.StorageClass, *storagev1.StorageClassList]
	log      *zap.Logger
	recorder events.Recorder
	runner   *controller.Controller
}

// New builds the controller on mc's shared informers. Call Run.
func New(mc *manager.Context, o Options) *Controller {
	parts := mc.For(Name)
	c := &Controller{
		opts:     o,
		claims:   informer.For(mc.Informers, client.PersistentVolumeClaims(mc.Conn)),
		volumes:  informer.For(mc.Informers, client.PersistentVolumes(mc.Conn)),
		classes:  informer.For(mc.Informers, client.StorageClasses(mc.Conn)),
		nodes:    informer.For(mc.Informers, client.Nodes(mc.Conn)),
		pvAPI:    client.PersistentVolumes(mc.Conn),
		classAPI: client.StorageClasses(mc.Conn),
		log:      parts.Logger,
		recorder: parts.Recorder,
	}
	c.runner = parts.Runner(Name, o.Workers, c)
	c.claims.AddIndex(indexSelectedNode, func(pvc *corev1.PersistentVolumeClaim) []string {
		if n := pvc.GetMetadata().GetAnnotations()[pvctrl.AnnSelectedNode]; n != "" {
			return []string{n}
		}
		return nil
	})
	enqueue := func(pvc *corev1.PersistentVolumeClaim) { c.runner.Enqueue(informer.Key(pvc)) }
	c.claims.AddHandler(informer.Handler[*corev1.PersistentVolumeClaim]{
		OnAdd: enqueue, OnUpdate: func(_, cur *corev1.PersistentVolumeClaim) { enqueue(cur) },
	})
	// A node that gets its root annotation: its waiting claims.
	onNode := func(n *corev1.Node) {
		for _, pvc := range c.claims.Store().ByIndex(indexSelectedNode, n.GetMetadata().GetName()) {
			if pvc.GetSpec().GetVolumeName() == "" {
				enqueue(pvc)
			}
		}
	}
	c.nodes.AddHandler(informer.Handler[*corev1.Node]{OnAdd: onNode, OnUpdate: func(_, cur *corev1.Node) { onNode(cur) }})
	c.classes.AddHandler(informer.Handler[*storagev1.StorageClass]{OnDelete: func(sc *storagev1.StorageClass) {
		if sc.GetMetadata().GetName() == o.DefaultStorageClass {
			c.runner.Enqueue(classKey)
		}
	}})
	return c
}

// Run waits for the informers, makes the default class, then provisions
// until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.claims, c.volumes, c.classes, c.nodes) {
		return nil
	}
	c.runner.Enqueue(classKey)
	return c.runner.Run(ctx)
}

// DefaultClass is the StorageClass the controller makes at start.
func DefaultClass(name string) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		Metadata:          &metav1.ObjectMeta{Name: name, Annotations: map[string]string{AnnIsDefaultClass: "true"}},
		Provisioner:       Provisioner,
		ReclaimPolicy:     proto.String("Delete"),
		VolumeBindingMode: proto.String(pvctrl.BindingWaitForFirstConsumer),
	}
}

// Reconcile makes the default class (classKey) or provisions a claim's
// volume.
func (c *Controller) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	if key == classKey {
		return controller.Result{}, c.ensureDefaultClass(ctx)
	}
	ns, name, err := controller.SplitKey(key)
	if err != nil {
		return controller.Result{}, controller.Terminal(err)
	}
	pvc, ok := c.claims.Store().GetByName(ns, name)
	if !ok || !c.wants(pvc) {
		return controller.Result{}, nil
	}
	return controller.Result{}, c.provision(ctx, pvc)
}

func (c *Controller) ensureDefaultClass(ctx context.Context) error {
	name := c.opts.DefaultStorageClass
	if name == "" {
		return nil
	}
	if _, ok := c.classes.Store().GetByName("", name); ok {
		return nil
	}
	_, err := c.classAPI.Create(ctx, DefaultClass(name))
	switch {
	case err == nil:
		c.log.Info("made the default storage class", zap.String("class", name))
		return nil
	case apierrors.IsAlreadyExists(err):
		return nil
	}
	return fmt.Errorf("creating storage class %s: %w", name, err)
}

// wants says whether pvc waits for a local-path volume: unbound, not being
// deleted, handed to this provisioner by the binder, placed on a node by
// the scheduler, of a class of this provisioner, and without its volume yet.
func (c *Controller) wants(pvc *corev1.PersistentVolumeClaim) bool {
	a := pvc.GetMetadata().GetAnnotations()
	if pvc.GetSpec().GetVolumeName() != "" || pvc.GetMetadata().GetDeletionTimestamp() != nil ||
		a[pvctrl.AnnStorageProvisioner] != Provisioner || a[pvctrl.AnnSelectedNode] == "" {
		return false
	}
	class, ok := c.classes.Store().GetByName("", pvctrl.ClaimClass(pvc))
	if !ok || class.GetProvisioner() != Provisioner {
		return false
	}
	_, exists := c.volumes.Store().Get(VolumeName(pvc))
	return !exists
}

func (c *Controller) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	class, _ := c.classes.Store().GetByName("", pvctrl.ClaimClass(pvc))
	nodeName := pvc.GetMetadata().GetAnnotations()[pvctrl.AnnSelectedNode]
	node, ok := c.nodes.Store().Get(nodeName)
	if !ok {
		c.recorder.Eventf(pvc, events.EventTypeWarning, "ProvisioningFailed", "failed to provision volume with StorageClass %q: node %q not found", class.GetMetadata().GetName(), nodeName)
		return nil // the node's appearance enqueues the claim
	}
	pv, err := Volume(pvc, class, node)
	if err != nil {
		c.recorder.Eventf(pvc, events.EventTypeWarning, "ProvisioningFailed", "failed to provision volume with StorageClass %q: %v", class.GetMetadata().GetName(), err)
		return nil // the node's change enqueues the claim
	}
	c.recorder.Eventf(pvc, events.EventTypeNormal, "Provisioning", "External provisioner is provisioning volume for claim %q", informer.Key(pvc))
	_, err = c.pvAPI.Create(ctx, pv)
	switch {
	case err == nil:
		c.recorder.Eventf(pvc, events.EventTypeNormal, "ProvisioningSucceeded", "Successfully provisioned volume %s", pv.Metadata.Name)
		return nil
	case apierrors.IsAlreadyExists(err):
		return nil
	}
	c.recorder.Eventf(pvc, events.EventTypeWarning, "ProvisioningFailed", "failed to provision volume with StorageClass %q: %v", class.GetMetadata().GetName(), err)
	return fmt.Errorf("creating volume %s for claim %s: %w", pv.Metadata.Name, informer.Key(pvc), err)
}

// VolumeName is the name of the volume provisioned for pvc.
func VolumeName(pvc *corev1.PersistentVolumeClaim) string {
	return "pvc-" + pvc.GetMetadata().GetUid()
}

// Volume builds the PersistentVolume of pvc of class on node, or says why
// it cannot (the node has no volume root).
func Volume(pvc *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, node *corev1.Node) (*corev1.PersistentVolume, error) {
	nm := node.GetMetadata()
	root := nm.GetAnnotations()[AnnVolumeRoot]
	if root == "" {
		return nil, fmt.Errorf("node %q has no annotation %s (its node agent sets it from --local-volume-root)", nm.GetName(), AnnVolumeRoot)
	}
	hostname := nm.GetLabels()[LabelHostname]
	if hostname == "" {
		hostname = nm.GetName()
	}
	m := pvc.GetMetadata()
	name := VolumeName(pvc)
	policy := class.GetReclaimPolicy()
	if policy == "" {
		policy = "Delete"
	}
	var mode *string
	if pvc.GetSpec().VolumeMode != nil {
		mode = proto.String(pvc.GetSpec().GetVolumeMode())
	}
	return &corev1.PersistentVolume{
		Metadata: &metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{pvctrl.AnnDynamicallyProvisioned: Provisioner},
			Finalizers:  []string{Finalizer},
		},
		Spec: &corev1.PersistentVolumeSpec{
			Capacity:                      map[string]string{"storage": pvc.GetSpec().GetResources().GetRequests()["storage"]},
			AccessModes:                   slices.Clone(pvc.GetSpec().GetAccessModes()),
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", ApiVersion: "v1", Namespace: m.GetNamespace(), Name: m.GetName(), Uid: m.GetUid()},
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              class.GetMetadata().GetName(),
			MountOptions:                  slices.Clone(class.GetMountOptions()),
			VolumeMode:                    mode,
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []*corev1.NodeSelectorTerm{{
				MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: LabelHostname, Operator: "In", Values: []string{hostname}}},
			}}}},
			Local: &corev1.LocalVolumeSource{Path: path.Join(root, fmt.Sprintf("%s_%s_%s", name, m.GetNamespace(), m.GetName()))},
		},
	}, nil
}
