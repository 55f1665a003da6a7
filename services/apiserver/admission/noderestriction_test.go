package admission

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/user"
)

func TestNodeRestrictionOfVolumes(t *testing.T) {
	p, _ := newNodeRestriction(nil)
	plugin := p.(MutationInterface)
	nodeA := &user.Info{Name: "system:node:node-a", Groups: []string{user.NodesGroup}}
	admin := &user.Info{Name: "admin", Groups: []string{"system:masters"}}
	notInGroup := &user.Info{Name: "system:node:node-a"}
	old := &corev1.PersistentVolume{
		Metadata: &metav1.ObjectMeta{Name: "pv", ResourceVersion: "7", Generation: 1, Finalizers: []string{"kubernetes.io/pv-protection", "skiff.dev/local-path-volume"}},
		Spec:     &corev1.PersistentVolumeSpec{Capacity: map[string]string{"storage": "1Gi"}, Local: &corev1.LocalVolumeSource{Path: "/v/pv"}},
	}
	cases := []struct {
		name   string
		who    *user.Info
		op     Operation
		change func(pv *corev1.PersistentVolume)
		want   string // "" admitted
	}{
		{"a node removes a finalizer", nodeA, Update, func(pv *corev1.PersistentVolume) { pv.Metadata.Finalizers = pv.Metadata.Finalizers[:1] }, ""},
		{"a node removes every finalizer", nodeA, Update, func(pv *corev1.PersistentVolume) { pv.Metadata.Finalizers = nil }, ""},
		{"a node changes nothing", nodeA, Update, func(*corev1.PersistentVolume) {}, ""},
		{"a new resourceVersion and generation are the server's", nodeA, Update, func(pv *corev1.PersistentVolume) { pv.Metadata.ResourceVersion, pv.Metadata.Generation = "8", 2 }, ""},
		{"a node adds a finalizer", nodeA, Update, func(pv *corev1.PersistentVolume) { pv.Metadata.Finalizers = append(pv.Metadata.Finalizers, "x/y") },
			`persistentvolumes "pv" is forbidden: node "node-a" is not allowed to add finalizers: x/y`},
		{"a node changes the path", nodeA, Update, func(pv *corev1.PersistentVolume) { pv.Spec.Local.Path = "/etc" },
			`persistentvolumes "pv" is forbidden: node "node-a" is not allowed to modify persistentvolume fields other than metadata.finalizers: spec.local`},
		{"a node changes several fields", nodeA, Update, func(pv *corev1.PersistentVolume) {
			pv.Metadata.Annotations = map[string]string{"a": "b"}
			pv.Spec.ClaimRef = &corev1.ObjectReference{Name: "c"}
			pv.Status = &corev1.PersistentVolumeStatus{Phase: "Available"}
		}, "other than metadata.finalizers: metadata.annotations, spec.claimRef, status"},
		{"an admin changes anything", admin, Update, func(pv *corev1.PersistentVolume) { pv.Spec.Local.Path = "/etc" }, ""},
		{"a node's name outside system:nodes is no node", notInGroup, Update, func(pv *corev1.PersistentVolume) { pv.Spec.Local.Path = "/etc" }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cur := proto.Clone(old).(*corev1.PersistentVolume)
			c.change(cur)
			err := plugin.Admit(context.Background(), &Attributes{Operation: c.op, Kind: pvKind, Name: "pv", User: c.who, Object: cur, OldObject: old})
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
	// Other kinds are the authorizer's business.
	if err := plugin.Admit(context.Background(), &Attributes{Operation: Update, Kind: pvcKind, Name: "c", User: nodeA,
		Object: &corev1.PersistentVolumeClaim{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}}, OldObject: &corev1.PersistentVolumeClaim{}}); err != nil {
		t.Errorf("a claim: %v", err)
	}
}
