package integration

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authz"
	"skiff.dev/services/apiserver/user"
)

// localPathFinalizer is the node agent's finalizer on the local-path
// volumes of its node (services/node-agent/agent.LocalPathFinalizer).
const localPathFinalizer = "skiff.dev/local-path-volume"

// TestNodeRestrictionOfPersistentVolumes: the node authorizer lets a node
// update a volume whose nodeAffinity names it, so that its agent removes
// the finalizer of a local volume it cleaned up; NodeRestriction (on by
// default) lets that update remove finalizers and nothing else.
func TestNodeRestrictionOfPersistentVolumes(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Authz = authz.Options{Modes: []string{authz.ModeNode, authz.ModeRBAC}}
		c.Admission = admission.Options{EnablePlugins: admission.DefaultPlugins, DisablePlugins: withoutServiceAccount(admission.DefaultPlugins)}
	}))
	ctx := testContext(t)
	a := s.ConnAs(t, "system:node:node-a", user.NodesGroup)
	pvs, pvsA := client.PersistentVolumes(s.Conn), client.PersistentVolumes(a)

	mustCreate(t, pvs.Create, &corev1.PersistentVolume{
		Metadata: &metav1.ObjectMeta{Name: "local-a", Finalizers: []string{localPathFinalizer}},
		Spec: &corev1.PersistentVolumeSpec{
			Capacity: map[string]string{"storage": "1Gi"}, AccessModes: []string{"ReadWriteOnce"},
			PersistentVolumeReclaimPolicy: "Delete", StorageClassName: "local-path",
			Local: &corev1.LocalVolumeSource{Path: "/var/lib/skiff/volumes/local-a"},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []*corev1.NodeSelectorTerm{{
				MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{"node-a"}}},
			}}}},
		},
	})
	// node-a changes its volume: each change but a finalizer's removal is
	// refused.
	changes := []struct {
		name   string
		change func(pv *corev1.PersistentVolume)
		want   string
	}{
		{"path", func(pv *corev1.PersistentVolume) { pv.Spec.Local.Path = "/etc" },
			`persistentvolumes "local-a" is forbidden: node "node-a" is not allowed to modify persistentvolume fields other than metadata.finalizers: spec.local`},
		{"nodeAffinity", func(pv *corev1.PersistentVolume) {
			pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"node-a", "node-b"}
		}, `node "node-a" is not allowed to modify persistentvolume fields other than metadata.finalizers: spec.nodeAffinity`},
		{"claimRef", func(pv *corev1.PersistentVolume) {
			pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: "stolen"}
		}, "other than metadata.finalizers: spec.claimRef"},
		{"capacity", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity["storage"] = "100Gi" }, "other than metadata.finalizers: spec.capacity"},
		{"labels", func(pv *corev1.PersistentVolume) { pv.Metadata.Labels = map[string]string{"owner": "node-a"} },
			"other than metadata.finalizers: metadata.labels"},
		{"a finalizer added", func(pv *corev1.PersistentVolume) {
			pv.Metadata.Finalizers = append(pv.Metadata.Finalizers, "example.com/keep")
		},
			`persistentvolumes "local-a" is forbidden: node "node-a" is not allowed to add finalizers: example.com/keep`},
		{"a finalizer replaced", func(pv *corev1.PersistentVolume) {
			pv.Metadata.Finalizers = []string{admission.PVProtectionFinalizer, "example.com/keep"}
		}, "not allowed to add finalizers: example.com/keep"},
	}
	for _, c := range changes {
		pv, err := pvsA.Get(ctx, "", "local-a")
		if err != nil {
			t.Fatal(err)
		}
		c.change(pv)
		_, err = pvsA.Update(ctx, pv)
		denied(t, "node-a changes its volume's "+c.name, err, c.want)
	}

	// Anyone else may change the volume as before.
	pv, err := pvs.Get(ctx, "", "local-a")
	if err != nil {
		t.Fatal(err)
	}
	pv.Metadata.Labels = map[string]string{"tier": "fast"}
	if _, err := pvs.Update(ctx, pv); err != nil {
		t.Fatalf("the admin labels the volume: %v", err)
	}

	// The volume is deleted: node-a removes its finalizer once the
	// directory is gone, as its agent does.
	if _, err := pvs.Delete(ctx, &metav1.DeleteRequest{Name: "local-a"}); err != nil {
		t.Fatal(err)
	}
	pv, err = pvsA.Get(ctx, "", "local-a")
	if err != nil {
		t.Fatal(err)
	}
	if pv.Metadata.DeletionTimestamp == nil {
		t.Fatalf("the volume should wait for its finalizers: %v", pv.Metadata)
	}
	next := proto.Clone(pv).(*corev1.PersistentVolume)
	next.Metadata.Finalizers = slices.DeleteFunc(next.Metadata.Finalizers, func(f string) bool { return f == localPathFinalizer })
	got, err := pvsA.Update(ctx, next)
	allowed(t, "node-a removes its finalizer", err)
	if err == nil && !slices.Equal(got.Metadata.Finalizers, []string{admission.PVProtectionFinalizer}) {
		t.Errorf("finalizers after node-a's removal: %v", got.Metadata.Finalizers)
	}
}
