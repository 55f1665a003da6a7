package validation

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/field"
	metav1 "skiff.dev/proto/meta/v1"
)

// TotalAnnotationSizeLimitB caps the summed size of an object's annotation
// keys and values (256 KiB, as in Kubernetes).
const TotalAnnotationSizeLimitB = 256 * 1024

// standardFinalizers may be used without a domain prefix.
var standardFinalizers = []string{"kubernetes", "orphan", "foregroundDeletion"}

// ObjectMeta validates the metadata of an object being created: name (by
// nameFn) and generateName, namespace (required when namespaced, forbidden
// otherwise), generation, labels, annotations, owner references and
// finalizers. path is where the metadata sits, usually
// field.NewPath("metadata"). A nil nameFn skips the name format check.
func ObjectMeta(meta *metav1.ObjectMeta, namespaced bool, nameFn func(name string) []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if meta == nil {
		meta = &metav1.ObjectMeta{}
	}
	if gn := meta.GenerateName; gn != "" && nameFn != nil {
		for _, msg := range nameFn(maskTrailingDash(gn)) {
			errs = append(errs, field.Invalid(path.Child("generateName"), gn, msg))
		}
	}
	if meta.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "name or generateName is required"))
	} else if nameFn != nil {
		for _, msg := range nameFn(meta.Name) {
			errs = append(errs, field.Invalid(path.Child("name"), meta.Name, msg))
		}
	}
	if namespaced {
		if meta.Namespace == "" {
			errs = append(errs, field.Required(path.Child("namespace"), ""))
		} else {
			for _, msg := range NameIsDNSLabel(meta.Namespace) {
				errs = append(errs, field.Invalid(path.Child("namespace"), meta.Namespace, msg))
			}
		}
	} else if meta.Namespace != "" {
		errs = append(errs, field.Forbidden(path.Child("namespace"), "not allowed on this type"))
	}
	errs = append(errs, nonNegative(int64(meta.Generation), path.Child("generation"))...)
	if s := meta.DeletionGracePeriodSeconds; s != nil {
		errs = append(errs, nonNegative(*s, path.Child("deletionGracePeriodSeconds"))...)
	}
	errs = append(errs, Labels(meta.Labels, path.Child("labels"))...)
	errs = append(errs, annotations(meta.Annotations, path.Child("annotations"))...)
	errs = append(errs, ownerReferences(meta.OwnerReferences, path.Child("ownerReferences"))...)
	errs = append(errs, finalizers(meta.Finalizers, path.Child("finalizers"))...)
	return errs
}

// ObjectMetaUpdate checks what an update may not do to metadata: change
// name, namespace, uid or creationTimestamp, change or remove a
// deletionTimestamp or deletionGracePeriodSeconds once set, or add
// finalizers to an object being deleted. It does not re-validate the new
// metadata's contents; the <Kind>Update functions do that with ObjectMeta.
func ObjectMetaUpdate(newM, oldM *metav1.ObjectMeta, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if newM == nil {
		newM = &metav1.ObjectMeta{}
	}
	if oldM == nil {
		oldM = &metav1.ObjectMeta{}
	}
	errs = append(errs, immutable(newM.Name, oldM.Name, path.Child("name"))...)
	errs = append(errs, immutable(newM.Namespace, oldM.Namespace, path.Child("namespace"))...)
	errs = append(errs, immutable(newM.Uid, oldM.Uid, path.Child("uid"))...)
	if !proto.Equal(newM.CreationTimestamp, oldM.CreationTimestamp) {
		errs = append(errs, field.Invalid(path.Child("creationTimestamp"), fmtTime(newM.CreationTimestamp), fieldImmutableErrorMsg))
	}
	if oldM.DeletionTimestamp != nil && !proto.Equal(newM.DeletionTimestamp, oldM.DeletionTimestamp) {
		errs = append(errs, field.Invalid(path.Child("deletionTimestamp"), fmtTime(newM.DeletionTimestamp), fieldImmutableErrorMsg))
	}
	if o := oldM.DeletionGracePeriodSeconds; o != nil {
		if n := newM.DeletionGracePeriodSeconds; n == nil || *n != *o {
			errs = append(errs, field.Invalid(path.Child("deletionGracePeriodSeconds"), fmtOptional(n), fieldImmutableErrorMsg))
		}
	}
	if oldM.DeletionTimestamp != nil {
		had := make(map[string]bool, len(oldM.Finalizers))
		for _, f := range oldM.Finalizers {
			had[f] = true
		}
		for i, f := range newM.Finalizers {
			if !had[f] {
				errs = append(errs, field.Forbidden(path.Child("finalizers").Index(i),
					fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizer %q", f)))
			}
		}
	}
	return errs
}

const fieldImmutableErrorMsg = "field is immutable"

func immutable[T comparable](newV, oldV T, path *field.Path) field.ErrorList {
	if newV != oldV {
		return field.ErrorList{field.Invalid(path, newV, fieldImmutableErrorMsg)}
	}
	return nil
}

// Labels validates a label map: keys are qualified names, values label
// values (at most 63 characters, alphanumeric at both ends, or empty).
// Each problem is reported at path[key].
func Labels(labels map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(labels) {
		p := path.Key(k)
		for _, msg := range isQualifiedName(k) {
			errs = append(errs, field.Invalid(p, k, msg))
		}
		for _, msg := range isValidLabelValue(labels[k]) {
			errs = append(errs, field.Invalid(p, labels[k], msg))
		}
	}
	return errs
}

func annotations(annotations map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	total := 0
	for _, k := range sortedKeys(annotations) {
		for _, msg := range isQualifiedName(strings.ToLower(k)) {
			errs = append(errs, field.Invalid(path.Key(k), k, msg))
		}
		total += len(k) + len(annotations[k])
	}
	if total > TotalAnnotationSizeLimitB {
		errs = append(errs, field.TooLong(path, TotalAnnotationSizeLimitB))
	}
	return errs
}

func ownerReferences(refs []*metav1.OwnerReference, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	var controllers []string
	for i, ref := range refs {
		p := path.Index(i)
		if ref == nil {
			errs = append(errs, field.Required(p, ""))
			continue
		}
		// apiVersion is "group/version" or "version"; the version part is needed.
		if v := ref.ApiVersion[strings.LastIndexByte(ref.ApiVersion, '/')+1:]; v == "" {
			errs = append(errs, field.Invalid(p.Child("apiVersion"), ref.ApiVersion, "version must not be empty"))
		}
		if ref.Kind == "" {
			errs = append(errs, field.Invalid(p.Child("kind"), ref.Kind, "kind must not be empty"))
		}
		if ref.Name == "" {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, "name must not be empty"))
		}
		if ref.Uid == "" {
			errs = append(errs, field.Invalid(p.Child("uid"), ref.Uid, "uid must not be empty"))
		}
		if ref.GetController() {
			controllers = append(controllers, ref.Kind+"/"+ref.Name)
		}
	}
	if len(controllers) > 1 {
		errs = append(errs, field.Invalid(path, strings.Join(controllers, ", "),
			"Only one reference can have Controller set to true. Found \"true\" in references for "+strings.Join(controllers, " and ")))
	}
	return errs
}

func finalizers(names []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, f := range names {
		errs = append(errs, finalizerName(f, path.Index(i))...)
	}
	return errs
}

func finalizerName(f string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range isQualifiedName(f) {
		errs = append(errs, field.Invalid(p, f, msg))
	}
	if len(errs) == 0 && !strings.Contains(f, "/") && !slices.Contains(standardFinalizers, f) {
		errs = append(errs, field.Invalid(p, f, "name is neither a standard finalizer name nor is it fully qualified"))
	}
	return errs
}
