package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
)

// Volume plugin directory names, as the kubelet lays out
// <root>/pods/<uid>/volumes/<plugin>/<volume>.
const (
	pluginEmptyDir    = "kubernetes.io~empty-dir"
	pluginConfigMap   = "kubernetes.io~configmap"
	pluginSecret      = "kubernetes.io~secret"
	pluginDownwardAPI = "kubernetes.io~downward-api"
	pluginProjected   = "kubernetes.io~projected"
)

// defaultFileMode is the mode of projected files without one (Kubernetes'
// defaultMode default, 0644).
const defaultFileMode = os.FileMode(0o644)

// podDir is the agent's directory for a pod: <root>/pods/<uid>.
func podDir(root, uid string) string { return filepath.Join(root, "pods", uid) }

func volumeDir(root, uid, plugin, name string) string {
	return filepath.Join(podDir(root, uid), "volumes", plugin, name)
}

// volumeEnv is what preparing a pod's volumes needs besides the pod.
type volumeEnv struct {
	root string
	get  sources
	// allocatable is the node's, for downward API resource fields of
	// containers without limits.
	allocatable map[string]string
	// tokens gives serviceAccountToken projections their tokens (nil:
	// such a volume fails).
	tokens *tokenCache
	// localRoot is Config.LocalVolumeRoot: local-path volumes' directories
	// are created under it (claimvolumes.go).
	localRoot string
	// tmpfs: secret and projected volumes live on a tmpfs of their own,
	// as the kubelet keeps secrets off the disk (false where the agent
	// cannot mount, see mountTmpfs).
	tmpfs bool
}

// prepareVolumes makes p's volumes ready on the host and returns the host
// path of each by name: emptyDirs are created, configMap, secret,
// downwardAPI and projected volumes written (again at each call, so that
// a change of their sources shows; atomicwriter.go), hostPaths checked or
// created according to their type, persistentVolumeClaims resolved to
// their bound volume's directory (claimvolumes.go).
func prepareVolumes(ctx context.Context, ve volumeEnv, p *corev1.Pod) (map[string]string, error) {
	uid := p.GetMetadata().GetUid()
	paths := map[string]string{}
	for _, v := range p.GetSpec().GetVolumes() {
		setUp := func(plugin string, secret bool, files func() (map[string]volumeFile, error)) error {
			dir := volumeDir(ve.root, uid, plugin, v.GetName())
			fs, err := files()
			if err != nil {
				return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.GetName(), err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("volume %q: %w", v.GetName(), err)
			}
			if secret && ve.tmpfs {
				if err := mountTmpfs(dir); err != nil {
					return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.GetName(), err)
				}
			}
			if _, err := writeAtomic(dir, fs); err != nil {
				return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", v.GetName(), err)
			}
			paths[v.GetName()] = dir
			return nil
		}
		var err error
		switch {
		case v.GetEmptyDir() != nil:
			dir := volumeDir(ve.root, uid, pluginEmptyDir, v.GetName())
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
		case v.GetPersistentVolumeClaim() != nil:
			path, err := claimVolumePath(ctx, ve, p.GetMetadata().GetNamespace(), v)
			if err != nil {
				return nil, err
			}
			paths[v.GetName()] = path
		case v.GetConfigMap() != nil:
			err = setUp(pluginConfigMap, false, func() (map[string]volumeFile, error) {
				return configMapVolumeFiles(ctx, ve.get, p.GetMetadata().GetNamespace(), v.GetConfigMap())
			})
		case v.GetSecret() != nil:
			err = setUp(pluginSecret, true, func() (map[string]volumeFile, error) {
				return secretVolumeFiles(ctx, ve.get, p.GetMetadata().GetNamespace(), v.GetSecret())
			})
		case v.GetDownwardApi() != nil:
			err = setUp(pluginDownwardAPI, false, func() (map[string]volumeFile, error) {
				src := v.GetDownwardApi()
				return downwardAPIFiles(p, src.GetItems(), modeOr(src.DefaultMode, defaultFileMode), ve.allocatable)
			})
		case v.GetProjected() != nil:
			err = setUp(pluginProjected, true, func() (map[string]volumeFile, error) {
				return projectedFiles(ctx, ve, p, v.GetProjected())
			})
		default:
			return nil, fmt.Errorf("volume %q: unsupported volume type", v.GetName())
		}
		if err != nil {
			return nil, err
		}
	}
	return paths, setVolumesOwnership(ve, p, paths) // fsgroup.go
}

// hasRefreshedVolumes says whether p has volumes whose content follows
// objects that may change (configMap, secret, downwardAPI, projected).
func hasRefreshedVolumes(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.GetSpec().GetVolumes(), projectedKind)
}

func modeOr(m *int32, d os.FileMode) os.FileMode {
	if m != nil {
		return os.FileMode(*m)
	}
	return d
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

// keyFiles projects the keys of a ConfigMap or Secret (content reads a
// key): every key, or only the items listed (a key missing is an error
// unless the source is optional).
func keyFiles(keys []string, content func(string) ([]byte, bool), items []*corev1.KeyToPath, mode os.FileMode, optional bool,
	kind string) (map[string]volumeFile, error) {
	files := map[string]volumeFile{}
	if len(items) == 0 {
		for _, k := range keys {
			data, _ := content(k)
			files[k] = volumeFile{data: data, mode: mode}
		}
		return files, nil
	}
	for _, it := range items {
		data, ok := content(it.GetKey())
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s references non-existent %s key: %s", kind, keyKind[kind], it.GetKey())
		}
		rel := filepath.Clean(it.GetPath())
		if err := checkVolumePath(it.GetPath()); err != nil {
			return nil, err
		}
		files[rel] = volumeFile{data: data, mode: modeOr(it.Mode, mode)}
	}
	return files, nil
}

var keyKind = map[string]string{"configmap": "config", "secret": "secret"}

// configMapFiles returns the files a configMap volume (or projection)
// holds from cm.
func configMapFiles(cm *corev1.ConfigMap, items []*corev1.KeyToPath, mode os.FileMode, optional bool) (map[string]volumeFile, error) {
	keys := append(sortedKeys(cm.GetData()), sortedKeys(cm.GetBinaryData())...)
	content := func(k string) ([]byte, bool) {
		if v, ok := cm.GetData()[k]; ok {
			return []byte(v), true
		}
		v, ok := cm.GetBinaryData()[k]
		return v, ok
	}
	return keyFiles(keys, content, items, mode, optional, "configmap")
}

// secretFiles returns the files a secret volume (or projection) holds
// from s.
func secretFiles(s *corev1.Secret, items []*corev1.KeyToPath, mode os.FileMode, optional bool) (map[string]volumeFile, error) {
	content := func(k string) ([]byte, bool) { v, ok := s.GetData()[k]; return v, ok }
	return keyFiles(sortedKeys(s.GetData()), content, items, mode, optional, "secret")
}

func configMapVolumeFiles(ctx context.Context, get sources, ns string, src *corev1.ConfigMapVolumeSource) (map[string]volumeFile, error) {
	cm, err := get.getConfigMap(ctx, ns, src.GetName())
	if apierrors.IsNotFound(err) && src.GetOptional() {
		cm, err = &corev1.ConfigMap{}, nil
	}
	if err != nil {
		return nil, configMapError(ns, src.GetName(), err)
	}
	return configMapFiles(cm, src.GetItems(), modeOr(src.DefaultMode, defaultFileMode), src.GetOptional())
}

func secretVolumeFiles(ctx context.Context, get sources, ns string, src *corev1.SecretVolumeSource) (map[string]volumeFile, error) {
	s, err := get.getSecret(ctx, ns, src.GetSecretName())
	if apierrors.IsNotFound(err) && src.GetOptional() {
		s, err = &corev1.Secret{}, nil
	}
	if err != nil {
		return nil, secretError(ns, src.GetSecretName(), err)
	}
	return secretFiles(s, src.GetItems(), modeOr(src.DefaultMode, defaultFileMode), src.GetOptional())
}

// downwardAPIFiles returns the files of downward API items: a field of
// the pod's metadata (maps as Kubernetes formats them: key="value" lines,
// sorted) or a container's resource.
func downwardAPIFiles(p *corev1.Pod, items []*corev1.DownwardAPIVolumeFile, mode os.FileMode, allocatable map[string]string) (map[string]volumeFile, error) {
	files := map[string]volumeFile{}
	for _, it := range items {
		if err := checkVolumePath(it.GetPath()); err != nil {
			return nil, err
		}
		var v string
		var err error
		switch {
		case it.GetFieldRef() != nil:
			switch fp := it.GetFieldRef().GetFieldPath(); fp {
			case "metadata.labels":
				v = formatMap(p.GetMetadata().GetLabels())
			case "metadata.annotations":
				v = formatMap(p.GetMetadata().GetAnnotations())
			default:
				v, err = podField(p, fp, envContext{})
			}
		case it.GetResourceFieldRef() != nil:
			ref := it.GetResourceFieldRef()
			var c *corev1.Container
			for _, x := range append(append([]*corev1.Container(nil), p.GetSpec().GetInitContainers()...), p.GetSpec().GetContainers()...) {
				if x.GetName() == ref.GetContainerName() {
					c = x
				}
			}
			if c == nil {
				return nil, fmt.Errorf("downwardAPI item %q: container %q not found", it.GetPath(), ref.GetContainerName())
			}
			v, err = resourceField(p, c, ref, allocatable)
		default:
			err = errors.New("one of fieldRef and resourceFieldRef is required")
		}
		if err != nil {
			return nil, fmt.Errorf("downwardAPI item %q: %w", it.GetPath(), err)
		}
		files[filepath.Clean(it.GetPath())] = volumeFile{data: []byte(v), mode: modeOr(it.Mode, mode)}
	}
	return files, nil
}

// formatMap is Kubernetes' fieldpath.FormatMap: key="value" lines (the
// value quoted as Go quotes), sorted by key, no final newline.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// projectedFiles returns the files of a projected volume: each source's,
// in one directory (validation keeps their paths apart).
func projectedFiles(ctx context.Context, ve volumeEnv, p *corev1.Pod, src *corev1.ProjectedVolumeSource) (map[string]volumeFile, error) {
	ns := p.GetMetadata().GetNamespace()
	mode := modeOr(src.DefaultMode, defaultFileMode)
	files := map[string]volumeFile{}
	for _, s := range src.GetSources() {
		var fs map[string]volumeFile
		var err error
		switch {
		case s.GetSecret() != nil:
			ref := s.GetSecret()
			sec, gerr := ve.get.getSecret(ctx, ns, ref.GetName())
			switch {
			case apierrors.IsNotFound(gerr) && ref.GetOptional():
				continue
			case gerr != nil:
				return nil, secretError(ns, ref.GetName(), gerr)
			}
			fs, err = secretFiles(sec, ref.GetItems(), mode, ref.GetOptional())
		case s.GetConfigMap() != nil:
			ref := s.GetConfigMap()
			cm, gerr := ve.get.getConfigMap(ctx, ns, ref.GetName())
			switch {
			case apierrors.IsNotFound(gerr) && ref.GetOptional():
				continue
			case gerr != nil:
				return nil, configMapError(ns, ref.GetName(), gerr)
			}
			fs, err = configMapFiles(cm, ref.GetItems(), mode, ref.GetOptional())
		case s.GetDownwardApi() != nil:
			fs, err = downwardAPIFiles(p, s.GetDownwardApi().GetItems(), mode, ve.allocatable)
		case s.GetServiceAccountToken() != nil:
			t := s.GetServiceAccountToken()
			if err := checkVolumePath(t.GetPath()); err != nil {
				return nil, err
			}
			tok, terr := ve.tokens.get(ctx, p, t.GetAudience(), t.GetExpirationSeconds())
			if terr != nil {
				return nil, terr
			}
			fs = map[string]volumeFile{filepath.Clean(t.GetPath()): {data: []byte(tok), mode: mode}}
		}
		if err != nil {
			return nil, err
		}
		for k, f := range fs {
			files[k] = f
		}
	}
	return files, nil
}

// projectedKind: a volume the agent writes from objects (configMap,
// secret, downwardAPI, projected), always mounted read-only.
func projectedKind(v *corev1.Volume) bool {
	return v.GetConfigMap() != nil || v.GetSecret() != nil || v.GetDownwardApi() != nil || v.GetProjected() != nil
}

// containerMounts turns c's volumeMounts into CRI mounts of the host paths
// of the pod's volumes (configMap, secret, downwardAPI and projected
// volumes are always read-only; a persistentVolumeClaim's readOnly holds
// for every mount of it).
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
			if _, err := os.Stat(host); errors.Is(err, fs.ErrNotExist) && !projectedKind(kind[vm.GetName()]) {
				if err := os.MkdirAll(host, 0o755); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, &runtimeapi.Mount{
			ContainerPath: vm.GetMountPath(), HostPath: host,
			Readonly: vm.GetReadOnly() || projectedKind(kind[vm.GetName()]) || claimReadOnly(kind[vm.GetName()]),
		})
	}
	return out, nil
}
