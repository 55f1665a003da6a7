package validation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/defaults"
	"skiff.dev/internal/validation"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	storagev1 "skiff.dev/proto/storage/v1"
)

func strp(s string) *string { return &s }

func hostnameAffinity(node string) *corev1.VolumeNodeAffinity {
	return &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []*corev1.NodeSelectorTerm{{
		MatchExpressions: []*corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{node}}}}}}}
}

func localPV() *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		Metadata: &metav1.ObjectMeta{Name: "pv-1"},
		Spec: &corev1.PersistentVolumeSpec{
			Capacity:         map[string]string{"storage": "1Gi"},
			AccessModes:      []string{"ReadWriteOnce"},
			StorageClassName: "local-path",
			Local:            &corev1.LocalVolumeSource{Path: "/var/lib/skiff/volumes/pv-1"},
			NodeAffinity:     hostnameAffinity("node-1"),
		},
	}
	defaults.PersistentVolume(pv)
	return pv
}

func TestPersistentVolume(t *testing.T) {
	pv := localPV()
	before := proto.Clone(pv)
	expectErrors(t, validation.PersistentVolume(pv), nil)
	unchanged(t, before, pv)

	cases := []struct {
		name   string
		mutate func(*corev1.PersistentVolume)
		want   []string
	}{
		{"no access modes", func(pv *corev1.PersistentVolume) { pv.Spec.AccessModes = nil }, []string{"spec.accessModes: Required value"}},
		{"unknown access mode", func(pv *corev1.PersistentVolume) { pv.Spec.AccessModes = []string{"ReadWriteSometimes"} }, []string{"spec.accessModes: Unsupported value"}},
		{"ReadWriteOncePod with another", func(pv *corev1.PersistentVolume) { pv.Spec.AccessModes = []string{"ReadWriteOncePod", "ReadOnlyMany"} },
			[]string{"spec.accessModes: Forbidden"}},
		{"no capacity", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity = nil }, []string{"spec.capacity: Required value", "spec.capacity: Unsupported value"}},
		{"capacity other than storage", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity["cpu"] = "1" }, []string{"spec.capacity: Unsupported value"}},
		{"capacity malformed", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity["storage"] = "1Gb" }, []string{"spec.capacity[storage]: Invalid value"}},
		{"capacity zero", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity["storage"] = "0" }, []string{"spec.capacity[storage]: Invalid value"}},
		{"reclaim policy unknown", func(pv *corev1.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = "Keep" },
			[]string{"spec.persistentVolumeReclaimPolicy: Unsupported value"}},
		{"no source", func(pv *corev1.PersistentVolume) { pv.Spec.Local = nil }, []string{"spec: Required value"}},
		{"two sources", func(pv *corev1.PersistentVolume) { pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "/data"} },
			[]string{"spec.local: Forbidden"}},
		{"local without node affinity", func(pv *corev1.PersistentVolume) { pv.Spec.NodeAffinity = nil }, []string{"spec.nodeAffinity: Required value"}},
		{"local without path", func(pv *corev1.PersistentVolume) { pv.Spec.Local.Path = "" }, []string{"spec.local.path: Required value"}},
		{"local path with ..", func(pv *corev1.PersistentVolume) { pv.Spec.Local.Path = "/a/../etc" }, []string{"spec.local.path: Invalid value"}},
		{"hostPath without path", func(pv *corev1.PersistentVolume) {
			pv.Spec.Local, pv.Spec.HostPath = nil, &corev1.HostPathVolumeSource{Type: "Directory"}
		}, []string{"spec.hostPath.path: Required value"}},
		{"hostPath type unknown", func(pv *corev1.PersistentVolume) {
			pv.Spec.Local, pv.Spec.HostPath = nil, &corev1.HostPathVolumeSource{Path: "/d", Type: "Pipe"}
		}, []string{"spec.hostPath.type: Unsupported value"}},
		{"recycling /", func(pv *corev1.PersistentVolume) {
			pv.Spec.Local, pv.Spec.HostPath, pv.Spec.PersistentVolumeReclaimPolicy = nil, &corev1.HostPathVolumeSource{Path: "/"}, "Recycle"
		}, []string{"spec.persistentVolumeReclaimPolicy: Forbidden"}},
		{"node affinity without required", func(pv *corev1.PersistentVolume) { pv.Spec.NodeAffinity.Required = nil },
			[]string{"spec.nodeAffinity.required: Required value"}},
		{"node affinity without terms", func(pv *corev1.PersistentVolume) { pv.Spec.NodeAffinity.Required.NodeSelectorTerms = nil },
			[]string{"spec.nodeAffinity.required.nodeSelectorTerms: Required value"}},
		{"node affinity operator unknown", func(pv *corev1.PersistentVolume) {
			pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Operator = "Near"
		}, []string{"spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value"}},
		{"claimRef without name and namespace", func(pv *corev1.PersistentVolume) { pv.Spec.ClaimRef = &corev1.ObjectReference{} },
			[]string{"spec.claimRef.name: Required value", "spec.claimRef.namespace: Required value"}},
		{"class name invalid", func(pv *corev1.PersistentVolume) { pv.Spec.StorageClassName = "Fast_SSD" }, []string{"spec.storageClassName: Invalid value"}},
		{"volume mode unknown", func(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = strp("Object") }, []string{"spec.volumeMode: Unsupported value"}},
		{"namespace set", func(pv *corev1.PersistentVolume) { pv.Metadata.Namespace = "default" }, []string{"metadata.namespace: Forbidden"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pv := localPV()
			c.mutate(pv)
			expectErrors(t, validation.PersistentVolume(pv), c.want)
		})
	}
	expectDetail(t, validation.PersistentVolume(&corev1.PersistentVolume{Metadata: &metav1.ObjectMeta{Name: "x"},
		Spec: &corev1.PersistentVolumeSpec{Local: &corev1.LocalVolumeSource{Path: "/x"}}}), "spec.nodeAffinity", "Local volume requires node affinity")
}

func TestPersistentVolumeUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.PersistentVolume)
		want   []string
	}{
		{"claimRef, capacity, phase may change", func(pv *corev1.PersistentVolume) {
			pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "data"}
			pv.Spec.Capacity["storage"] = "2Gi"
			pv.Spec.PersistentVolumeReclaimPolicy = "Delete"
		}, nil},
		{"source", func(pv *corev1.PersistentVolume) { pv.Spec.Local.Path = "/elsewhere" }, []string{"spec.persistentvolumesource: Forbidden"}},
		{"volume mode", func(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = strp("Block") }, []string{"volumeMode: Invalid value"}},
		{"node affinity", func(pv *corev1.PersistentVolume) { pv.Spec.NodeAffinity = hostnameAffinity("node-2") }, []string{"nodeAffinity: Invalid value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := localPV()
			pv := proto.Clone(old).(*corev1.PersistentVolume)
			c.mutate(pv)
			expectErrors(t, validation.PersistentVolumeUpdate(pv, old), c.want)
		})
	}
}

func claim() *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		Metadata: &metav1.ObjectMeta{Namespace: "default", Name: "data"},
		Spec: &corev1.PersistentVolumeClaimSpec{
			AccessModes: []string{"ReadWriteOnce"},
			Resources:   &corev1.VolumeResourceRequirements{Requests: map[string]string{"storage": "1Gi"}},
		},
	}
	defaults.PersistentVolumeClaim(pvc)
	return pvc
}

func TestPersistentVolumeClaim(t *testing.T) {
	pvc := claim()
	before := proto.Clone(pvc)
	expectErrors(t, validation.PersistentVolumeClaim(pvc), nil)
	unchanged(t, before, pvc)
	cases := []struct {
		name   string
		mutate func(*corev1.PersistentVolumeClaim)
		want   []string
	}{
		{"no access modes", func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = nil }, []string{"spec.accessModes: Required value"}},
		{"unknown access mode", func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = []string{"RWO"} }, []string{"spec.accessModes: Unsupported value"}},
		{"no storage request", func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources = nil }, []string{"spec.resources[storage]: Required value"}},
		{"zero storage request", func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests["storage"] = "0" }, []string{"spec.resources[storage]: Invalid value"}},
		{"malformed storage request", func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests["storage"] = "lots" }, []string{"spec.resources[storage]: Invalid value"}},
		{"selector invalid", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "-bad-"}}
		}, []string{"spec.selector.matchLabels[tier]: Invalid value"}},
		{"class name invalid", func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = strp("UPPER") }, []string{"spec.storageClassName: Invalid value"}},
		{"empty class name: no class", func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = strp("") }, nil},
		{"volume mode unknown", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = strp("Object") }, []string{"spec.volumeMode: Unsupported value"}},
		{"no namespace", func(c *corev1.PersistentVolumeClaim) { c.Metadata.Namespace = "" }, []string{"metadata.namespace: Required value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pvc := claim()
			c.mutate(pvc)
			expectErrors(t, validation.PersistentVolumeClaim(pvc), c.want)
		})
	}
}

func TestPersistentVolumeClaimUpdate(t *testing.T) {
	bound := func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = "Bound" }
	cases := []struct {
		name     string
		old, new func(*corev1.PersistentVolumeClaim)
		want     []string
	}{
		{"volumeName set once", nil, func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-1" }, nil},
		{"volumeName changed", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-1" },
			func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-2" }, []string{"spec: Forbidden"}},
		{"class set when unset", nil, func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = strp("local-path") }, nil},
		{"class changed", func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = strp("a") },
			func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = strp("b") }, []string{"spec: Forbidden"}},
		{"access modes changed", nil, func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = []string{"ReadWriteMany"} }, []string{"spec: Forbidden"}},
		{"request grows, bound", bound, func(c *corev1.PersistentVolumeClaim) { bound(c); c.Spec.Resources.Requests["storage"] = "2Gi" }, nil},
		{"request grows, pending", nil, func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests["storage"] = "2Gi" }, []string{"spec: Forbidden"}},
		{"request shrinks, bound", bound, func(c *corev1.PersistentVolumeClaim) { bound(c); c.Spec.Resources.Requests["storage"] = "512Mi" },
			[]string{"spec.resources.requests.storage: Forbidden"}},
		{"volume mode changed", nil, func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = strp("Block") }, []string{"spec: Forbidden", "volumeMode: Invalid value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := claim()
			if c.old != nil {
				c.old(old)
			}
			pvc := proto.Clone(old).(*corev1.PersistentVolumeClaim)
			c.new(pvc)
			expectErrors(t, validation.PersistentVolumeClaimUpdate(pvc, old), c.want)
		})
	}
}

func storageClass() *storagev1.StorageClass {
	sc := &storagev1.StorageClass{
		Metadata:    &metav1.ObjectMeta{Name: "local-path"},
		Provisioner: "skiff.dev/local-path",
		Parameters:  map[string]string{"root": "/var/lib/skiff/volumes"},
		AllowedTopologies: []*corev1.TopologySelectorTerm{{MatchLabelExpressions: []*corev1.TopologySelectorLabelRequirement{
			{Key: "kubernetes.io/hostname", Values: []string{"node-1", "node-2"}}}}},
	}
	defaults.StorageClass(sc)
	return sc
}

func TestStorageClass(t *testing.T) {
	expectErrors(t, validation.StorageClass(storageClass()), nil)
	cases := []struct {
		name   string
		mutate func(*storagev1.StorageClass)
		want   []string
	}{
		{"no provisioner", func(sc *storagev1.StorageClass) { sc.Provisioner = "" }, []string{"provisioner: Required value"}},
		{"provisioner invalid", func(sc *storagev1.StorageClass) { sc.Provisioner = "skiff.dev/local path" }, []string{"provisioner: Invalid value"}},
		{"empty parameter key", func(sc *storagev1.StorageClass) { sc.Parameters[""] = "x" }, []string{"parameters: Invalid value"}},
		{"reclaim policy Recycle", func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = strp("Recycle") }, []string{"reclaimPolicy: Unsupported value"}},
		{"binding mode missing", func(sc *storagev1.StorageClass) { sc.VolumeBindingMode = nil }, []string{"volumeBindingMode: Required value"}},
		{"binding mode unknown", func(sc *storagev1.StorageClass) { sc.VolumeBindingMode = strp("Later") }, []string{"volumeBindingMode: Unsupported value"}},
		{"topology without values", func(sc *storagev1.StorageClass) { sc.AllowedTopologies[0].MatchLabelExpressions[0].Values = nil },
			[]string{"allowedTopologies[0].matchLabelExpressions[0].values: Required value"}},
		{"topology value twice", func(sc *storagev1.StorageClass) {
			sc.AllowedTopologies[0].MatchLabelExpressions[0].Values = []string{"a", "a"}
		}, []string{"allowedTopologies[0].matchLabelExpressions[0].values[1]: Duplicate value"}},
		{"topology term twice", func(sc *storagev1.StorageClass) {
			sc.AllowedTopologies = append(sc.AllowedTopologies, proto.Clone(sc.AllowedTopologies[0]).(*corev1.TopologySelectorTerm))
		}, []string{"allowedTopologies[1].matchLabelExpressions: Duplicate value"}},
		{"namespaced", func(sc *storagev1.StorageClass) { sc.Metadata.Namespace = "default" }, []string{"metadata.namespace: Forbidden"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := storageClass()
			c.mutate(sc)
			expectErrors(t, validation.StorageClass(sc), c.want)
		})
	}
}

func TestStorageClassUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*storagev1.StorageClass)
		want   []string
	}{
		{"labels may change", func(sc *storagev1.StorageClass) { sc.Metadata.Labels = map[string]string{"a": "b"} }, nil},
		{"allowVolumeExpansion may change", func(sc *storagev1.StorageClass) { sc.AllowVolumeExpansion = proto.Bool(true) }, nil},
		{"provisioner", func(sc *storagev1.StorageClass) { sc.Provisioner = "example.com/nfs" }, []string{"provisioner: Forbidden"}},
		{"parameters", func(sc *storagev1.StorageClass) { sc.Parameters["root"] = "/srv" }, []string{"parameters: Forbidden"}},
		{"reclaim policy", func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = strp("Retain") }, []string{"reclaimPolicy: Forbidden"}},
		{"binding mode", func(sc *storagev1.StorageClass) { sc.VolumeBindingMode = strp("WaitForFirstConsumer") }, []string{"volumeBindingMode: Invalid value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := storageClass()
			sc := proto.Clone(old).(*storagev1.StorageClass)
			c.mutate(sc)
			expectErrors(t, validation.StorageClassUpdate(sc, old), c.want)
		})
	}
}
