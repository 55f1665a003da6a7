package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
)

// Persistent volumes on the node. A persistentVolumeClaim volume is the
// directory of the PersistentVolume its claim is bound to (spec.local.path
// or spec.hostPath.path), bind-mounted into the containers by the runtime;
// until the claim is bound the pod waits (FailedMount, retried). The
// local-path provisioner's volumes live under Config.LocalVolumeRoot: the
// agent creates such a directory when a pod first mounts it, and removes
// it when the volume is deleted (localvolumes.go).

// Names the local-path provisioner and the agent share (issue 21's
// storage interface).
const (
	// LocalPathProvisioner is the provisioner of Skiff's default class.
	LocalPathProvisioner = "skiff.dev/local-path"
	// AnnProvisionedBy names the provisioner of a dynamically made volume.
	AnnProvisionedBy = "pv.kubernetes.io/provisioned-by"
	// LocalPathFinalizer keeps a local-path volume until the agent of its
	// node removed its directory.
	LocalPathFinalizer = "skiff.dev/local-path-volume"
	// AnnLocalVolumeRoot is the Node annotation telling the provisioner
	// where the agent keeps local-path volumes.
	AnnLocalVolumeRoot = "skiff.dev/local-volume-root"
)

// claimPendingRetry is how soon the sync of a pod waiting for its claim
// is retried.
const claimPendingRetry = time.Second

// errClaimPending marks a claim or volume not bound yet: the pod waits and
// its sync is retried soon, without the error backoff growing long.
var errClaimPending = errors.New("waiting for the claim to be bound")

type pendingError struct{ err error }

func (e pendingError) Error() string { return e.err.Error() }
func (e pendingError) Unwrap() []error {
	return []error{e.err, errClaimPending}
}

// claimVolumePath returns the host path of a persistentVolumeClaim volume
// v of a pod in namespace ns, creating a local-path volume's directory
// when it does not exist yet. The errors are the kubelet's.
func claimVolumePath(ctx context.Context, ve volumeEnv, ns string, v *corev1.Volume) (string, error) {
	name := v.GetPersistentVolumeClaim().GetClaimName()
	processing := func(err error) error {
		//lint:ignore ST1005 the kubelet's FailedMount message, as users grep for it
		return fmt.Errorf("Unable to attach or mount volumes: unmounted volumes=[%s], unattached volumes=[], failed to process volumes=[%s]: error processing PVC %s/%s: %w",
			v.GetName(), v.GetName(), ns, name, err)
	}
	if ve.get.claim == nil || ve.get.volume == nil {
		return "", processing(errors.New("the agent reads no claims"))
	}
	c, err := ve.get.claim(ctx, ns, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			err = pendingError{err}
		}
		return "", processing(fmt.Errorf("failed to fetch PVC from API server: %w", err))
	}
	pvName := c.GetSpec().GetVolumeName()
	if c.GetStatus().GetPhase() != "Bound" || pvName == "" {
		return "", processing(pendingError{errors.New("PVC is not bound")})
	}
	pv, err := ve.get.volume(ctx, "", pvName)
	if err != nil {
		return "", processing(fmt.Errorf("failed to fetch PV %s from API server: %w", pvName, err))
	}
	ref := pv.GetSpec().GetClaimRef()
	switch {
	case ref == nil:
		return "", processing(pendingError{fmt.Errorf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", pvName)})
	case ref.GetUid() != c.GetMetadata().GetUid():
		return "", processing(pendingError{fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef.UID (%s) does not point to claim.UID (%s)", pvName, ref.GetUid(), c.GetMetadata().GetUid())})
	}
	path, err := volumeHostPath(ve.localRoot, pv)
	if err != nil {
		return "", fmt.Errorf("MountVolume.NewMounter initialization failed for volume %q : %w", pvName, err)
	}
	return path, nil
}

// volumeHostPath is where pv's data is on this node. A local-path volume's
// directory (under root only) is created, mode 0777 whatever the umask, as
// the provisioner's helper pod does in Rancher's local-path-provisioner; a
// local volume's path must exist; a hostPath is checked (or created) by
// its type, as a hostPath volume.
func volumeHostPath(root string, pv *corev1.PersistentVolume) (string, error) {
	spec := pv.GetSpec()
	switch {
	case spec.GetLocal() != nil:
		path := filepath.Clean(spec.GetLocal().GetPath())
		if pv.GetMetadata().GetAnnotations()[AnnProvisionedBy] == LocalPathProvisioner {
			if !underRoot(root, path) {
				return "", fmt.Errorf("local-path volume's path %q is not under the node's local volume root %q", path, root)
			}
			if err := ensureDir(path); err != nil {
				return "", err
			}
			return path, nil
		}
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("path %q does not exist", path)
		}
		return path, nil
	case spec.GetHostPath() != nil:
		if err := checkHostPath(spec.GetHostPath()); err != nil {
			return "", err
		}
		return spec.GetHostPath().GetPath(), nil
	}
	return "", errors.New("the volume is neither local nor hostPath: the agent mounts no other kind")
}

// ensureDir creates dir with mode 0777 when it does not exist.
func ensureDir(dir string) error {
	_, err := os.Stat(dir)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	return os.Chmod(dir, 0o777)
}

// underRoot reports whether path is strictly inside root (both clean).
func underRoot(root, path string) bool {
	if root == "" || !filepath.IsAbs(path) {
		return false
	}
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
}

// claimReadOnly reports a persistentVolumeClaim volume mounted read-only
// by its source.
func claimReadOnly(v *corev1.Volume) bool {
	return v.GetPersistentVolumeClaim().GetReadOnly()
}
