package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	corev1 "skiff.dev/proto/core/v1"
)

// Volume ownership for a pod's fsGroup, as the kubelet's
// SetVolumeOwnership (pkg/volume/volume_linux.go): every file and
// directory of a volume the agent sets up goes to group fsGroup, readable
// and writable by it (read-only volumes: readable), directories also
// searchable and setgid so that what the pod creates inherits the group.
//
// Which volumes, and when:
//   - emptyDir and local-path claims (not read-only): once per pod, after
//     the first set-up (a marker under the pod's directory), walking the
//     whole tree unless fsGroupChangePolicy is OnRootMismatch and the root
//     already has the group and modes;
//   - configMap, secret, downwardAPI and projected: read-only, after every
//     write (their files are replaced when their sources change), always
//     walked, as the kubelet does whatever the policy;
//   - hostPath volumes and claims bound to hostPath or other local volumes
//     are left as they are (the kubelet's hostPath plugin does not manage
//     ownership).

// Permission bits SetVolumeOwnership adds.
const (
	fsGroupRW   = os.FileMode(0o660)
	fsGroupRO   = os.FileMode(0o440)
	fsGroupExec = os.FileMode(0o110)
)

// setVolumesOwnership gives p's volumes, set up at paths (by volume name),
// to its fsGroup. A pod without fsGroup is left alone.
func setVolumesOwnership(ve volumeEnv, p *corev1.Pod, paths map[string]string) error {
	psc := p.GetSpec().GetSecurityContext()
	if psc == nil || psc.FsGroup == nil {
		return nil
	}
	gid := int(psc.GetFsGroup())
	onRootMismatch := psc.GetFsGroupChangePolicy() == "OnRootMismatch"
	for _, v := range p.GetSpec().GetVolumes() {
		dir, ok := paths[v.GetName()]
		if !ok {
			continue
		}
		var err error
		switch {
		case v.GetEmptyDir() != nil,
			v.GetPersistentVolumeClaim() != nil && !v.GetPersistentVolumeClaim().GetReadOnly() && underRoot(ve.localRoot, dir):
			err = ownOnce(ve.root, p, v.GetName(), dir, gid, onRootMismatch)
		case v.GetConfigMap() != nil, v.GetSecret() != nil, v.GetDownwardApi() != nil, v.GetProjected() != nil:
			err = setOwnership(dir, gid, true)
		}
		if err != nil {
			return fmt.Errorf("MountVolume.SetUp failed for volume %q : setting its ownership for fsGroup %d: %w", v.GetName(), gid, err)
		}
	}
	return nil
}

// ownOnce sets a writable volume's ownership the first time the pod's
// volumes are set up, and marks it done under the pod's directory.
func ownOnce(root string, p *corev1.Pod, name, dir string, gid int, onRootMismatch bool) error {
	marker := filepath.Join(podDir(root, p.GetMetadata().GetUid()), "fsgroup", name)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	if !onRootMismatch || needsOwnership(dir, gid, false) {
		if err := setOwnership(dir, gid, false); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(marker), 0o750); err != nil {
		return err
	}
	return os.WriteFile(marker, nil, 0o640)
}

// needsOwnership reports whether dir's root lacks group gid, the modes
// fsGroup needs or setgid (the kubelet's requiresPermissionChange, which
// decides OnRootMismatch).
func needsOwnership(dir string, gid int, readOnly bool) bool {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return true
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Gid) != gid {
		return true
	}
	want := fsGroupRW
	if readOnly {
		want = fsGroupRO
	}
	want |= fsGroupExec
	return fi.Mode().Perm()&want != want || fi.Mode()&os.ModeSetgid == 0
}

// setOwnership walks dir (symlinks not followed): each entry goes to
// group gid with the group's bits added; directories also get setgid.
// Symlinks only change group (a chmod would reach their target).
func setOwnership(dir string, gid int, readOnly bool) error {
	mask := fsGroupRW
	if readOnly {
		mask = fsGroupRO
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil // removed meanwhile (an atomic write's old files)
			}
			return err
		}
		if err := os.Lchown(path, -1, gid); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		m := mask
		if fi.IsDir() {
			m |= os.ModeSetgid | fsGroupExec
		}
		if fi.Mode()&m == m {
			return nil // already so
		}
		return os.Chmod(path, fi.Mode()|m)
	})
}
