package validation

import (
	"path"
	"slices"
	"strings"

	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
)

var hostPathTypes = []string{"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"}

const fileModeErrMsg = "must be a number between 0 and 0777 (octal), both inclusive"

// volumes validates a pod's volumes (unique DNS-1123 label names, exactly
// one source each) and returns the names declared, for volume mounts to
// refer to.
func volumes(vols []*corev1.Volume, p *field.Path) (map[string]bool, field.ErrorList) {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, v := range vols {
		ip := p.Index(i)
		if v == nil {
			errs = append(errs, field.Required(ip, ""))
			continue
		}
		np := ip.Child("name")
		if v.Name == "" {
			errs = append(errs, field.Required(np, ""))
		} else {
			errs = append(errs, invalidEach(np, v.Name, isDNS1123Label(v.Name))...)
			if names[v.Name] {
				errs = append(errs, field.Duplicate(np, v.Name))
			}
			names[v.Name] = true
		}
		errs = append(errs, volumeSource(v, ip)...)
	}
	return names, errs
}

func volumeSource(v *corev1.Volume, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	more := func(name string) bool {
		if n > 0 {
			errs = append(errs, field.Forbidden(p.Child(name), "may not specify more than 1 volume type"))
			return false
		}
		n++
		return true
	}
	if ed := v.EmptyDir; ed != nil && more("emptyDir") && ed.SizeLimit != "" {
		_, qErrs := resourceQuantity("", ed.SizeLimit, p.Child("emptyDir", "sizeLimit"))
		errs = append(errs, qErrs...)
	}
	if hp := v.HostPath; hp != nil && more("hostPath") {
		pp := p.Child("hostPath", "path")
		if hp.Path == "" {
			errs = append(errs, field.Required(pp, ""))
		} else {
			errs = append(errs, noBacksteps(hp.Path, pp)...)
		}
		if !slices.Contains(hostPathTypes, hp.Type) {
			errs = append(errs, field.NotSupported(p.Child("hostPath", "type"), hp.Type, hostPathTypes[1:]))
		}
	}
	if cm := v.ConfigMap; cm != nil && more("configMap") {
		errs = append(errs, configMapVolumeSource(cm, p.Child("configMap"))...)
	}
	if s := v.Secret; s != nil && more("secret") {
		errs = append(errs, secretVolumeSource(s, p.Child("secret"))...)
	}
	if d := v.DownwardApi; d != nil && more("downwardAPI") {
		dp := p.Child("downwardAPI")
		errs = append(errs, fileMode(d.DefaultMode, dp.Child("defaultMode"))...)
		for i, f := range d.Items {
			errs = append(errs, downwardAPIVolumeFile(f, dp.Child("items").Index(i))...)
		}
	}
	if pr := v.Projected; pr != nil && more("projected") {
		errs = append(errs, projectedVolumeSource(pr, p.Child("projected"))...)
	}
	if pvc := v.PersistentVolumeClaim; pvc != nil && more("persistentVolumeClaim") && pvc.ClaimName == "" {
		errs = append(errs, field.Required(p.Child("persistentVolumeClaim", "claimName"), ""))
	}
	if n == 0 {
		errs = append(errs, field.Required(p, "must specify a volume type"))
	}
	return errs
}

func configMapVolumeSource(cm *corev1.ConfigMapVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if cm.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, invalidEach(p.Child("name"), cm.Name, isDNS1123Subdomain(cm.Name))...)
	}
	errs = append(errs, fileMode(cm.DefaultMode, p.Child("defaultMode"))...)
	return append(errs, keysToPaths(cm.Items, p.Child("items"), map[string]bool{})...)
}

// secretVolumeSource: secretName is required, as in Kubernetes (which
// does not check it further: a Secret of any name is found or not).
func secretVolumeSource(s *corev1.SecretVolumeSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.SecretName == "" {
		errs = append(errs, field.Required(p.Child("secretName"), ""))
	}
	errs = append(errs, fileMode(s.DefaultMode, p.Child("defaultMode"))...)
	return append(errs, keysToPaths(s.Items, p.Child("items"), map[string]bool{})...)
}

// keysToPaths checks the items of a configMap or secret source: a key, a
// path inside the volume, a mode, and no path twice (seen holds the paths
// of the whole volume; Kubernetes reports a clash on the projected volume,
// Skiff on the item's path).
func keysToPaths(items []*corev1.KeyToPath, p *field.Path, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	for i, item := range items {
		ip := p.Index(i)
		if item == nil {
			errs = append(errs, field.Required(ip, ""))
			continue
		}
		if item.Key == "" {
			errs = append(errs, field.Required(ip.Child("key"), ""))
		}
		if item.Path == "" {
			errs = append(errs, field.Required(ip.Child("path"), ""))
		} else {
			errs = append(errs, localNonReservedPath(item.Path, ip.Child("path"))...)
			errs = append(errs, uniquePath(item.Path, ip.Child("path"), seen)...)
		}
		errs = append(errs, fileMode(item.Mode, ip.Child("mode"))...)
	}
	return errs
}

func uniquePath(target string, p *field.Path, seen map[string]bool) field.ErrorList {
	clean := path.Clean(target)
	if seen[clean] {
		return field.ErrorList{field.Invalid(p, target, "conflicting duplicate paths")}
	}
	seen[clean] = true
	return nil
}

// volumeFieldPaths are the pod fields a downwardAPI volume file may hold
// (besides one label or annotation by subscript).
var volumeFieldPaths = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}

// downwardAPIVolumeFile: a path inside the volume, exactly one of
// fieldRef (a metadata field) and resourceFieldRef, a mode.
func downwardAPIVolumeFile(f *corev1.DownwardAPIVolumeFile, p *field.Path) field.ErrorList {
	if f == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if f.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	} else {
		errs = append(errs, localNonReservedPath(f.Path, p.Child("path"))...)
	}
	switch {
	case f.FieldRef != nil && f.ResourceFieldRef != nil:
		errs = append(errs, field.Invalid(p, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
	case f.FieldRef != nil:
		errs = append(errs, objectFieldSelector(f.FieldRef, volumeFieldPaths, p.Child("fieldRef"))...)
	case f.ResourceFieldRef != nil:
		rp := p.Child("resourceFieldRef")
		errs = append(errs, resourceFieldSelector(f.ResourceFieldRef, rp)...)
		if f.ResourceFieldRef.ContainerName == "" {
			errs = append(errs, field.Required(rp.Child("containerName"), ""))
		}
	default:
		errs = append(errs, field.Required(p, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(errs, fileMode(f.Mode, p.Child("mode"))...)
}

// Token lifetimes a serviceAccountToken projection may ask for.
const (
	minTokenExpirationSeconds = 10 * 60
	maxTokenExpirationSeconds = 1 << 32
)

// projectedVolumeSource: each source is exactly one of secret, configMap,
// downwardAPI and serviceAccountToken, and no two files share a path.
func projectedVolumeSource(pr *corev1.ProjectedVolumeSource, p *field.Path) field.ErrorList {
	errs := fileMode(pr.DefaultMode, p.Child("defaultMode"))
	seen := map[string]bool{}
	for i, src := range pr.Sources {
		sp := p.Child("sources").Index(i)
		if src == nil {
			errs = append(errs, field.Required(sp, ""))
			continue
		}
		n := 0
		if s := src.Secret; s != nil {
			n++
			pp := sp.Child("secret")
			if s.Name == "" {
				errs = append(errs, field.Required(pp.Child("name"), ""))
			}
			errs = append(errs, keysToPaths(s.Items, pp.Child("items"), seen)...)
		}
		if cm := src.ConfigMap; cm != nil {
			n++
			pp := sp.Child("configMap")
			if cm.Name == "" {
				errs = append(errs, field.Required(pp.Child("name"), ""))
			}
			errs = append(errs, keysToPaths(cm.Items, pp.Child("items"), seen)...)
		}
		if d := src.DownwardApi; d != nil {
			n++
			pp := sp.Child("downwardAPI")
			for j, f := range d.Items {
				fp := pp.Child("items").Index(j)
				errs = append(errs, downwardAPIVolumeFile(f, fp)...)
				if f.GetPath() != "" {
					errs = append(errs, uniquePath(f.Path, fp.Child("path"), seen)...)
				}
			}
		}
		if t := src.ServiceAccountToken; t != nil {
			n++
			pp := sp.Child("serviceAccountToken")
			if e := t.ExpirationSeconds; e != nil {
				if *e < minTokenExpirationSeconds {
					errs = append(errs, field.Invalid(pp.Child("expirationSeconds"), *e, "may not specify a duration less than 10 minutes"))
				}
				if *e > maxTokenExpirationSeconds {
					errs = append(errs, field.Invalid(pp.Child("expirationSeconds"), *e, "may not specify a duration larger than 2^32 seconds"))
				}
			}
			if t.Path == "" {
				errs = append(errs, field.Required(pp.Child("path"), ""))
			} else {
				errs = append(errs, localNonReservedPath(t.Path, pp.Child("path"))...)
				errs = append(errs, uniquePath(t.Path, pp.Child("path"), seen)...)
			}
		}
		switch {
		case n == 0:
			errs = append(errs, field.Required(sp, "must specify one of: `secret`, `configMap`, `downwardAPI` or `serviceAccountToken`"))
		case n > 1:
			errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type"))
		}
	}
	return errs
}

// localNonReservedPath checks a file name inside a projected volume: it may
// not escape the volume nor collide with the "..data" style names the
// projection itself uses.
func localNonReservedPath(target string, p *field.Path) field.ErrorList {
	errs := localDescendingPath(target, p)
	if strings.HasPrefix(target, "..") && !strings.HasPrefix(target, "../") {
		errs = append(errs, field.Invalid(p, target, "must not start with '..'"))
	}
	return errs
}

func fileMode(mode *int32, p *field.Path) field.ErrorList {
	if mode != nil && (*mode < 0 || *mode > 0o777) {
		return field.ErrorList{field.Invalid(p, *mode, fileModeErrMsg)}
	}
	return nil
}
