package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/manifest"
	"skiff.dev/internal/object"
	"skiff.dev/services/ctl/kinds"
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
// bad document reported. It is the all-or-nothing front of delete -f and
// of --dry-run=client; apply and create go on with the good documents
// (prepareManifests). The kinds come from the client's own table; that
// the server serves them is checked by served.
func (r *root) readManifests(f *fileFlags, forApply bool) ([]*prepared, error) {
	ds, err := r.prepareManifests(f, forApply)
	if err != nil {
		return nil, err
	}
	if err := r.allValid(ds); err != nil {
		return nil, err
	}
	return ds.prepared(), nil
}

// document is one document of a manifest: prepared, or why it cannot be
// sent (a documentError).
type document struct {
	p   *prepared
	err error
}

type documents []document

func (ds documents) prepared() []*prepared {
	out := make([]*prepared, 0, len(ds))
	for _, d := range ds {
		if d.err == nil {
			out = append(out, d.p)
		}
	}
	return out
}

// allValid reports every bad document on stderr and fails (errSilent)
// when there is one: nothing is to be sent.
func (r *root) allValid(ds documents) error {
	bad := 0
	for _, d := range ds {
		if d.err != nil {
			fmt.Fprintln(r.env.Err, r.message(d.err))
			bad++
		}
	}
	if bad > 0 {
		fmt.Fprintf(r.env.Err, "error: %d of %d objects are invalid: nothing was sent\n", bad, len(ds))
		return errSilent
	}
	return nil
}

// prepareManifests reads the files and decodes and validates each of their
// documents, in order. A file that cannot be read or parsed fails the
// whole; a document that is invalid has its error beside it.
func (r *root) prepareManifests(f *fileFlags, forApply bool) (documents, error) {
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
	out := make(documents, len(docs))
	for i, d := range docs {
		out[i].p, out[i].err = prepareDoc(d, static, res.Namespace, res.NamespaceExplicit, f.strict(), forApply)
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
// Discovery), swapping in the server's view of each kind. Any kind not
// served fails them all.
func (r *root) served(ctx context.Context, ps []*prepared) error {
	ds := make(documents, len(ps))
	for i, p := range ps {
		ds[i].p = p
	}
	if err := r.servedEach(ctx, ds); err != nil {
		return err
	}
	var failed bool
	for _, d := range ds {
		if d.err != nil {
			fmt.Fprintln(r.env.Err, r.message(d.err))
			failed = true
		}
	}
	if failed {
		return errSilent
	}
	return nil
}

// servedEach checks, for every good document, that the server serves its
// kind, swapping in the server's view of the kind, or marks the document
// bad. Its error is Discovery's own.
func (r *root) servedEach(ctx context.Context, ds documents) error {
	m, err := r.kinds(ctx)
	if err != nil {
		return err
	}
	for i := range ds {
		p := ds[i].p
		if ds[i].err != nil {
			continue
		}
		k, err := m.ForManifest(p.kind.GroupVersion(), p.kind.Kind)
		if err != nil {
			ds[i].p, ds[i].err = nil, &documentError{doc: p.doc, what: p.what(), err: err}
			continue
		}
		p.kind = k
	}
	return nil
}

// requestError is the server's refusal of one document's request, named
// with the document as kubectl does: `error when creating "web.yaml"`.
type requestError struct {
	doc  *manifest.Document
	verb string // "creating", "updating", "retrieving current configuration of"
	err  error
}

func (e *requestError) Error() string { return e.err.Error() }
func (e *requestError) Unwrap() error { return e.err }

// requestMessage renders err for stderr. An answer of the server names the
// document it was about (`Error from server (Invalid): error when creating
// "web.yaml" (document 2): Deployment "web" is invalid: ...`); anything
// else (a transport error, a login needed) is worded as message does.
func (r *root) requestMessage(err error) string {
	var re *requestError
	if !errors.As(err, &re) {
		return r.message(err)
	}
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		if st, ok := status.FromError(re.err); ok && st.Code() != codes.Unknown {
			se = apierrors.FromError(re.err)
		}
	}
	if se == nil || se.Status.GetCode() == 0 || se.Reason() == apierrors.ReasonUnauthorized {
		return r.message(re.err)
	}
	msg := se.Status.GetMessage()
	if se.Reason() == apierrors.ReasonInvalid {
		msg = withCauses(se)
	}
	prefix := "Error from server"
	if se.Reason() != apierrors.ReasonUnknown {
		prefix += " (" + string(se.Reason()) + ")"
	}
	return fmt.Sprintf("%s: error when %s %s: %s", prefix, re.verb, documentName(re.doc), msg)
}

// documentName is `"web.yaml"`, `"web.yaml" (document 2)` or `STDIN`.
func documentName(d *manifest.Document) string {
	name := fmt.Sprintf("%q", d.Source)
	if d.Source == "-" {
		name = "STDIN"
	}
	if d.Multi {
		name += fmt.Sprintf(" (document %d)", d.Index+1)
	}
	return name
}
