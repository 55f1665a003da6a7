package plugins

import (
	"testing"

	"skiff.dev/internal/storageclass"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	storagev1 "skiff.dev/proto/storage/v1"
	"skiff.dev/services/scheduler/framework"
)

// volumes is a framework.VolumeLister over maps.
type volumes struct {
	claims  map[string]*corev1.PersistentVolumeClaim // namespace/name
	vols    map[string]*corev1.PersistentVolume
	classes map[string]*storagev1.StorageClass
}

func (v volumes) Claim(ns, name string) (*corev1.PersistentVolumeClaim, bool) {
	c, ok := v.claims[ns+"/"+name]
	return c, ok
}

func (v volumes) Volume(name string) (*corev1.PersistentVolume, bool) {
	x, ok := v.vols[name]
	return x, ok
}

func (v volumes) StorageClass(name string) (*storagev1.StorageClass, bool) {
	c, ok := v.classes[name]
	return c, ok
}

type volumesHandle struct {
	framework.Handle
	v framework.VolumeLister
}

func (h volumesHandle) Volumes() framework.VolumeLister { return h.v }

func storageClass(name, mode string, topologies ...*corev1.TopologySelectorTerm) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		Metadata: &metav1.ObjectMeta{Name: name}, Provisioner: "skiff.dev/local-path",
		VolumeBindingMode: &mode, AllowedTopologies: topologies,
	}
}

// claim is a claim of class in "default"; volume "" leaves it unbound.
func claim(name, class, volume string) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name, Uid: "uid-claim-" + name},
		Spec:     &corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: volume},
		Status:   &corev1.PersistentVolumeClaimStatus{Phase: "Pending"},
	}
	if volume != "" {
		c.Status.Phase = "Bound"
	}
	return c
}

// pinnedVolume is a volume whose nodeAffinity requires hostname node ("" for none).
func pinnedVolume(name, node string) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{Metadata: &metav1.ObjectMeta{Name: name}, Spec: &corev1.PersistentVolumeSpec{}}
	if node != "" {
		v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []*corev1.NodeSelectorTerm{{
			MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{node}}},
		}}}}
	}
	return v
}

func withClaims(p *corev1.Pod, names ...string) *corev1.Pod {
	for _, n := range names {
		p.Spec.Volumes = append(p.Spec.Volumes, &corev1.Volume{Name: n, PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: n}})
	}
	return p
}

func TestVolumeBinding(t *testing.T) {
	deleting := claim("deleting", "local-path", "pv-a")
	deleting.Metadata.DeletionTimestamp = timestamp
	lost := claim("lost", "local-path", "pv-gone")
	lost.Status.Phase = "Lost"
	preBound := claim("prebound", "local-path", "pv-a")
	preBound.Status.Phase = "Pending"
	completed := claim("completed", "manual", "pv-a")
	completed.Status.Phase = "Pending"
	completed.Metadata.Annotations = map[string]string{AnnBindCompleted: "yes"}
	promised := claim("promised", "local-path", "")
	promised.Metadata.Annotations = map[string]string{AnnSelectedNode: "b"}
	beta := claim("beta", "", "")
	beta.Spec.StorageClassName = nil
	beta.Metadata.Annotations = map[string]string{storageclass.BetaClaimAnnotation: "local-path"}

	lister := volumes{
		claims: map[string]*corev1.PersistentVolumeClaim{},
		vols: map[string]*corev1.PersistentVolume{
			"pv-a": pinnedVolume("pv-a", "a"), "pv-b": pinnedVolume("pv-b", "b"), "pv-any": pinnedVolume("pv-any", ""),
		},
		classes: map[string]*storagev1.StorageClass{
			"local-path": storageClass("local-path", "WaitForFirstConsumer"),
			"manual":     storageClass("manual", "Immediate"),
			"zoned": storageClass("zoned", "WaitForFirstConsumer", &corev1.TopologySelectorTerm{MatchLabelExpressions: []*corev1.TopologySelectorLabelRequirement{
				{Key: "zone", Values: []string{"z1"}},
			}}),
		},
	}
	for _, c := range []*corev1.PersistentVolumeClaim{
		claim("on-a", "manual", "pv-a"), claim("on-b", "manual", "pv-b"), claim("anywhere", "manual", "pv-any"),
		claim("wffc", "local-path", ""), claim("immediate", "manual", ""), claim("no-class", "", ""),
		claim("unknown-class", "nosuch", ""), claim("missing-pv", "manual", "pv-gone"), claim("zoned", "zoned", ""),
		deleting, lost, preBound, completed, promised, beta,
	} {
		lister.claims["default/"+c.Metadata.Name] = c
	}
	nodeA := withLabels(node("a", "1", "1Gi", "10"), "zone", "z1")
	nodeB := node("b", "1", "1Gi", "10")
	const unresolvable = "UnschedulableAndUnresolvable: "

	cases := []struct {
		name   string
		claims []string
		// preFilter is PreFilter's verdict (pod-wide); onA and onB are
		// Filter's on nodes a and b when PreFilter passed.
		preFilter, onA, onB string
	}{
		{name: "no claims: skipped", preFilter: "Skip: "},
		{name: "claim not found", claims: []string{"nosuch"}, preFilter: unresolvable + `persistentvolumeclaim "nosuch" not found`},
		{name: "claim being deleted", claims: []string{"deleting"}, preFilter: unresolvable + `persistentvolumeclaim "deleting" is being deleted`},
		{name: "claim lost", claims: []string{"lost"}, preFilter: unresolvable + `persistentvolumeclaim "lost" bound to non-existent persistentvolume "pv-gone"`},
		{name: "unbound claim of an Immediate class", claims: []string{"immediate"}, preFilter: unresolvable + ReasonUnboundImmediate},
		{name: "unbound claim without a class is Immediate", claims: []string{"no-class"}, preFilter: unresolvable + ReasonUnboundImmediate},
		{name: "unbound claim of an unknown class is Immediate", claims: []string{"unknown-class"}, preFilter: unresolvable + ReasonUnboundImmediate},
		{name: "pre-bound claim not yet bound waits as an Immediate one", claims: []string{"prebound"}, preFilter: unresolvable + ReasonUnboundImmediate},
		{name: "one unbound Immediate claim among bound ones", claims: []string{"on-a", "immediate"}, preFilter: unresolvable + ReasonUnboundImmediate},
		{name: "bound claim's volume pinned to a", claims: []string{"on-a"}, onB: unresolvable + ReasonVolumeNodeConflict},
		{name: "bind-completed annotation counts as bound", claims: []string{"completed"}, onB: unresolvable + ReasonVolumeNodeConflict},
		{name: "bound claim's volume without affinity", claims: []string{"anywhere"}},
		{name: "volumes pinned to two nodes fit nowhere", claims: []string{"on-a", "on-b"},
			onA: unresolvable + ReasonVolumeNodeConflict, onB: unresolvable + ReasonVolumeNodeConflict},
		{name: "bound to a volume that does not exist", claims: []string{"missing-pv"},
			onA: unresolvable + ReasonVolumeNotExist, onB: unresolvable + ReasonVolumeNotExist},
		{name: "unbound WaitForFirstConsumer claim fits anywhere", claims: []string{"wffc"}},
		{name: "class from the beta annotation", claims: []string{"beta"}},
		{name: "WaitForFirstConsumer claim with a bound one", claims: []string{"wffc", "on-a"}, onB: unresolvable + ReasonVolumeNodeConflict},
		{name: "claim already promised to b", claims: []string{"promised"}, onA: unresolvable + ReasonVolumeNodeConflict},
		{name: "class's allowedTopologies", claims: []string{"zoned"}, onB: unresolvable + ReasonBindConflict},
	}
	pl := &VolumeBindingPlugin{h: volumesHandle{v: lister}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pi := framework.NewPodInfo(withClaims(pod("p", "", ""), tc.claims...))
			state := framework.NewCycleState()
			_, st := pl.PreFilter(ctx, state, pi)
			got := statusString(st)
			if st.IsSkip() {
				got = "Skip: "
			}
			if got != tc.preFilter {
				t.Fatalf("PreFilter: got %q, want %q", got, tc.preFilter)
			}
			for _, n := range []struct {
				node *corev1.Node
				want string
			}{{nodeA, tc.onA}, {nodeB, tc.onB}} {
				if tc.preFilter != "" && !st.IsSkip() {
					// Filter without PreFilter's state reaches the same verdict.
					n.want = tc.preFilter
					state = framework.NewCycleState()
				}
				if got := statusString(pl.Filter(ctx, state, pi, nodeInfo(n.node))); got != n.want {
					t.Errorf("Filter on %s: got %q, want %q", n.node.Metadata.Name, got, n.want)
				}
			}
		})
	}
}
