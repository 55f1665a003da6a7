package persistentvolume

import (
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func pv(name, size, class string, modes ...string) *corev1.PersistentVolume {
	if len(modes) == 0 {
		modes = []string{"ReadWriteOnce"}
	}
	return &corev1.PersistentVolume{Metadata: &metav1.ObjectMeta{Name: name, Labels: map[string]string{"disk": "ssd"}},
		Spec: &corev1.PersistentVolumeSpec{Capacity: map[string]string{"storage": size}, AccessModes: modes, StorageClassName: class,
			HostPath: &corev1.HostPathVolumeSource{Path: "/data/" + name}},
		Status: &corev1.PersistentVolumeStatus{Phase: VolumeAvailable}}
}

func pvcOf(size string, class *string, modes ...string) *corev1.PersistentVolumeClaim {
	if len(modes) == 0 {
		modes = []string{"ReadWriteOnce"}
	}
	return &corev1.PersistentVolumeClaim{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "data", Uid: "uid-1"},
		Spec: &corev1.PersistentVolumeClaimSpec{AccessModes: modes, StorageClassName: class,
			Resources: &corev1.VolumeResourceRequirements{Requests: map[string]string{"storage": size}}}}
}

func str(s string) *string { return &s }

func TestFindMatchingVolume(t *testing.T) {
	node1 := &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"kubernetes.io/hostname": "node-1"}}}
	onHost := func(host string) func(*corev1.PersistentVolume) {
		return func(v *corev1.PersistentVolume) {
			v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []*corev1.NodeSelectorTerm{{
				MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{host}}}}}}}
		}
	}
	with := func(v *corev1.PersistentVolume, f func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
		f(v)
		return v
	}
	preBound := func(uid string) func(*corev1.PersistentVolume) {
		return func(v *corev1.PersistentVolume) {
			v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "data", Uid: uid}
		}
	}
	cases := []struct {
		name    string
		claim   *corev1.PersistentVolumeClaim
		volumes []*corev1.PersistentVolume
		delay   bool
		node    *corev1.Node
		want    string
	}{
		{"none", pvcOf("1Gi", str("")), nil, false, nil, ""},
		{"the smallest that fits", pvcOf("1Gi", str("")), []*corev1.PersistentVolume{pv("big", "10Gi", ""), pv("small", "2Gi", ""), pv("tiny", "500Mi", "")}, false, nil, "small"},
		{"exact size", pvcOf("1Gi", str("")), []*corev1.PersistentVolume{pv("a", "1024Mi", ""), pv("b", "2Gi", "")}, false, nil, "a"},
		{"equal sizes: first by name", pvcOf("1Gi", str("")), []*corev1.PersistentVolume{pv("b", "1Gi", ""), pv("a", "1Gi", "")}, false, nil, "a"},
		{"class must match", pvcOf("1Gi", str("fast")), []*corev1.PersistentVolume{pv("none", "1Gi", ""), pv("slow", "1Gi", "slow"), pv("fast", "5Gi", "fast")}, false, nil, "fast"},
		{"unset class is no class", pvcOf("1Gi", nil), []*corev1.PersistentVolume{pv("fast", "1Gi", "fast"), pv("none", "5Gi", "")}, false, nil, "none"},
		{"access modes must all be offered", pvcOf("1Gi", str(""), "ReadWriteMany"),
			[]*corev1.PersistentVolume{pv("rwo", "1Gi", ""), pv("rwx", "5Gi", "", "ReadWriteOnce", "ReadWriteMany")}, false, nil, "rwx"},
		{"not available", pvcOf("1Gi", str("")), []*corev1.PersistentVolume{with(pv("a", "1Gi", ""), func(v *corev1.PersistentVolume) { v.Status.Phase = VolumeReleased })}, false, nil, ""},
		{"bound to another claim", pvcOf("1Gi", str("")), []*corev1.PersistentVolume{with(pv("a", "1Gi", ""), func(v *corev1.PersistentVolume) {
			v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "other", Uid: "uid-2"}
		})}, false, nil, ""},
		{"being deleted", pvcOf("1Gi", str("")), []*corev1.PersistentVolume{with(pv("a", "1Gi", ""), func(v *corev1.PersistentVolume) {
			v.Metadata.DeletionTimestamp = timestamppb.Now()
		})}, false, nil, ""},
		{"volume mode must match", pvcOf("1Gi", str("")), []*corev1.PersistentVolume{with(pv("a", "1Gi", ""), func(v *corev1.PersistentVolume) { v.Spec.VolumeMode = str("Block") })}, false, nil, ""},
		{"selector", func() *corev1.PersistentVolumeClaim {
			c := pvcOf("1Gi", str(""))
			c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"disk": "hdd"}}
			return c
		}(), []*corev1.PersistentVolume{pv("ssd", "1Gi", ""), with(pv("hdd", "5Gi", ""), func(v *corev1.PersistentVolume) { v.Metadata.Labels["disk"] = "hdd" })}, false, nil, "hdd"},
		{"pre-bound wins over a smaller one", pvcOf("1Gi", str("")), []*corev1.PersistentVolume{pv("small", "1Gi", ""), with(pv("mine", "5Gi", ""), preBound(""))}, false, nil, "mine"},
		{"pre-bound with the claim's uid", pvcOf("1Gi", str("")), []*corev1.PersistentVolume{with(pv("mine", "5Gi", "x"), preBound("uid-1"))}, false, nil, "mine"},
		{"pre-bound to an older claim of the name", pvcOf("1Gi", str("")), []*corev1.PersistentVolume{with(pv("old", "5Gi", ""), preBound("uid-0"))}, false, nil, ""},
		{"pre-bound but too small", pvcOf("1Gi", str("")), []*corev1.PersistentVolume{with(pv("mine", "1Mi", ""), preBound(""))}, false, nil, ""},
		{"delayed binding: only pre-bound", pvcOf("1Gi", str("local")), []*corev1.PersistentVolume{pv("free", "1Gi", "local")}, true, nil, ""},
		{"delayed binding: provisioned for the claim", pvcOf("1Gi", str("local")), []*corev1.PersistentVolume{pv("free", "1Gi", "local"),
			with(pv("pvc-uid-1", "1Gi", "local"), preBound("uid-1"))}, true, nil, "pvc-uid-1"},
		{"delayed binding, placed: a static volume reachable from the node", pvcOf("1Gi", str("local")), []*corev1.PersistentVolume{
			with(pv("elsewhere", "1Gi", "local"), onHost("node-2")), with(pv("here", "5Gi", "local"), onHost("node-1")), pv("anywhere", "10Gi", "local"),
		}, true, node1, "here"},
		{"delayed binding, placed: none reachable", pvcOf("1Gi", str("local")), []*corev1.PersistentVolume{with(pv("elsewhere", "1Gi", "local"), onHost("node-2"))}, true, node1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := FindMatchingVolume(c.claim, c.volumes, c.delay, c.node)
			if got.GetMetadata().GetName() != c.want {
				t.Errorf("matched %q, want %q", got.GetMetadata().GetName(), c.want)
			}
		})
	}
}

func TestCheckVolumeSatisfyClaim(t *testing.T) {
	cases := []struct {
		name  string
		v     *corev1.PersistentVolume
		claim *corev1.PersistentVolumeClaim
		want  string
	}{
		{"fits", pv("a", "1Gi", "c"), pvcOf("1Gi", str("c")), ""},
		{"too small", pv("a", "1Gi", "c"), pvcOf("2Gi", str("c")), "requested PV is too small"},
		{"class", pv("a", "1Gi", "c"), pvcOf("1Gi", str("d")), "storageClassName does not match"},
		{"access mode", pv("a", "1Gi", "c"), pvcOf("1Gi", str("c"), "ReadOnlyMany"), "incompatible accessMode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := CheckVolumeSatisfyClaim(c.v, c.claim); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestVolumeReachableFrom(t *testing.T) {
	node := &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"zone": "a", "disks": "4"}}}
	req := func(key, op string, values ...string) *corev1.NodeSelectorRequirement {
		return &corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	cases := []struct {
		name  string
		terms []*corev1.NodeSelectorTerm
		want  bool
	}{
		// The operators' table is internal/nodeaffinity's; these cases check the wiring.
		{"In", []*corev1.NodeSelectorTerm{{MatchExpressions: []*corev1.NodeSelectorRequirement{req("zone", "In", "a", "b")}}}, true},
		{"NotIn", []*corev1.NodeSelectorTerm{{MatchExpressions: []*corev1.NodeSelectorRequirement{req("zone", "NotIn", "a")}}}, false},
		{"second term", []*corev1.NodeSelectorTerm{{MatchExpressions: []*corev1.NodeSelectorRequirement{req("zone", "In", "b")}},
			{MatchFields: []*corev1.NodeSelectorRequirement{req("metadata.name", "In", "node-1")}}}, true},
		{"no terms", nil, false},
		{"empty term", []*corev1.NodeSelectorTerm{{}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := pv("v", "1Gi", "")
			v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: c.terms}}
			if got := VolumeReachableFrom(v, node); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
	if !VolumeReachableFrom(pv("free", "1Gi", ""), node) {
		t.Error("a volume without affinity is reachable from every node")
	}
}
