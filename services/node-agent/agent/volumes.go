package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
)

// Volume plugin directory names, as the kubelet lays out
// <root>/pods/<uid>/volumes/<plugin>/<volume>.
const (
	pluginEmptyDir  = "kubernetes.io~empty-dir"
	pluginConfigMap = "kubernetes.io~configmap"
)

// podDir is the agent's directory for a pod: <root>/pods/<uid>.
func podDir(root, uid string) string { return filepath.Join(root, "pods", uid) }

func volumeDir(root, uid, plugin, name string) string {
	return filepath.Join(podDir(root, uid), "volumes", plugin, name)
}

// prepareVolumes makes p's volumes ready on the host and returns the host
// path of each by name: emptyDirs are created, configMaps written (again
// at each call, so that a change of the ConfigMap shows), hostPaths
// checked or created according to their type.
func prepareVolumes(ctx context.Context, root string, p *corev1.Pod, get configMapGetter) (map[string]string, error) {
	uid := p.GetMetadata().GetUid()
	paths := map[string]string{}
	for _, v := range p.GetSpec().GetVolumes() {
		switch {
		case v.GetEmptyDir() != nil:
			dir := volumeDir(root, uid, pluginEmptyDir, v.GetName())
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return nil, fmt.Errorf("volume %q: %w", v.GetName(), err)
			}
			// The mode is set explicitly: the umask must not narrow it.
			if err := os.Chmod(dir, 0o777); err != nil {
				return nil, fmt.Errorf("volume %q: %w", v.GetName(), err)
			}
			paths[v.GetName()] = dir
		case v.GetHostPath() != nil:
			if err := checkHostPath(v.GetHostPath()); err != nil {
				return nil, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.GetName(), err)
			}
			paths[v.GetName()] = v.GetHostPath().GetPath()
		case v.GetConfigMap() != nil:
			dir := volumeDir(root, uid, pluginConfigMap, v.GetName())
			if err := writeConfigMapVolume(ctx, dir, p.GetMetadata().GetNamespace(), v.GetConfigMap(), get); err != nil {
				return nil, fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.GetName(), err)
			}
			paths[v.GetName()] = dir
		default:
			return nil, fmt.Errorf("volume %q: unsupported volume type", v.GetName())
		}
	}
	return paths, nil
}

func checkHostPath(hp *corev1.HostPathVolumeSource) error {
	path := hp.GetPath()
	fi, err := os.Stat(path)
	switch hp.GetType() {
	case "":
		return nil
	case "DirectoryOrCreate":
		if errors.Is(err, fs.ErrNotExist) {
			return os.MkdirAll(path, 0o755)
		}
		if err == nil && !fi.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", path)
		}
		return err
	case "FileOrCreate":
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		if err == nil && fi.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a file", path)
		}
		return err
	case "Directory":
		if err != nil || !fi.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", path)
		}
	case "File":
		if err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("hostPath type check failed: %s is not a file", path)
		}
	case "Socket", "CharDevice", "BlockDevice":
		if err != nil {
			return fmt.Errorf("hostPath type check failed: %s does not exist", path)
		}
	default:
		return fmt.Errorf("hostPath type %q is not supported", hp.GetType())
	}
	return nil
}

// configMapFiles returns the files (relative path to content and mode) a
// configMap volume projects from cm: every key, or only the items listed.
func configMapFiles(cm *corev1.ConfigMap, src *corev1.ConfigMapVolumeSource) (map[string]configMapFile, error) {
	mode := os.FileMode(0o644)
	if src.DefaultMode != nil {
		mode = os.FileMode(src.GetDefaultMode())
	}
	content := func(k string) ([]byte, bool) {
		if v, ok := cm.GetData()[k]; ok {
			return []byte(v), true
		}
		v, ok := cm.GetBinaryData()[k]
		return v, ok
	}
	files := map[string]configMapFile{}
	if len(src.GetItems()) == 0 {
		for _, k := range sortedKeys(cm.GetData()) {
			files[k] = configMapFile{data: []byte(cm.GetData()[k]), mode: mode}
		}
		for _, k := range sortedKeys(cm.GetBinaryData()) {
			files[k] = configMapFile{data: cm.GetBinaryData()[k], mode: mode}
		}
		return files, nil
	}
	for _, it := range src.GetItems() {
		data, ok := content(it.GetKey())
		if !ok {
			if src.GetOptional() {
				continue
			}
			return nil, fmt.Errorf("configmap references non-existent config key: %s", it.GetKey())
		}
		m := mode
		if it.Mode != nil {
			m = os.FileMode(it.GetMode())
		}
		p := filepath.Clean(it.GetPath())
		if filepath.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			return nil, fmt.Errorf("item path %q must be relative and may not contain '..'", it.GetPath())
		}
		files[p] = configMapFile{data: data, mode: m}
	}
	return files, nil
}

type configMapFile struct {
	data []byte
	mode os.FileMode
}

func writeConfigMapVolume(ctx context.Context, dir, ns string, src *corev1.ConfigMapVolumeSource, get configMapGetter) error {
	cm, err := get(ctx, ns, src.GetName())
	if apierrors.IsNotFound(err) && src.GetOptional() {
		cm, err = &corev1.ConfigMap{}, nil
	}
	if err != nil {
		return configMapError(ns, src.GetName(), err)
	}
	files, err := configMapFiles(cm, src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for rel, f := range files {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if old, err := os.ReadFile(path); err == nil && string(old) == string(f.data) {
			if err := os.Chmod(path, f.mode); err != nil {
				return err
			}
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(tmp, f.mode); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	// Keys removed from the ConfigMap go from the volume.
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if _, ok := files[rel]; !ok {
			return os.Remove(path)
		}
		return nil
	})
}

// containerMounts turns c's volumeMounts into CRI mounts of the host paths
// of the pod's volumes (configMap volumes are always read-only).
func containerMounts(p *corev1.Pod, c *corev1.Container, paths map[string]string) ([]*runtimeapi.Mount, error) {
	kind := map[string]*corev1.Volume{}
	for _, v := range p.GetSpec().GetVolumes() {
		kind[v.GetName()] = v
	}
	var out []*runtimeapi.Mount
	for _, vm := range c.GetVolumeMounts() {
		host, ok := paths[vm.GetName()]
		if !ok {
			return nil, fmt.Errorf("volumeMount %q: no volume of that name", vm.GetName())
		}
		if sp := vm.GetSubPath(); sp != "" {
			clean := filepath.Clean(sp)
			if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
				return nil, fmt.Errorf("volumeMount %q: subPath %q must be relative and may not contain '..'", vm.GetName(), sp)
			}
			host = filepath.Join(host, clean)
			if _, err := os.Stat(host); errors.Is(err, fs.ErrNotExist) && kind[vm.GetName()].GetConfigMap() == nil {
				if err := os.MkdirAll(host, 0o755); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, &runtimeapi.Mount{
			ContainerPath: vm.GetMountPath(), HostPath: host,
			Readonly: vm.GetReadOnly() || kind[vm.GetName()].GetConfigMap() != nil,
		})
	}
	return out, nil
}
