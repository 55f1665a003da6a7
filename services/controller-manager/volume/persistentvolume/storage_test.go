package persistentvolume_test

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	storagev1 "skiff.dev/proto/storage/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/simnode"
	"skiff.dev/services/controller-manager/volume/localpath"
	pvctrl "skiff.dev/services/controller-manager/volume/persistentvolume"
	"skiff.dev/services/controller-manager/volume/protection"
)

const timeout = 20 * time.Second

// cluster is an apiserver with the storage admission plugins, the binder,
// both protection controllers and the local-path provisioner (with its
// default class when defaultClass).
type cluster struct {
	*managertest.Env
	claims  *informer.Informer[*corev1.PersistentVolumeClaim]
	volumes *informer.Informer[*corev1.PersistentVolume]
	pvcAPI  *client.Resource[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList]
	pvAPI   *client.Resource[*corev1.PersistentVolume, *corev1.PersistentVolumeList]
}

func start(t *testing.T, defaultClass string) *cluster {
	e := managertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Admission = admission.Options{EnablePlugins: []string{admission.DefaultStorageClassName, admission.StorageObjectInUseProtectionName}}
	}))
	c := &cluster{Env: e,
		claims:  informer.For(e.Manager.Informers, client.PersistentVolumeClaims(e.Conn)),
		volumes: informer.For(e.Manager.Informers, client.PersistentVolumes(e.Conn)),
		pvcAPI:  client.PersistentVolumeClaims(e.Conn),
		pvAPI:   client.PersistentVolumes(e.Conn),
	}
	managertest.Watch(e, c.claims)
	managertest.Watch(e, c.volumes)
	managertest.Watch(e, informer.For(e.Manager.Informers, client.StorageClasses(e.Conn)))
	binder := pvctrl.New(e.Manager, pvctrl.Options{})
	pvcp := protection.NewPVCProtection(e.Manager, protection.Options{})
	pvp := protection.NewPVProtection(e.Manager, protection.Options{})
	lp := localpath.New(e.Manager, localpath.Options{DefaultStorageClass: defaultClass})
	e.SimNode(simnode.Options{NodeName: "node-1"})
	e.StartInformers()
	e.GoErr(binder.Run)
	e.GoErr(pvcp.Run)
	e.GoErr(pvp.Run)
	e.GoErr(lp.Run)
	return c
}

func hostPathPV(name, size, policy string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{Metadata: &metav1.ObjectMeta{Name: name},
		Spec: &corev1.PersistentVolumeSpec{Capacity: map[string]string{"storage": size}, AccessModes: []string{"ReadWriteOnce"},
			PersistentVolumeReclaimPolicy: policy, HostPath: &corev1.HostPathVolumeSource{Path: "/srv/" + name}}}
}

func newClaim(name, size string, class *string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: &corev1.PersistentVolumeClaimSpec{AccessModes: []string{"ReadWriteOnce"}, StorageClassName: class,
			Resources: &corev1.VolumeResourceRequirements{Requests: map[string]string{"storage": size}}}}
}

func (c *cluster) create(objs ...proto.Message) {
	c.T.Helper()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.PersistentVolume:
			_, err = c.pvAPI.Create(c.Ctx, o)
		case *corev1.PersistentVolumeClaim:
			_, err = c.pvcAPI.Create(c.Ctx, o)
		case *corev1.Pod:
			_, err = client.Pods(c.Conn).Create(c.Ctx, o)
		case *corev1.Node:
			_, err = client.Nodes(c.Conn).Create(c.Ctx, o)
		}
		if err != nil {
			c.T.Fatalf("create: %v", err)
		}
	}
}

func (c *cluster) claim(name string) (*corev1.PersistentVolumeClaim, bool) {
	return c.claims.Store().GetByName("default", name)
}

func (c *cluster) volume(name string) (*corev1.PersistentVolume, bool) {
	return c.volumes.Store().Get(name)
}

// awaitBound waits until claim is Bound to volume on both sides.
func (c *cluster) awaitBound(claim, volume string) {
	c.T.Helper()
	c.Await(timeout, "claim "+claim+" bound to "+volume, func() (bool, string) {
		pvc, ok := c.claim(claim)
		pv, ok2 := c.volume(volume)
		if !ok || !ok2 {
			return false, managertest.Explain("claim found %v, volume found %v", ok, ok2)
		}
		ok = pvc.GetStatus().GetPhase() == "Bound" && pvc.GetSpec().GetVolumeName() == volume &&
			pv.GetStatus().GetPhase() == "Bound" && pv.GetSpec().GetClaimRef().GetUid() == pvc.GetMetadata().GetUid()
		return ok, managertest.Explain("claim %s -> %q, volume %s -> %v", pvc.GetStatus().GetPhase(), pvc.GetSpec().GetVolumeName(), pv.GetStatus().GetPhase(), pv.GetSpec().GetClaimRef())
	})
}

func (c *cluster) awaitVolume(name, what string, cond func(pv *corev1.PersistentVolume, ok bool) bool) {
	c.T.Helper()
	c.Await(timeout, "volume "+name+" "+what, func() (bool, string) {
		pv, ok := c.volume(name)
		return cond(pv, ok), managertest.Explain("found %v: %v", ok, pv)
	})
}

func (c *cluster) deleteClaim(name string) {
	c.T.Helper()
	if _, err := c.pvcAPI.Delete(c.Ctx, &metav1.DeleteRequest{Namespace: "default", Name: name}); err != nil {
		c.T.Fatalf("delete claim %s: %v", name, err)
	}
}

// TestStaticBinding: of two volumes that fit, the claim gets the smaller;
// both sides are written as Kubernetes writes them; the other volume stays
// Available.
func TestStaticBinding(t *testing.T) {
	c := start(t, "")
	c.create(hostPathPV("big", "10Gi", ""), hostPathPV("small", "2Gi", ""), hostPathPV("tiny", "512Mi", ""))
	for _, n := range []string{"big", "small", "tiny"} {
		// The binder binds what it has seen: all three, before the claim.
		c.awaitVolume(n, "Available", func(pv *corev1.PersistentVolume, ok bool) bool { return ok && pv.Status.GetPhase() == "Available" })
	}
	c.create(newClaim("data", "1Gi", proto.String("")))
	c.awaitBound("data", "small")

	pvc, _ := c.claim("data")
	if a := pvc.Metadata.Annotations; a[pvctrl.AnnBindCompleted] != "yes" || a[pvctrl.AnnBoundByController] != "yes" {
		t.Errorf("claim annotations %v", a)
	}
	if st := pvc.Status; st.Capacity["storage"] != "2Gi" || !slices.Equal(st.AccessModes, []string{"ReadWriteOnce"}) {
		t.Errorf("claim status %v, want the volume's capacity and access modes", st)
	}
	pv, _ := c.volume("small")
	if ref := pv.Spec.ClaimRef; ref.Kind != "PersistentVolumeClaim" || ref.Namespace != "default" || ref.Name != "data" || ref.ApiVersion != "v1" {
		t.Errorf("claimRef %v", ref)
	}
	if pv.Metadata.Annotations[pvctrl.AnnBoundByController] != "yes" {
		t.Errorf("volume annotations %v", pv.Metadata.Annotations)
	}
	c.awaitVolume("big", "Available", func(pv *corev1.PersistentVolume, ok bool) bool { return ok && pv.Status.GetPhase() == "Available" })

	// A claim no volume fits waits, saying so.
	c.create(newClaim("huge", "1Ti", proto.String("")))
	c.Await(timeout, "FailedBinding on claim huge", func() (bool, string) {
		r := c.EventReasons("PersistentVolumeClaim", "default", "huge")
		return r["FailedBinding"] == "no persistent volumes available for this claim and no storage class is set", managertest.Explain("%v", r)
	})
}

// TestReclaim: when a claim goes, its volume is Released and then deleted
// (reclaimPolicy Delete) or kept Released (Retain).
func TestReclaim(t *testing.T) {
	c := start(t, "")
	c.create(hostPathPV("keep", "1Gi", "Retain"), newClaim("a", "1Gi", proto.String("")))
	c.awaitBound("a", "keep")
	c.create(hostPathPV("drop", "1Gi", "Delete"), newClaim("b", "1Gi", proto.String("")))
	c.awaitBound("b", "drop")

	c.deleteClaim("a")
	c.deleteClaim("b")
	c.awaitVolume("keep", "Released", func(pv *corev1.PersistentVolume, ok bool) bool { return ok && pv.Status.GetPhase() == "Released" })
	c.awaitVolume("drop", "deleted", func(_ *corev1.PersistentVolume, ok bool) bool { return !ok })
	if _, err := c.pvAPI.Get(c.Ctx, "", "drop"); !apierrors.IsNotFound(err) {
		t.Errorf("volume drop: %v, want NotFound", err)
	}
	pv, _ := c.volume("keep")
	if pv.GetMetadata().GetDeletionTimestamp() != nil || pv.Spec.ClaimRef == nil {
		t.Errorf("a retained volume keeps its claimRef and is not deleted: %v", pv)
	}
}

// TestProtection: a claim used by a running pod is not removed when
// deleted, until the pod is gone; then its volume is released.
func TestProtection(t *testing.T) {
	c := start(t, "")
	c.create(hostPathPV("pv", "1Gi", "Retain"), newClaim("data", "1Gi", proto.String("")))
	c.awaitBound("data", "pv")
	pod := &corev1.Pod{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "db"}, Spec: &corev1.PodSpec{NodeName: "node-1",
		Containers: []*corev1.Container{{Name: "db", Image: "postgres:16"}},
		Volumes:    []*corev1.Volume{{Name: "data", PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}
	c.create(pod)
	c.Await(timeout, "pod db Running", func() (bool, string) {
		p, ok := c.Pods().Store().GetByName("default", "db")
		return ok && p.GetStatus().GetPhase() == "Running", managertest.Explain("%v", p.GetStatus())
	})

	before := c.Metric("controller_reconcile_total", "controller", protection.PVCName)
	c.deleteClaim("data")
	// The controller has looked at the deleted claim (at least once more
	// after the deletion) and kept it.
	c.Await(timeout, "pvc-protection synced the deleted claim", func() (bool, string) {
		pvc, ok := c.claim("data")
		after := c.Metric("controller_reconcile_total", "controller", protection.PVCName)
		return ok && pvc.Metadata.DeletionTimestamp != nil && after > before, managertest.Explain("%v %v", after, pvc.GetMetadata())
	})
	pvc, err := c.pvcAPI.Get(c.Ctx, "default", "data")
	if err != nil || !slices.Contains(pvc.Metadata.Finalizers, protection.PVCFinalizer) {
		t.Fatalf("a claim in use lost its protection: %v %v", err, pvc.GetMetadata())
	}
	if pv, _ := c.volume("pv"); pv.Status.GetPhase() != "Bound" {
		t.Errorf("the volume of a claim in use is %s", pv.Status.GetPhase())
	}

	// The pod goes (the simulated node finishes it): the claim goes, the
	// volume is released.
	if _, err := client.Pods(c.Conn).Delete(c.Ctx, &metav1.DeleteRequest{Namespace: "default", Name: "db"}); err != nil {
		t.Fatal(err)
	}
	c.Await(timeout, "claim data gone", func() (bool, string) {
		_, ok := c.claim("data")
		return !ok, ""
	})
	c.awaitVolume("pv", "Released", func(pv *corev1.PersistentVolume, ok bool) bool { return ok && pv.Status.GetPhase() == "Released" })
}

// TestDynamicProvisioning: a claim without a class gets the default class
// local-path (made by the provisioner), waits for its first consumer, and
// once the scheduler's selected-node annotation is on it, the provisioner
// makes its volume under the node's root and the binder binds both. When
// the claim goes the volume is deleted, down to the finalizer the node
// agent removes.
func TestDynamicProvisioning(t *testing.T) {
	c := start(t, localpath.DefaultClassName)
	c.Await(timeout, "default class local-path", func() (bool, string) {
		_, ok := informer.For(c.Manager.Informers, client.StorageClasses(c.Conn)).Store().Get("local-path")
		return ok, ""
	})
	c.create(&corev1.Node{Metadata: &metav1.ObjectMeta{Name: "node-1",
		Labels:      map[string]string{"kubernetes.io/hostname": "node-1"},
		Annotations: map[string]string{localpath.AnnVolumeRoot: "/var/lib/skiff/volumes"}}})
	c.create(newClaim("data", "3Gi", nil))
	c.Await(timeout, "WaitForFirstConsumer", func() (bool, string) {
		r := c.EventReasons("PersistentVolumeClaim", "default", "data")
		_, ok := r["WaitForFirstConsumer"]
		return ok, managertest.Explain("%v", r)
	})
	pvc, _ := c.claim("data")
	if pvc.Spec.GetStorageClassName() != "local-path" || pvc.Status.GetPhase() != "Pending" {
		t.Fatalf("claim: class %q, phase %q", pvc.Spec.GetStorageClassName(), pvc.Status.GetPhase())
	}

	// What the scheduler does before binding the claim's first pod.
	pvc = proto.Clone(pvc).(*corev1.PersistentVolumeClaim)
	pvc.Metadata.Annotations = map[string]string{pvctrl.AnnSelectedNode: "node-1"}
	if _, err := c.pvcAPI.Update(c.Ctx, pvc); err != nil {
		t.Fatal(err)
	}
	name := "pvc-" + pvc.Metadata.Uid
	c.awaitBound("data", name)

	pvc, _ = c.claim("data")
	if a := pvc.Metadata.Annotations; a[pvctrl.AnnStorageProvisioner] != localpath.Provisioner || a[pvctrl.AnnBetaStorageProvisioner] != localpath.Provisioner {
		t.Errorf("claim annotations %v", a)
	}
	pv, _ := c.volume(name)
	if got, want := pv.Spec.GetLocal().GetPath(), "/var/lib/skiff/volumes/"+name+"_default_data"; got != want {
		t.Errorf("local path %q, want %q", got, want)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != "Delete" || pv.Spec.StorageClassName != "local-path" || pv.Spec.Capacity["storage"] != "3Gi" ||
		pv.Metadata.Annotations[pvctrl.AnnDynamicallyProvisioned] != localpath.Provisioner {
		t.Errorf("volume %v", pv)
	}
	if !slices.Contains(pv.Metadata.Finalizers, localpath.Finalizer) || !slices.Contains(pv.Metadata.Finalizers, protection.PVFinalizer) {
		t.Errorf("volume finalizers %v", pv.Metadata.Finalizers)
	}
	// Events are written after the claim's update, on their own.
	c.Await(timeout, "event ProvisioningSucceeded", func() (bool, string) {
		r := c.EventReasons("PersistentVolumeClaim", "default", "data")
		return r["ProvisioningSucceeded"] == "Successfully provisioned volume "+name, managertest.Explain("%v", r)
	})

	// The claim goes: the volume is deleted, and waits for the node agent.
	c.deleteClaim("data")
	c.awaitVolume(name, "deleted, waiting for the node agent", func(pv *corev1.PersistentVolume, ok bool) bool {
		return ok && pv.Metadata.DeletionTimestamp != nil && slices.Equal(pv.Metadata.Finalizers, []string{localpath.Finalizer})
	})
	// What the node agent does once the directory is removed.
	pv, _ = c.volume(name)
	pv = proto.Clone(pv).(*corev1.PersistentVolume)
	pv.Metadata.Finalizers = nil
	if _, err := c.pvAPI.Update(c.Ctx, pv); err != nil {
		t.Fatal(err)
	}
	c.awaitVolume(name, "gone", func(_ *corev1.PersistentVolume, ok bool) bool { return !ok })
}

// TestProvisioningFailsWithoutRoot: a node whose agent did not announce a
// volume root gets its claim a ProvisioningFailed event; the annotation's
// arrival provisions it.
func TestProvisioningFailsWithoutRoot(t *testing.T) {
	c := start(t, localpath.DefaultClassName)
	c.Await(timeout, "default class local-path", func() (bool, string) {
		_, ok := informer.For(c.Manager.Informers, client.StorageClasses(c.Conn)).Store().Get("local-path")
		return ok, ""
	})
	c.create(&corev1.Node{Metadata: &metav1.ObjectMeta{Name: "node-1"}})
	claim := newClaim("data", "1Gi", nil)
	claim.Metadata.Annotations = map[string]string{pvctrl.AnnSelectedNode: "node-1"}
	c.create(claim)
	c.Await(timeout, "ProvisioningFailed", func() (bool, string) {
		r := c.EventReasons("PersistentVolumeClaim", "default", "data")
		_, ok := r["ProvisioningFailed"]
		return ok, managertest.Explain("%v", r)
	})
	node, err := client.Nodes(c.Conn).Get(c.Ctx, "", "node-1")
	if err != nil {
		t.Fatal(err)
	}
	node.Metadata.Annotations = map[string]string{localpath.AnnVolumeRoot: "/data"}
	if _, err := client.Nodes(c.Conn).Update(c.Ctx, node); err != nil {
		t.Fatal(err)
	}
	pvc, _ := c.claim("data")
	c.awaitBound("data", "pvc-"+pvc.Metadata.Uid)
}

// TestStaticWaitForFirstConsumer: Kubernetes' static local volumes (a
// WaitForFirstConsumer class without a provisioner): a claim waits for its
// first consumer and, once the scheduler placed it, takes a volume
// reachable from that node, never one of another node.
func TestStaticWaitForFirstConsumer(t *testing.T) {
	c := start(t, "")
	if _, err := client.StorageClasses(c.Conn).Create(c.Ctx, &storagev1.StorageClass{Metadata: &metav1.ObjectMeta{Name: "local-storage"},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: proto.String("WaitForFirstConsumer")}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"node-1", "node-2"} {
		c.create(&corev1.Node{Metadata: &metav1.ObjectMeta{Name: n, Labels: map[string]string{"kubernetes.io/hostname": n}}})
		pv := &corev1.PersistentVolume{Metadata: &metav1.ObjectMeta{Name: "disk-" + n},
			Spec: &corev1.PersistentVolumeSpec{Capacity: map[string]string{"storage": "10Gi"}, AccessModes: []string{"ReadWriteOnce"},
				StorageClassName: "local-storage", Local: &corev1.LocalVolumeSource{Path: "/mnt/disk"},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []*corev1.NodeSelectorTerm{{
					MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{n}}}}}}}}}
		c.create(pv)
		c.awaitVolume(pv.Metadata.Name, "Available", func(pv *corev1.PersistentVolume, ok bool) bool { return ok && pv.Status.GetPhase() == "Available" })
	}
	c.create(newClaim("data", "1Gi", proto.String("local-storage")))
	c.Await(timeout, "WaitForFirstConsumer", func() (bool, string) {
		r := c.EventReasons("PersistentVolumeClaim", "default", "data")
		_, ok := r["WaitForFirstConsumer"]
		return ok, managertest.Explain("%v", r)
	})
	pvc, _ := c.claim("data")
	pvc = proto.Clone(pvc).(*corev1.PersistentVolumeClaim)
	pvc.Metadata.Annotations = map[string]string{pvctrl.AnnSelectedNode: "node-2"}
	if _, err := c.pvcAPI.Update(c.Ctx, pvc); err != nil {
		t.Fatal(err)
	}
	c.awaitBound("data", "disk-node-2")
}
