package patch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	kmetav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"

	"skiff.dev/internal/kinds"
)

// ErrNotTracked says that Update could not record the write's managed
// fields; the object it returns with it keeps the old object's
// managedFields and is to be written all the same, as kube-apiserver
// does (FieldManager.UpdateNoErrors), the error logged.
var ErrNotTracked = errors.New("managed fields not updated")

// Apply is server-side apply: it merges applied, an object's applied
// configuration (YAML or JSON, with apiVersion and kind), into live, the
// object's JSON at gvk's version (nil when the object does not exist),
// for manager, and returns the new object with metadata.managedFields
// updated, the apply's entry stamped with now (an apply that changes
// nothing leaves the entry's time as it was, none for a new entry, as
// Kubernetes does). manager is required (a 422 without). A field that another
// manager set to another value is a conflict, a 409 that lists them as
// kube-apiserver words it, unless force takes the fields over; a field
// the manager applied before and no longer applies is removed if no other
// manager owns it.
func (p *Patcher) Apply(gvk schema.GroupVersionKind, live, applied []byte, manager string, force bool, now time.Time) ([]byte, error) {
	opts := &kmetav1.PatchOptions{FieldManager: manager}
	if errs := validation.ValidatePatchOptions(opts, types.ApplyYAMLPatchType); len(errs) > 0 {
		return nil, fromStatus(kerrors.NewInvalid(schema.GroupKind{Group: kmetav1.GroupName, Kind: "PatchOptions"}, "", errs).ErrStatus)
	}
	patchObj := &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal(applied, &patchObj.Object); err != nil {
		return nil, badRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	fm, err := p.fieldManager(gvk, "")
	if err != nil {
		return nil, err
	}
	liveObj, err := decodeObject(gvk, live)
	if err != nil {
		return nil, err
	}
	times := stampTimes(liveObj)
	out, err := fm.Apply(liveObj, patchObj, manager, force)
	if err != nil {
		return nil, sortCauses(fromError(err))
	}
	return encodeObject(out, times, now)
}

// Update records the managed fields of a write that is not an apply
// (create, update, the three other patches) through subresource ("" for
// the object itself, "status"...): newObj's fields that differ from old's
// (nil for a create) become manager's, the others keep their managers,
// and the entry of manager is stamped with now. newObj may carry
// managedFields of its own, which replace old's (an empty list resets
// them), as in Kubernetes. The manager is the request's fieldManager, or
// ManagerFromUserAgent.
func (p *Patcher) Update(gvk schema.GroupVersionKind, old, newObj []byte, manager, subresource string, now time.Time) ([]byte, error) {
	fm, err := p.fieldManager(gvk, subresource)
	if err != nil {
		return nil, err
	}
	oldObj, err := decodeObject(gvk, old)
	if err != nil {
		return nil, err
	}
	obj, err := decodeObject(gvk, newObj)
	if err != nil {
		return nil, err
	}
	times := stampTimes(oldObj, obj)
	out, err := fm.Update(oldObj, obj, manager)
	if err != nil {
		// kube-apiserver's UpdateNoErrors: the write goes on, with the
		// managed fields it had.
		obj.SetManagedFields(oldObj.GetManagedFields())
		b, encErr := encodeObject(obj, times, now)
		if encErr != nil {
			return nil, encErr
		}
		return b, fmt.Errorf("%w: %v", ErrNotTracked, err)
	}
	return encodeObject(out, times, now)
}

// ManagerFromUserAgent is the manager of a write that names none, as
// kube-apiserver makes it: the user agent up to its first "/" ("kubectl"
// for "kubectl/v1.36.0 (linux/amd64) kubernetes/abcdef"), without
// unprintable characters, at most 128 bytes.
func ManagerFromUserAgent(userAgent string) string {
	prefix, _, _ := strings.Cut(userAgent, "/")
	var b bytes.Buffer
	for _, r := range prefix {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > validation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// DefaultResetFields are Kubernetes' usual ones, for the kinds of
// internal/kinds: a kind with a status subresource has its status written
// through it only, and its spec through the object only.
func DefaultResetFields(gvk schema.GroupVersionKind, subresource string) []string {
	k := kinds.Get(gvk.Group, gvk.Version, gvk.Kind)
	if k == nil || !slices.Contains(k.Subresources, "status") {
		return nil
	}
	switch subresource {
	case "":
		return []string{"status"}
	case "status":
		return []string{"spec"}
	}
	return nil
}

// fieldManager is the field manager of writes of gvk through subresource,
// made on first use: apimachinery's, the one kube-apiserver runs, over
// objects in Kubernetes' JSON (unstructured) of one version.
func (p *Patcher) fieldManager(gvk schema.GroupVersionKind, subresource string) (*managedfields.FieldManager, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := managerKey{gvk, subresource}
	if fm := p.managers[key]; fm != nil {
		return fm, nil
	}
	if _, err := p.models.root(gvk); err != nil {
		return nil, err
	}
	var reset map[fieldpath.APIVersion]fieldpath.Filter
	if paths := p.reset(gvk, subresource); len(paths) > 0 {
		set := fieldpath.NewSet()
		for _, f := range paths {
			set.Insert(fieldpath.MakePathOrDie(f))
		}
		reset = map[fieldpath.APIVersion]fieldpath.Filter{fieldpath.APIVersion(gvk.GroupVersion().String()): fieldpath.NewExcludeSetFilter(set)}
	}
	conv := &converter{gvk: gvk, convert: p.convert}
	fm, err := managedfields.NewDefaultFieldManager(p.converter, conv, defaulter{}, creater{}, gvk, gvk.GroupVersion(), subresource, reset)
	if err != nil {
		return nil, fromError(err)
	}
	p.managers[key] = fm
	return fm, nil
}

// decodeObject is an object's JSON as an unstructured object of gvk, or
// gvk's empty object for nil (what a create's old object and an apply's
// missing live object are to the field manager).
func decodeObject(gvk schema.GroupVersionKind, b []byte) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	if b != nil {
		if err := kjson.UnmarshalCaseSensitivePreserveInts(b, &obj.Object); err != nil {
			return nil, fromError(fmt.Errorf("decoding the object: %w", err))
		}
	}
	if obj.GetAPIVersion() == "" {
		obj.SetAPIVersion(gvk.GroupVersion().String())
	}
	if obj.GetKind() == "" {
		obj.SetKind(gvk.Kind)
	}
	return obj, nil
}

func encodeObject(obj runtime.Object, times *managedTimes, now time.Time) ([]byte, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fromError(fmt.Errorf("the field manager made a %T", obj))
	}
	times.restore(u, now)
	b, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fromError(err)
	}
	return b, nil
}

// converter converts objects between versions for the field manager:
// itself at its own version (the field manager's "hub" is the request's
// version), through the Converter to others.
type converter struct {
	gvk     schema.GroupVersionKind
	convert Converter
}

func (c *converter) Convert(in, out, context any) error {
	return errors.New("patch: Convert is not implemented")
}

func (c *converter) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return "", "", errors.New("patch: ConvertFieldLabel is not implemented")
}

func (c *converter) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("patch: cannot convert a %T", in)
	}
	from := u.GroupVersionKind()
	to, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{from})
	if !ok {
		return nil, runtime.NewNotRegisteredGVKErrForTarget("patch", from, target)
	}
	if to.GroupVersion() == from.GroupVersion() {
		return u, nil
	}
	if c.convert == nil {
		return nil, runtime.NewNotRegisteredGVKErrForTarget("patch", from, target)
	}
	obj, err := c.convert(u.DeepCopy().Object, to.GroupVersion().String())
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{Object: obj}
	out.SetGroupVersionKind(to)
	return out, nil
}

// defaulter defaults nothing: the registry defaults the object the
// request writes, after this package.
type defaulter struct{}

func (defaulter) Default(runtime.Object) {}

// creater makes the empty object of a kind.
type creater struct{}

func (creater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
