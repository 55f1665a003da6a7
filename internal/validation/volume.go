package validation

import (
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
	for i, item := range cm.Items {
		ip := p.Child("items").Index(i)
		if item.GetKey() == "" {
			errs = append(errs, field.Required(ip.Child("key"), ""))
		}
		if item.GetPath() == "" {
			errs = append(errs, field.Required(ip.Child("path"), ""))
		} else {
			errs = append(errs, localNonReservedPath(item.GetPath(), ip.Child("path"))...)
		}
		if item != nil {
			errs = append(errs, fileMode(item.Mode, ip.Child("mode"))...)
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
