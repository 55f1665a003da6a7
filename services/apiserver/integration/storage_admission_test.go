package integration

import (
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	storagev1 "skiff.dev/proto/storage/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
)

func storageClaim(name string, class *string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: &corev1.PersistentVolumeClaimSpec{AccessModes: []string{"ReadWriteOnce"}, StorageClassName: class,
			Resources: &corev1.VolumeResourceRequirements{Requests: map[string]string{"storage": "1Gi"}}}}
}

// TestStorageAdmission: the storage plugins on by default, as in
// Kubernetes: a claim without a class gets the default class (the newest
// of two marked default), "" stays "", and claims and volumes are created
// with the protection finalizers; the kinds' defaults and validation apply.
func TestStorageAdmission(t *testing.T) {
	// A clock the test moves: the two default classes are made an hour
	// apart.
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := apiservertest.Start(t, apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Admission = admission.Options{EnablePlugins: admission.DefaultPlugins, DisablePlugins: withoutServiceAccount(admission.DefaultPlugins)}
		c.Now = clock
	}))
	ctx := testContext(t)
	claims, classes := client.PersistentVolumeClaims(s.Conn), client.StorageClasses(s.Conn)

	// No default class yet: the claim keeps no class.
	c, err := claims.Create(ctx, storageClaim("before", nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Spec.StorageClassName != nil {
		t.Errorf("no default class, but the claim got %q", c.Spec.GetStorageClassName())
	}
	if c.Status.GetPhase() != "Pending" || c.Spec.GetVolumeMode() != "Filesystem" {
		t.Errorf("claim defaults: %v", c)
	}
	if !slices.Contains(c.Metadata.Finalizers, admission.PVCProtectionFinalizer) {
		t.Errorf("claim finalizers %v, want %s", c.Metadata.Finalizers, admission.PVCProtectionFinalizer)
	}

	def := map[string]string{admission.IsDefaultStorageClassAnnotation: "true"}
	for _, name := range []string{"older", "newer"} {
		sc, err := classes.Create(ctx, &storagev1.StorageClass{Metadata: &metav1.ObjectMeta{Name: name, Annotations: def}, Provisioner: "skiff.dev/local-path"})
		if err != nil {
			t.Fatal(err)
		}
		if sc.GetReclaimPolicy() != "Delete" || sc.GetVolumeBindingMode() != "Immediate" {
			t.Errorf("class defaults: %v", sc)
		}
		mu.Lock()
		now = now.Add(time.Hour)
		mu.Unlock()
	}
	c, err = claims.Create(ctx, storageClaim("defaulted", nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Spec.GetStorageClassName() != "newer" {
		t.Errorf("storageClassName %q, want the newest default class %q", c.Spec.GetStorageClassName(), "newer")
	}
	c, err = claims.Create(ctx, storageClaim("no-class", proto.String("")))
	if err != nil {
		t.Fatal(err)
	}
	if c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != "" {
		t.Errorf(`a claim asking for no class ("") got %v`, c.Spec.StorageClassName)
	}

	pv, err := client.PersistentVolumes(s.Conn).Create(ctx, &corev1.PersistentVolume{Metadata: &metav1.ObjectMeta{Name: "pv-1"},
		Spec: &corev1.PersistentVolumeSpec{Capacity: map[string]string{"storage": "1Gi"}, AccessModes: []string{"ReadWriteOnce"},
			HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/pv-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pv.Metadata.Finalizers, []string{admission.PVProtectionFinalizer}) || pv.Spec.PersistentVolumeReclaimPolicy != "Retain" || pv.Status.GetPhase() != "Pending" {
		t.Errorf("volume: finalizers %v, reclaim policy %q, phase %q", pv.Metadata.Finalizers, pv.Spec.PersistentVolumeReclaimPolicy, pv.Status.GetPhase())
	}

	// Validation through the API: a local volume without node affinity.
	_, err = client.PersistentVolumes(s.Conn).Create(ctx, &corev1.PersistentVolume{Metadata: &metav1.ObjectMeta{Name: "pv-2"},
		Spec: &corev1.PersistentVolumeSpec{Capacity: map[string]string{"storage": "1Gi"}, AccessModes: []string{"ReadWriteOnce"},
			Local: &corev1.LocalVolumeSource{Path: "/mnt/disk"}}})
	wantRefused(t, err, codes.InvalidArgument, "spec.nodeAffinity: Required value: Local volume requires node affinity")
	// A class's provisioner may not change.
	sc, _ := classes.Get(ctx, "", "older")
	sc.Provisioner = "example.com/nfs"
	_, err = classes.Update(ctx, sc)
	wantRefused(t, err, codes.InvalidArgument, "provisioner: Forbidden: updates to provisioner are forbidden.")
}
