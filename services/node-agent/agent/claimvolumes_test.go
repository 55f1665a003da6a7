package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/node-agent/sim"
)

// Claims and volumes as the binder and the local-path provisioner leave
// them (the controller-manager's side of issue 21's storage interface).

func (e *env) createClaim(name string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	class := "local-path"
	c, err := client.PersistentVolumeClaims(e.api.Conn).Create(e.ctx, &corev1.PersistentVolumeClaim{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: &corev1.PersistentVolumeClaimSpec{
			AccessModes: []string{"ReadWriteOnce"}, StorageClassName: &class,
			Resources: &corev1.VolumeResourceRequirements{Requests: map[string]string{"storage": "1Gi"}},
		},
	})
	if err != nil {
		e.t.Fatalf("creating claim %s: %v", name, err)
	}
	return c
}

// provision makes the local-path volume of claim c on node, pre-bound to
// it, and binds c to it.
func (e *env) provision(c *corev1.PersistentVolumeClaim, node string) *corev1.PersistentVolume {
	e.t.Helper()
	m := c.GetMetadata()
	pv := localPathVolume("pvc-"+m.GetUid(), filepath.Join(e.cfg.LocalVolumeRoot, fmt.Sprintf("pvc-%s_%s_%s", m.GetUid(), m.GetNamespace(), m.GetName())), node)
	pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: m.GetNamespace(), Name: m.GetName(), Uid: m.GetUid()}
	pvs, claims := client.PersistentVolumes(e.api.Conn), client.PersistentVolumeClaims(e.api.Conn)
	pv, err := pvs.Create(e.ctx, pv)
	if err != nil {
		e.t.Fatalf("creating volume: %v", err)
	}
	pv.Status = &corev1.PersistentVolumeStatus{Phase: "Bound"}
	if pv, err = pvs.UpdateStatus(e.ctx, pv); err != nil {
		e.t.Fatalf("volume's status: %v", err)
	}
	cur, err := claims.Get(e.ctx, m.GetNamespace(), m.GetName())
	if err != nil {
		e.t.Fatal(err)
	}
	cur.Spec.VolumeName = pv.GetMetadata().GetName()
	if cur, err = claims.Update(e.ctx, cur); err != nil {
		e.t.Fatalf("binding claim: %v", err)
	}
	cur = proto.Clone(cur).(*corev1.PersistentVolumeClaim)
	cur.Status = &corev1.PersistentVolumeClaimStatus{Phase: "Bound", AccessModes: []string{"ReadWriteOnce"}, Capacity: map[string]string{"storage": "1Gi"}}
	if _, err = claims.UpdateStatus(e.ctx, cur); err != nil {
		e.t.Fatalf("claim's status: %v", err)
	}
	return pv
}

func localPathVolume(name, path, node string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		Metadata: &metav1.ObjectMeta{Name: name, Annotations: map[string]string{AnnProvisionedBy: LocalPathProvisioner},
			Finalizers: []string{LocalPathFinalizer}},
		Spec: &corev1.PersistentVolumeSpec{
			Capacity: map[string]string{"storage": "1Gi"}, AccessModes: []string{"ReadWriteOnce"},
			PersistentVolumeReclaimPolicy: "Delete", StorageClassName: "local-path",
			Local: &corev1.LocalVolumeSource{Path: path},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []*corev1.NodeSelectorTerm{{
				MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{node}}},
			}}}},
		},
	}
}

// untilVolumeCleaned waits until the agent removed pv's directory and its
// finalizer (the volume may then be gone, or wait for other finalizers).
func (e *env) untilVolumeCleaned(pv *corev1.PersistentVolume) {
	e.t.Helper()
	e.until("volume "+pv.GetMetadata().GetName()+" cleaned up", func() (bool, string) {
		if _, err := os.Stat(pv.GetSpec().GetLocal().GetPath()); err == nil {
			return false, "directory still there"
		}
		cur, err := client.PersistentVolumes(e.api.Conn).Get(e.ctx, "", pv.GetMetadata().GetName())
		switch {
		case apierrors.IsNotFound(err):
			return true, ""
		case err != nil:
			return false, err.Error()
		}
		return !slices.Contains(cur.GetMetadata().GetFinalizers(), LocalPathFinalizer), fmt.Sprintf("finalizers %v", cur.GetMetadata().GetFinalizers())
	})
}

// eventsOf lists "reason: message" of the events about pod name.
func (e *env) eventsOf(name string) []string {
	l, err := client.Events(e.api.Conn).List(e.ctx, &metav1.ListOptions{Namespace: "default"})
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, ev := range l.GetItems() {
		if ev.GetInvolvedObject().GetName() == name {
			out = append(out, ev.GetReason()+": "+ev.GetMessage())
		}
	}
	return out
}

func claimVolume(name, claim string, readOnly bool) *corev1.Volume {
	return &corev1.Volume{Name: name, PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly}}
}

// TestClaimVolumes (simulated runtime): a pod whose claim is not bound
// waits with FailedMount; once bound, its containers get the volume's
// directory (created 0777 under the local volume root), read-only where
// the source says so; the Node announces the root; a deleted local-path
// volume of the node loses its directory, then its finalizer, and one of
// another node is left alone.
func TestClaimVolumes(t *testing.T) {
	root := filepath.Join(t.TempDir(), "volumes")
	e := start(t, sim.Options{}, func(c *Config) { c.LocalVolumeRoot = root })

	e.until("the Node announces its local volume root", func() (bool, string) {
		n, ok := e.nodes.Store().Get(nodeName)
		got := n.GetMetadata().GetAnnotations()[AnnLocalVolumeRoot]
		return ok && got == root, fmt.Sprintf("annotation %q", got)
	})

	claim := e.createClaim("data")
	c := ctr("app", "skiff.local/demo:v1")
	c.VolumeMounts = []*corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "ro", MountPath: "/ro"}, {Name: "data", MountPath: "/view", ReadOnly: true}}
	p := pod("db", c)
	p.Spec.Volumes = []*corev1.Volume{claimVolume("data", "data", false), claimVolume("ro", "data", true)}
	e.create(p)

	e.until("FailedMount while the claim is not bound", func() (bool, string) {
		evs := e.eventsOf("db")
		return slices.ContainsFunc(evs, func(s string) bool {
			return strings.HasPrefix(s, "FailedMount: Unable to attach or mount volumes: unmounted volumes=[data]") &&
				strings.HasSuffix(s, "error processing PVC default/data: PVC is not bound")
		}), strings.Join(evs, "; ")
	})
	e.untilPod("db", "Pending, its container ContainerCreating", func(p *corev1.Pod) (bool, string) {
		return p.GetStatus().GetPhase() == "Pending" && containerStatusOf(p, "app").GetState().GetWaiting().GetReason() == "ContainerCreating", ""
	})

	pv := e.provision(claim, nodeName)
	dir := pv.GetSpec().GetLocal().GetPath()
	e.untilPhase("db", "Running")
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o777 {
		t.Errorf("local-path directory %s: %v %v", dir, fi, err)
	}
	ctrInfo, ok := e.sim.ContainerOf("default", "db", "app")
	if !ok {
		t.Fatal("no container")
	}
	var mounts []string
	for _, m := range ctrInfo.Config.GetMounts() {
		mounts = append(mounts, fmt.Sprintf("%s=%s ro=%v", m.GetContainerPath(), m.GetHostPath(), m.GetReadonly()))
	}
	want := []string{"/data=" + dir + " ro=false", "/ro=" + dir + " ro=true", "/view=" + dir + " ro=true"}
	for _, w := range want {
		if !slices.Contains(mounts, w) {
			t.Errorf("mount %s missing from %v", w, mounts)
		}
	}

	// Another node's volume being deleted: not this agent's.
	other := localPathVolume("pvc-other", filepath.Join(root, "pvc-other_default_x"), "node-2")
	if err := os.MkdirAll(other.Spec.Local.Path, 0o755); err != nil {
		t.Fatal(err)
	}
	pvs := client.PersistentVolumes(e.api.Conn)
	if _, err := pvs.Create(e.ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := pvs.Delete(e.ctx, &metav1.DeleteRequest{Name: "pvc-other"}); err != nil {
		t.Fatal(err)
	}

	if _, err := e.pods.Delete(e.ctx, &metav1.DeleteRequest{Namespace: "default", Name: "db"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pvs.Delete(e.ctx, &metav1.DeleteRequest{Name: pv.GetMetadata().GetName()}); err != nil {
		t.Fatal(err)
	}
	e.untilVolumeCleaned(pv)
	if _, err := os.Stat(other.Spec.Local.Path); err != nil {
		t.Errorf("another node's volume's directory: %v", err)
	}
	if cur, err := pvs.Get(e.ctx, "", "pvc-other"); err != nil || !slices.Contains(cur.GetMetadata().GetFinalizers(), LocalPathFinalizer) {
		t.Errorf("another node's volume lost its finalizer: %v %v", cur.GetMetadata().GetFinalizers(), err)
	}
	// Let the test's apiserver delete it.
	cur, _ := pvs.Get(context.Background(), "", "pvc-other")
	cur.Metadata.Finalizers = nil
	if _, err := pvs.Update(e.ctx, cur); err != nil {
		t.Fatal(err)
	}
}

func TestVolumeHostPath(t *testing.T) {
	root := t.TempDir()
	existing := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	local := func(path string, localPath bool) *corev1.PersistentVolume {
		pv := &corev1.PersistentVolume{Metadata: &metav1.ObjectMeta{Name: "pv"}, Spec: &corev1.PersistentVolumeSpec{Local: &corev1.LocalVolumeSource{Path: path}}}
		if localPath {
			pv.Metadata.Annotations = map[string]string{AnnProvisionedBy: LocalPathProvisioner}
		}
		return pv
	}
	cases := []struct {
		name    string
		pv      *corev1.PersistentVolume
		want    string // the path, or the error's text
		wantErr bool
	}{
		{"local-path volume under the root, created", local(filepath.Join(root, "pvc-1_ns_c"), true), filepath.Join(root, "pvc-1_ns_c"), false},
		{"local-path volume outside the root", local(existing, true), "is not under the node's local volume root", true},
		{"local-path volume escaping the root", local(root+"/../x", true), "is not under", true},
		{"the root itself", local(root, true), "is not under", true},
		{"a local volume that exists", local(existing, false), existing, false},
		{"a local volume that does not", local(filepath.Join(root, "nosuch"), false), "does not exist", true},
		{"a hostPath", &corev1.PersistentVolume{Spec: &corev1.PersistentVolumeSpec{HostPath: &corev1.HostPathVolumeSource{Path: existing}}}, existing, false},
		{"a hostPath DirectoryOrCreate", &corev1.PersistentVolume{Spec: &corev1.PersistentVolumeSpec{HostPath: &corev1.HostPathVolumeSource{
			Path: filepath.Join(root, "hp"), Type: "DirectoryOrCreate"}}}, filepath.Join(root, "hp"), false},
		{"neither", &corev1.PersistentVolume{Spec: &corev1.PersistentVolumeSpec{}}, "neither local nor hostPath", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := volumeHostPath(root, tc.pv)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("got %q %v, want an error with %q", got, err, tc.want)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q %v, want %q", got, err, tc.want)
			}
			if _, err := os.Stat(got); err != nil {
				t.Errorf("not there: %v", err)
			}
		})
	}
}
