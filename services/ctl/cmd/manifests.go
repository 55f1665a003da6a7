package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/object"
	"skiff.dev/services/ctl/kinds"
	"skiff.dev/services/ctl/manifest"
)

// prepared is one document of a manifest, decoded and checked, ready to send.
type prepared struct {
	doc  *manifest.Document
	kind *kinds.Kind
	obj  object.Object // as decoded, namespace filled in
	// config is the object as configured, in Kubernetes' shape and without
	// status: what apply merges and records as last applied.
	config map[string]any
}

func (p *prepared) namespace() string { return p.obj.GetMetadata().GetNamespace() }
func (p *prepared) name() string      { return p.obj.GetMetadata().GetName() }

// what is `Deployment "web"`.
func (p *prepared) what() string { return fmt.Sprintf("%s %q", p.kind.Kind, p.name()) }

// fileFlags are -f, -R and --validate.
type fileFlags struct {
	files     []string
	recursive bool
	validate  string // "true" (strict), "false", "strict", "warn", "ignore"
}

func (f *fileFlags) strict() bool {
	switch f.validate {
	case "false", "ignore", "warn":
		return false
	}
	return true
}

// readManifests reads, decodes and validates every document of the files
// before anything is sent: one bad document fails them all, with every
// bad document reported. The kinds come from the client's own table; that
// the server serves them is checked by served.
func (r *root) readManifests(f *fileFlags, forApply bool) ([]*prepared, error) {
	docs, err := manifest.ReadPaths(f.files, f.recursive, r.env.In)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, errors.New("no objects passed to " + map[bool]string{true: "apply", false: "create"}[forApply])
	}
	res, err := r.resolve()
	if err != nil {
		return nil, err
	}
	static := kinds.Static()
	var out []*prepared
	var bad []error
	for _, d := range docs {
		p, err := prepareDoc(d, static, res.Namespace, res.NamespaceExplicit, f.strict(), forApply)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out = append(out, p)
	}
	if len(bad) > 0 {
		for _, e := range bad {
			fmt.Fprintln(r.env.Err, r.message(e))
		}
		fmt.Fprintf(r.env.Err, "error: %d of %d objects are invalid: nothing was sent\n", len(bad), len(docs))
		return nil, errSilent
	}
	return out, nil
}

func prepareDoc(d *manifest.Document, m *kinds.Mapper, namespace string, explicit, strict, forApply bool) (*prepared, error) {
	fail := func(what string, err error) error { return &documentError{doc: d, what: what, err: err} }
	apiVersion, _ := d.Object["apiVersion"].(string)
	kindName, _ := d.Object["kind"].(string)
	var missing []string
	if apiVersion == "" {
		missing = append(missing, "apiVersion not set")
	}
	if kindName == "" {
		missing = append(missing, "kind not set")
	}
	if len(missing) > 0 {
		return nil, fail("", errors.New(strings.Join(missing, ", ")))
	}
	k, err := m.ForManifest(apiVersion, kindName)
	if err != nil {
		return nil, fail("", err)
	}
	obj := k.New()
	if err := manifest.Decode(d.Object, obj, manifest.DecodeOptions{AllowUnknown: !strict}); err != nil {
		return nil, fail(whatOf(k, d.Object), err)
	}
	meta := object.Meta(obj)
	p := &prepared{doc: d, kind: k, obj: obj}
	if k.Namespaced {
		switch {
		case meta.Namespace == "":
			meta.Namespace = namespace
		case explicit && meta.Namespace != namespace:
			return nil, fail(p.what(), fmt.Errorf("the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation", meta.Namespace, namespace, meta.Namespace))
		}
	}
	if forApply {
		if meta.Name == "" && meta.GenerateName != "" {
			return nil, fail(p.what(), errors.New("cannot use generateName with apply"))
		}
		if meta.Name == "" {
			return nil, fail(p.what(), errors.New("metadata.name: Required value: apply needs a name"))
		}
	}
	if strict && k.CanValidate() {
		check := proto.Clone(obj).(object.Object)
		k.Default(check)
		if cm := object.Meta(check); cm.Name == "" && cm.GenerateName != "" {
			cm.Name = cm.GenerateName + "xxxxx" // the server adds a suffix
		}
		if errs := k.Validate(check, nil); len(errs) > 0 {
			return nil, fail("", apierrors.NewInvalid(k.Kind, check.GetMetadata().GetName(), errs))
		}
	}
	p.config = manifest.Encode(obj)
	delete(p.config, "status")
	return p, nil
}

func whatOf(k *kinds.Kind, obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	if name, _ := meta["name"].(string); name != "" {
		return fmt.Sprintf("%s %q", k.Kind, name)
	}
	return ""
}

// served checks that the server serves every prepared kind (through
// Discovery), swapping in the server's view of each kind.
func (r *root) served(ctx context.Context, ps []*prepared) error {
	m, err := r.kinds(ctx)
	if err != nil {
		return err
	}
	var bad []error
	for _, p := range ps {
		k, err := m.ForManifest(p.kind.GroupVersion(), p.kind.Kind)
		if err != nil {
			bad = append(bad, &documentError{doc: p.doc, what: p.what(), err: err})
			continue
		}
		p.kind = k
	}
	if len(bad) > 0 {
		for _, e := range bad {
			fmt.Fprintln(r.env.Err, r.message(e))
		}
		return errSilent
	}
	return nil
}
