package scheduler

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	storagev1 "skiff.dev/proto/storage/v1"
	"skiff.dev/services/scheduler/plugins"
)

// TestVolumeBinding: pods go where their volumes are. A pod whose claim is
// bound to a volume pinned to node b lands on b; a pod whose claim does
// not exist yet waits, and is scheduled once the claim is created and
// bound; a pod with an unbound claim of a WaitForFirstConsumer class goes
// anywhere, and the scheduler promises the claim to that node.
func TestVolumeBinding(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"a", "b", "c"} {
		e.createNode(nodeSpec{name: n, cpu: "4", mem: "8Gi"})
	}
	e.createClass("local-path", "WaitForFirstConsumer")
	e.createClass("manual", "Immediate")
	e.createVolume("pv-b", "b", "manual")
	e.createClaim("data", "manual")
	e.bindClaim("data", "pv-b")
	e.startScheduler(Config{})

	e.createPod(podWithClaim("pinned", "data"))
	if n := e.nodeOf("pinned", 15*time.Second); n != "b" {
		t.Errorf("pod pinned by its volume to b landed on %s", n)
	}

	// A claim that does not exist yet: FailedScheduling, then scheduled
	// once the claim is there and bound (the claim's events requeue it).
	e.createPod(podWithClaim("later", "late"))
	e.await(15*time.Second, "FailedScheduling for the missing claim", func() (bool, string) {
		evs := e.eventsFor("later")
		return slices.ContainsFunc(evs, func(s string) bool {
			return s == `FailedScheduling: 0/3 nodes are available: persistentvolumeclaim "late" not found.`
		}), describePod(e.pod("later")) + " events " + join(evs)
	})
	e.createVolume("pv-c", "c", "manual")
	e.createClaim("late", "manual")
	if p := e.pod("later"); p.GetSpec().GetNodeName() != "" {
		t.Fatalf("pod scheduled with an unbound Immediate claim: %s", describePod(p))
	}
	e.bindClaim("late", "pv-c")
	if n := e.nodeOf("later", 15*time.Second); n != "c" {
		t.Errorf("pod whose claim was bound to a volume on c landed on %s", n)
	}

	// WaitForFirstConsumer: the claim is promised to the pod's node.
	e.createClaim("scratch", "local-path")
	e.createPod(podWithClaim("first", "scratch"))
	n := e.nodeOf("first", 15*time.Second)
	c, err := client.PersistentVolumeClaims(e.conn).Get(e.ctx, "test", "scratch")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.GetMetadata().GetAnnotations()[plugins.AnnSelectedNode]; got != n {
		t.Errorf("claim's %s = %q, want the pod's node %q", plugins.AnnSelectedNode, got, n)
	}
	// A second consumer of the promised claim follows the first.
	e.createPod(podWithClaim("second", "scratch"))
	if n2 := e.nodeOf("second", 15*time.Second); n2 != n {
		t.Errorf("second consumer of a claim promised to %s landed on %s", n, n2)
	}
}

func join(s []string) string {
	out := ""
	for _, x := range s {
		out += "[" + x + "]"
	}
	return out
}

func podWithClaim(name, claim string) *corev1.Pod {
	p := newPod(name, "100m", "")
	p.Spec.Volumes = []*corev1.Volume{{Name: "data", PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
	return p
}

func (e *env) createClass(name, mode string) {
	e.t.Helper()
	reclaim := "Delete"
	_, err := client.StorageClasses(e.conn).Create(e.ctx, &storagev1.StorageClass{
		Metadata: &metav1.ObjectMeta{Name: name}, Provisioner: "skiff.dev/local-path",
		ReclaimPolicy: &reclaim, VolumeBindingMode: &mode,
	})
	if err != nil {
		e.t.Fatalf("creating class %s: %v", name, err)
	}
}

// createVolume makes a 1Gi local volume on node.
func (e *env) createVolume(name, node, class string) {
	e.t.Helper()
	_, err := client.PersistentVolumes(e.conn).Create(e.ctx, &corev1.PersistentVolume{
		Metadata: &metav1.ObjectMeta{Name: name},
		Spec: &corev1.PersistentVolumeSpec{
			Capacity: map[string]string{"storage": "1Gi"}, AccessModes: []string{"ReadWriteOnce"},
			PersistentVolumeReclaimPolicy: "Retain", StorageClassName: class,
			Local: &corev1.LocalVolumeSource{Path: "/var/lib/skiff/volumes/" + name},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []*corev1.NodeSelectorTerm{{
				MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{node}}},
			}}}},
		},
	})
	if err != nil {
		e.t.Fatalf("creating volume %s: %v", name, err)
	}
}

func (e *env) createClaim(name, class string) {
	e.t.Helper()
	_, err := client.PersistentVolumeClaims(e.conn).Create(e.ctx, &corev1.PersistentVolumeClaim{
		Metadata: &metav1.ObjectMeta{Namespace: "test", Name: name},
		Spec: &corev1.PersistentVolumeClaimSpec{
			AccessModes: []string{"ReadWriteOnce"}, StorageClassName: &class,
			Resources: &corev1.VolumeResourceRequirements{Requests: map[string]string{"storage": "1Gi"}},
		},
	})
	if err != nil {
		e.t.Fatalf("creating claim %s: %v", name, err)
	}
}

// bindClaim binds claim to volume as the binder does: the volume's
// claimRef, the claim's volumeName, then both phases Bound.
func (e *env) bindClaim(claim, volume string) {
	e.t.Helper()
	claims, vols := client.PersistentVolumeClaims(e.conn), client.PersistentVolumes(e.conn)
	c, err := claims.Get(e.ctx, "test", claim)
	if err != nil {
		e.t.Fatal(err)
	}
	v, err := vols.Get(e.ctx, "", volume)
	if err != nil {
		e.t.Fatal(err)
	}
	v.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "test", Name: claim, Uid: c.Metadata.Uid}
	if v, err = vols.Update(e.ctx, v); err != nil {
		e.t.Fatalf("binding volume %s: %v", volume, err)
	}
	v.Status = &corev1.PersistentVolumeStatus{Phase: "Bound"}
	if _, err = vols.UpdateStatus(e.ctx, v); err != nil {
		e.t.Fatalf("volume %s's status: %v", volume, err)
	}
	c.Spec.VolumeName = volume
	if c, err = claims.Update(e.ctx, c); err != nil {
		e.t.Fatalf("binding claim %s: %v", claim, err)
	}
	c = proto.Clone(c).(*corev1.PersistentVolumeClaim)
	c.Status = &corev1.PersistentVolumeClaimStatus{Phase: "Bound", AccessModes: []string{"ReadWriteOnce"}, Capacity: map[string]string{"storage": "1Gi"}}
	if _, err = claims.UpdateStatus(e.ctx, c); err != nil {
		e.t.Fatalf("claim %s's status: %v", claim, err)
	}
}
