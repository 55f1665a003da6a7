// Package conformance checks every kind the apiserver serves, as
// discovery lists them, against every place a kind must reach: the
// declaration (internal/kinds/decl), an example manifest
// (testdata/<group.>version.Kind.yaml: the fuzz seed, the object of the
// checks), create/get/list/update/delete/watch through the real apiserver,
// skiffctl (get, -o yaml round trip, describe), a table printer of its
// own, the view/edit/admin ClusterRoles, and garbage collection by owner
// reference. A kind served without one of them fails, naming the kind and
// what is missing.
package conformance

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/await"
	"skiff.dev/internal/client"
	"skiff.dev/internal/kinds"
	"skiff.dev/internal/kinds/decl"
	"skiff.dev/internal/manifest"
	"skiff.dev/internal/object"
	"skiff.dev/internal/printers"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	metav1 "skiff.dev/proto/meta/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
	"skiff.dev/services/apiserver/authz"
	"skiff.dev/services/controller-manager/garbagecollector"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/ctl/cmd"
)

const (
	ns      = "conformance"
	timeout = 30 * time.Second
)

// The users of the user-facing roles, each bound cluster-wide.
var roleUsers = map[decl.Roles]string{decl.View: "conformance-view", decl.Edit: "conformance-edit", decl.Admin: "conformance-admin"}

func TestEveryServedKind(t *testing.T) {
	env := managertest.Start(t, apiservertest.Secure(), apiservertest.WithConfig(func(c *apiserver.Config) {
		c.Authz = authz.Options{Modes: []string{authz.ModeNode, authz.ModeRBAC}}
	}))
	gc := garbagecollector.New(env.Manager, garbagecollector.Options{})
	env.StartInformers()
	env.GoErr(gc.Run)
	ctx := env.Ctx

	served := servedKinds(t, ctx, env.Conn)
	for _, k := range kinds.All() {
		if !served[k] {
			t.Errorf("%s is declared in internal/kinds/decl but not served (discovery does not list it)", k.GVK())
		}
	}
	if _, err := client.Namespaces(env.Conn).Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	users := roleConns(t, env)
	ctl := newCLI(t, env.Server)
	for _, k := range kinds.All() {
		if !served[k] {
			continue
		}
		t.Run(k.GVK(), func(t *testing.T) {
			c := &check{t: t, ctx: ctx, env: env, k: k, kc: k.Client(env.Conn)}
			obj := c.example("")
			created := c.crud(proto.Clone(obj).(object.Object), func(cur object.Object) { c.skiffctl(ctl, cur) })
			c.kept(obj, created)
			c.printer(obj)
			c.roles(users)
			c.garbageCollected()
		})
	}
}

// servedKinds is every kind discovery lists, each declared (an error for
// one that is not).
func servedKinds(t *testing.T, ctx context.Context, conn grpc.ClientConnInterface) map[*kinds.Kind]bool {
	t.Helper()
	d := discoveryv1.NewDiscoveryClient(conn)
	groups, err := d.Groups(ctx, &discoveryv1.GroupsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	served := map[*kinds.Kind]bool{}
	for _, g := range groups.GetGroups() {
		for _, v := range g.GetVersions() {
			list, err := d.Resources(ctx, &discoveryv1.ResourcesRequest{GroupVersion: v.GetGroupVersion()})
			if err != nil {
				t.Fatal(err)
			}
			for _, rg := range list.GetGroups() {
				for _, r := range rg.GetResources() {
					k := kinds.Get(g.GetName(), v.GetVersion(), r.GetKind())
					if k == nil {
						t.Errorf("discovery serves %s %s (%s) but internal/kinds/decl does not declare it", rg.GetGroupVersion(), r.GetKind(), r.GetName())
						continue
					}
					served[k] = true
				}
			}
		}
	}
	return served
}

// check is one kind's checks.
type check struct {
	t   *testing.T
	ctx context.Context
	env *managertest.Env
	k   *kinds.Kind
	kc  kinds.Client
}

// examplePath is the kind's example manifest.
func examplePath(k *kinds.Kind) string {
	name := k.Version + "." + k.Kind.Kind + ".yaml"
	if k.Group != "" {
		name = k.Group + "." + name
	}
	return filepath.Join("testdata", name)
}

// example decodes the kind's example manifest with skiffctl's decoder,
// named for the kind (and suffix), in the test namespace if namespaced.
func (c *check) example(suffix string) object.Object {
	c.t.Helper()
	obj, err := exampleOf(c.k)
	if err != nil {
		c.t.Fatal(err)
	}
	m := object.Meta(obj)
	m.Name = "conf-" + strings.ReplaceAll(c.k.Resource, ".", "-") + "-" + c.k.Version + suffix
	if c.k.Namespaced {
		m.Namespace = ns
	}
	return obj
}

func exampleOf(k *kinds.Kind) (object.Object, error) {
	path := examplePath(k)
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s has no example manifest: write %s (a valid object of the kind: the conformance checks and the fuzz seed use it): %v", k.GVK(), path, err)
	}
	docs, err := manifest.Read(path, bytes.NewReader(src))
	if err != nil || len(docs) != 1 {
		return nil, fmt.Errorf("%s: want one document: %d, %v", path, len(docs), err)
	}
	doc := docs[0].Object
	if doc["apiVersion"] != k.GroupVersion() || doc["kind"] != k.Kind.Kind {
		return nil, fmt.Errorf("%s is a %v %v, want a %s %s", path, doc["apiVersion"], doc["kind"], k.GroupVersion(), k.Kind.Kind)
	}
	obj := k.New()
	if err := manifest.Decode(doc, obj, manifest.DecodeOptions{}); err != nil {
		return nil, fmt.Errorf("%s: skiffctl cannot decode it: %v", path, err)
	}
	return obj, nil
}

// crud creates obj, reads it, lists it, runs during(the stored object),
// updates it (a label) and deletes it, watching from its creation: the
// update and the deletion come as events.
func (c *check) crud(obj object.Object, during func(object.Object)) object.Object {
	t, ctx := c.t, c.ctx
	t.Helper()
	m := obj.GetMetadata()
	created, err := c.kc.Create(ctx, obj)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	cm := created.GetMetadata()
	if cm.GetUid() == "" || cm.GetResourceVersion() == "" || cm.GetCreationTimestamp() == nil {
		t.Fatalf("created without uid, resourceVersion or creationTimestamp: %v", cm)
	}
	got, err := c.kc.Get(ctx, m.GetNamespace(), m.GetName())
	if err != nil || got.GetMetadata().GetUid() != cm.GetUid() {
		t.Fatalf("get: %v, %v", got.GetMetadata(), err)
	}
	items, _, err := c.kc.List(ctx, &metav1.ListOptions{Namespace: m.GetNamespace(), FieldSelector: "metadata.name=" + m.GetName()})
	if err != nil || len(items) != 1 || items[0].GetMetadata().GetUid() != cm.GetUid() {
		t.Fatalf("list by metadata.name: %d items, %v", len(items), err)
	}
	during(got)

	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w, err := c.kc.Watch(wctx, &metav1.ListOptions{Namespace: m.GetNamespace(), FieldSelector: "metadata.name=" + m.GetName(), ResourceVersion: cm.GetResourceVersion()})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	object.Meta(got).Labels = map[string]string{"conformance": "updated"}
	updated, err := c.kc.Update(ctx, got)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.GetMetadata().GetResourceVersion() == cm.GetResourceVersion() {
		t.Fatal("update: resourceVersion unchanged")
	}
	next := func(what string) (string, object.Object) {
		t.Helper()
		for {
			typ, o, err := w.Next()
			if err != nil {
				t.Fatalf("watch, waiting for %s: %v", what, err)
			}
			if typ != "BOOKMARK" {
				return typ, o
			}
		}
	}
	if typ, o := next("the update"); typ != "MODIFIED" || o.GetMetadata().GetLabels()["conformance"] != "updated" {
		t.Fatalf("watch: %s %v, want MODIFIED with the label", typ, o.GetMetadata().GetLabels())
	}
	if _, err := c.kc.Delete(ctx, &metav1.DeleteRequest{Namespace: m.GetNamespace(), Name: m.GetName()}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	// Gone, or marked for deletion (a Namespace terminates; its
	// controller is not running here).
	typ, o := next("the deletion")
	if typ != "DELETED" && (typ != "MODIFIED" || o.GetMetadata().GetDeletionTimestamp() == nil) {
		t.Fatalf("watch: %s, want DELETED (or MODIFIED with a deletionTimestamp)", typ)
	}
	return created
}

// skiffctl reads the object as a user would: get (a table with its name),
// get -o yaml (which decodes back to the same object) and describe.
func (c *check) skiffctl(ctl *cli, cur object.Object) {
	t := c.t
	t.Helper()
	m := cur.GetMetadata()
	resource := c.k.Resource + "." + c.k.Version + "." + c.k.Group
	if c.k.Group == "" {
		resource = c.k.Resource
	}
	args := func(a ...string) []string {
		if c.k.Namespaced {
			a = append(a, "-n", m.GetNamespace())
		}
		return a
	}
	table := ctl.ok(t, args("get", resource, m.GetName())...)
	// A header and its row, which names it (but events': kubectl's
	// events table names the object the event is about).
	if lines := strings.Split(strings.TrimSpace(table), "\n"); len(lines) != 2 || strings.HasPrefix(lines[0], "NAME") && !strings.Contains(lines[1], m.GetName()) {
		t.Errorf("skiffctl get %s %s: want a header and its row, got\n%s", resource, m.GetName(), table)
	}
	out := ctl.ok(t, args("get", resource, m.GetName(), "-o", "yaml")...)
	docs, err := manifest.Read("get.yaml", strings.NewReader(out))
	if err != nil || len(docs) != 1 {
		t.Fatalf("skiffctl get -o yaml: %d documents, %v\n%s", len(docs), err, out)
	}
	back := c.k.New()
	if err := manifest.Decode(docs[0].Object, back, manifest.DecodeOptions{}); err != nil {
		t.Fatalf("skiffctl get -o yaml does not decode back: %v\n%s", err, out)
	}
	if !proto.Equal(back, cur) {
		t.Errorf("skiffctl get -o yaml round trip:\n%v\nwant\n%v", back, cur)
	}
	if d := ctl.ok(t, args("describe", resource, m.GetName())...); !strings.Contains(d, m.GetName()) {
		t.Errorf("skiffctl describe %s %s prints nothing about it:\n%s", resource, m.GetName(), d)
	}
}

// kept: the server stores what the example says, as the kind's defaults
// read it: every field the defaulted example sets has that value in the
// created object (which may have more: server-set metadata, allocated
// addresses, admission's additions). A write-only field (a Secret's
// stringData) is not expected back: the defaults merge it elsewhere (into
// data) and clear it, and what it became is checked instead.
func (c *check) kept(example, created object.Object) {
	c.t.Helper()
	want := proto.Clone(example).(object.Object)
	c.k.Default(want)
	if path, diff := subset(want.ProtoReflect(), created.ProtoReflect(), ""); path != "" {
		c.t.Errorf("the created object does not keep the (defaulted) example's %s: %s", path, diff)
	}
}

// subset returns the first field set in want whose value got does not
// have (lists: element by element, got may have more; maps: every key of
// want's), and how they differ.
func subset(want, got protoreflect.Message, at string) (string, string) {
	var path, diff string
	want.Range(func(fd protoreflect.FieldDescriptor, wv protoreflect.Value) bool {
		p := at + fd.JSONName()
		if !got.Has(fd) {
			path, diff = p, "missing"
			return false
		}
		gv := got.Get(fd)
		switch {
		case fd.IsList():
			wl, gl := wv.List(), gv.List()
			if gl.Len() < wl.Len() {
				path, diff = p, fmt.Sprintf("%d items, want at least %d", gl.Len(), wl.Len())
				return false
			}
			for i := 0; i < wl.Len() && path == ""; i++ {
				path, diff = subsetValue(fd, wl.Get(i), gl.Get(i), fmt.Sprintf("%s[%d]", p, i))
			}
		case fd.IsMap():
			gm := gv.Map()
			wv.Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				kp := fmt.Sprintf("%s[%v]", p, k.Interface())
				if !gm.Has(k) {
					path, diff = kp, "missing"
					return false
				}
				path, diff = subsetValue(fd.MapValue(), v, gm.Get(k), kp)
				return path == ""
			})
		default:
			path, diff = subsetValue(fd, wv, gv, p)
		}
		return path == ""
	})
	return path, diff
}

func subsetValue(fd protoreflect.FieldDescriptor, w, g protoreflect.Value, p string) (string, string) {
	if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
		return subset(w.Message(), g.Message(), p+".")
	}
	if !w.Equal(g) {
		if fd.Kind() == protoreflect.BytesKind {
			return p, fmt.Sprintf("%d bytes, want %d (values not shown)", len(g.Bytes()), len(w.Bytes()))
		}
		return p, fmt.Sprintf("%v, want %v", g.Interface(), w.Interface())
	}
	return "", ""
}

// printer: skiffctl has table columns of the kind's own.
func (c *check) printer(obj object.Object) {
	if !printers.HasColumns(obj) {
		c.t.Errorf("skiffctl has no table printer of %s (internal/printers/table.go: ownTable)", c.k.GVK())
	}
}

// roles: the users bound to view, edit and admin may do what the kind's
// declaration says (view reads, edit writes, admin writes RBAC objects),
// and no more.
func (c *check) roles(users map[decl.Roles]grpc.ClientConnInterface) {
	t, ctx := c.t, c.ctx
	t.Helper()
	roles := c.k.Stored.Roles
	namespace := ""
	if c.k.Namespaced {
		namespace = ns
	}
	_, _, err := c.k.Client(users[decl.View]).List(ctx, &metav1.ListOptions{Namespace: namespace})
	if want := roles&decl.View != 0; want != (err == nil) {
		t.Errorf("view lists %s: %v (the declaration grants it: %t)", c.k.Resource, err, want)
	} else if err != nil && !apierrors.IsForbidden(err) {
		t.Errorf("view lists %s: %v, want Forbidden", c.k.Resource, err)
	}
	for _, role := range []decl.Roles{decl.View, decl.Edit, decl.Admin} {
		want := role == decl.Edit && roles&decl.Edit != 0 || role == decl.Admin && roles&decl.Admin != 0
		if role == decl.Admin && !want {
			continue // admin aggregates edit: its other writes are edit's
		}
		obj := c.example("-" + roleUsers[role])
		_, err := c.k.Client(users[role]).Create(ctx, obj)
		if err == nil {
			m := obj.GetMetadata()
			if _, err := c.kc.Delete(ctx, &metav1.DeleteRequest{Namespace: m.GetNamespace(), Name: m.GetName()}); err != nil {
				t.Errorf("deleting %s: %v", m.GetName(), err)
			}
		}
		switch {
		case want && err != nil:
			t.Errorf("%s cannot create %s: %v (the declaration grants it)", roleUsers[role], c.k.Resource, err)
		case !want && err == nil:
			t.Errorf("%s created %s: the declaration does not grant it", roleUsers[role], c.k.Resource)
		case !want && !apierrors.IsForbidden(err):
			t.Errorf("%s creating %s: %v, want Forbidden", roleUsers[role], c.k.Resource, err)
		}
	}
}

// garbageCollected: an object of the kind owned by another that is
// deleted goes too (or is marked for deletion).
func (c *check) garbageCollected() {
	t, ctx := c.t, c.ctx
	t.Helper()
	if !c.k.IsStorageVersion() {
		return // the collector works on storage versions; an owner's reference names a group and kind
	}
	var owner *metav1.OwnerReference
	var deleteOwner func() error
	name := "conf-owner-" + c.k.Resource
	if c.k.Namespaced {
		o, err := client.ConfigMaps(c.env.Conn).Create(ctx, &corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		owner = &metav1.OwnerReference{ApiVersion: "v1", Kind: "ConfigMap", Name: name, Uid: o.GetMetadata().GetUid()}
		deleteOwner = func() error {
			_, err := client.ConfigMaps(c.env.Conn).Delete(ctx, &metav1.DeleteRequest{Namespace: ns, Name: name})
			return err
		}
	} else {
		o, err := client.ClusterRoles(c.env.Conn).Create(ctx, &rbacv1.ClusterRole{Metadata: &metav1.ObjectMeta{Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		owner = &metav1.OwnerReference{ApiVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: name, Uid: o.GetMetadata().GetUid()}
		deleteOwner = func() error {
			_, err := client.ClusterRoles(c.env.Conn).Delete(ctx, &metav1.DeleteRequest{Name: name})
			return err
		}
	}
	obj := c.example("-owned")
	object.Meta(obj).OwnerReferences = []*metav1.OwnerReference{owner}
	if _, err := c.kc.Create(ctx, obj); err != nil {
		t.Fatalf("creating the dependent: %v", err)
	}
	if err := deleteOwner(); err != nil {
		t.Fatalf("deleting the owner: %v", err)
	}
	m := obj.GetMetadata()
	var recheck await.Signal // re-evaluated every await.Recheck
	recheck.Until(t, timeout, "the garbage collector to delete the dependent "+m.GetName(), ctx.Done(), func() (bool, string) {
		got, err := c.kc.Get(ctx, m.GetNamespace(), m.GetName())
		switch {
		case apierrors.IsNotFound(err):
			return true, ""
		case err != nil:
			return false, err.Error()
		case got.GetMetadata().GetDeletionTimestamp() != nil:
			return true, ""
		}
		return false, "still there"
	})
}

// roleConns binds a user to each of view, edit and admin cluster-wide and
// returns a connection as each.
func roleConns(t *testing.T, env *managertest.Env) map[decl.Roles]grpc.ClientConnInterface {
	t.Helper()
	out := map[decl.Roles]grpc.ClientConnInterface{}
	for role, user := range roleUsers {
		roleName := map[decl.Roles]string{decl.View: "view", decl.Edit: "edit", decl.Admin: "admin"}[role]
		_, err := client.ClusterRoleBindings(env.Conn).Create(env.Ctx, &rbacv1.ClusterRoleBinding{
			Metadata: &metav1.ObjectMeta{Name: user},
			Subjects: []*rbacv1.Subject{{Kind: "User", Name: user, ApiGroup: "rbac.authorization.k8s.io"}},
			RoleRef:  &rbacv1.RoleRef{Kind: "ClusterRole", Name: roleName, ApiGroup: "rbac.authorization.k8s.io"},
		})
		if err != nil {
			t.Fatal(err)
		}
		out[role] = env.Server.Security.ConnAs(t, user)
	}
	return out
}

// cli runs skiffctl in-process as the cluster's administrator.
type cli struct{ home string }

func newCLI(t *testing.T, s *apiservertest.Server) *cli {
	t.Helper()
	cfg, err := s.Security.Config("conformance-admin-cli", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	c := &cli{home: t.TempDir()}
	b64 := base64.StdEncoding.EncodeToString
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: conformance
clusters:
- name: conformance
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: conformance
  context: {cluster: conformance, user: admin}
`, cfg.Server, b64(cfg.CAData), b64(cfg.CertData), b64(cfg.KeyData))
	if err := os.MkdirAll(filepath.Join(c.home, ".skiff"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.home, ".skiff", "config"), []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// ok runs a skiffctl command that must succeed and returns its output.
func (c *cli) ok(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out, errw bytes.Buffer
	env := cmd.Env{In: strings.NewReader(""), Out: &out, Err: &errw, Home: c.home, Getenv: func(string) string { return "" }, Now: time.Now}
	if code := cmd.Execute(ctx, args, env); code != 0 {
		t.Fatalf("skiffctl %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errw.String())
	}
	return out.String()
}
