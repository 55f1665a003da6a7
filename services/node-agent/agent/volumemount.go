package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Secret and projected volumes live on a tmpfs of their own, as the
// kubelet keeps secrets in memory: never written to the node's disk. The
// agent needs CAP_SYS_ADMIN for it (root in the compose nodes and the
// containerd tests); Config.SecretVolumesOnDisk turns it off where it
// cannot mount.

// secretTmpfsSize bounds each secret volume's tmpfs (Secrets are at most
// 1 MiB each; a projected volume may hold several).
const secretTmpfsSize = "size=32m,mode=0755"

// mountTmpfs mounts a tmpfs on dir unless one is already there.
func mountTmpfs(dir string) error {
	if mounted, err := isMountPoint(dir); err != nil || mounted {
		return err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, secretTmpfsSize); err != nil {
		return fmt.Errorf("mounting a tmpfs for the volume (an agent that cannot mount needs --secret-volumes-on-disk): %w", err)
	}
	return nil
}

// isMountPoint says whether dir is on another device than its parent.
func isMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return false, err
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

// unmountPodVolumes unmounts the tmpfs of a pod's secret and projected
// volumes, before its directory is removed.
func unmountPodVolumes(root, uid string) error {
	var errs []error
	for _, plugin := range []string{pluginSecret, pluginProjected} {
		dirs, err := os.ReadDir(filepath.Join(podDir(root, uid), "volumes", plugin))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, d := range dirs {
			dir := filepath.Join(podDir(root, uid), "volumes", plugin, d.Name())
			if mounted, err := isMountPoint(dir); err != nil || !mounted {
				continue
			}
			if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", dir, err))
			}
		}
	}
	return errors.Join(errs...)
}

// removePodDir unmounts a pod's volumes and removes its directory.
func removePodDir(root, uid string) error {
	if err := unmountPodVolumes(root, uid); err != nil {
		return err
	}
	return os.RemoveAll(podDir(root, uid))
}
