package discoverydoc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	k8sversion "k8s.io/apimachinery/pkg/version"
	sigsjson "sigs.k8s.io/json"

	"skiff.dev/internal/kinds"
	"skiff.dev/internal/kinds/decl"
	"skiff.dev/internal/version"
)

// decode decodes doc strictly (no unknown, duplicate or miscased field)
// into out, a Kubernetes type, and checks that Kubernetes' type encodes
// back to the same bytes: the same fields, order and omissions.
func decode(t *testing.T, name string, doc []byte, out any) {
	t.Helper()
	strict, err := sigsjson.UnmarshalStrict(doc, out)
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, doc)
	}
	if len(strict) > 0 {
		t.Fatalf("%s: not strictly %T: %v\n%s", name, out, strict, doc)
	}
	var again bytes.Buffer
	if err := json.NewEncoder(&again).Encode(out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), doc) {
		t.Errorf("%s: Kubernetes' %T encodes differently:\n got %s\nwant %s", name, out, doc, again.Bytes())
	}
}

func servedGroupVersions() []string {
	var gvs []string
	for _, k := range kinds.All() {
		if !slices.Contains(gvs, k.GroupVersion()) {
			gvs = append(gvs, k.GroupVersion())
		}
	}
	return gvs
}

// TestDocumentsAreKubernetesTypes decodes every document strictly into
// the type kube-apiserver answers with.
func TestDocumentsAreKubernetesTypes(t *testing.T) {
	decode(t, "/version", Version(version.Info{GitVersion: "v0.4.0", GitCommit: "abc1234", GoVersion: "go1.26.8", Platform: "linux/amd64"}), &k8sversion.Info{})
	decode(t, "/api", APIVersions("10.0.0.1:6443"), &metav1.APIVersions{})
	decode(t, "/apis", APIGroupList(), &metav1.APIGroupList{})
	for _, gv := range servedGroupVersions() {
		doc, ok := APIResourceList(gv)
		if !ok {
			t.Fatalf("APIResourceList(%q): not served", gv)
		}
		decode(t, gv, doc, &metav1.APIResourceList{})
		if g := groupOf(gv); g != "" {
			doc, ok := APIGroup(g)
			if !ok {
				t.Fatalf("APIGroup(%q): not served", g)
			}
			decode(t, "/apis/"+g, doc, &metav1.APIGroup{})
		}
	}
	decode(t, "aggregated /api", Aggregated(Core), &apidiscoveryv2.APIGroupDiscoveryList{})
	decode(t, "aggregated /apis", Aggregated(Groups), &apidiscoveryv2.APIGroupDiscoveryList{})
}

func groupOf(gv string) string {
	g, _, ok := strings.Cut(gv, "/")
	if !ok {
		return ""
	}
	return g
}

func resourceList(t *testing.T, gv string) metav1.APIResourceList {
	t.Helper()
	doc, ok := APIResourceList(gv)
	if !ok {
		t.Fatalf("APIResourceList(%q): not served", gv)
	}
	var l metav1.APIResourceList
	decode(t, gv, doc, &l)
	return l
}

func aggregated(t *testing.T, root Root) apidiscoveryv2.APIGroupDiscoveryList {
	t.Helper()
	var l apidiscoveryv2.APIGroupDiscoveryList
	decode(t, "aggregated", Aggregated(root), &l)
	return l
}

// findVersion is the aggregated document's entry of group/version.
func findVersion(l apidiscoveryv2.APIGroupDiscoveryList, group, version string) *apidiscoveryv2.APIVersionDiscovery {
	for _, g := range l.Items {
		if g.Name != group {
			continue
		}
		for i := range g.Versions {
			if g.Versions[i].Version == version {
				return &g.Versions[i]
			}
		}
	}
	return nil
}

// TestEveryKindIsDiscovered: every declared kind appears once in the
// resource list of each version it is served at and in the aggregated
// document, with its scope, names, verbs and subresources; every group
// in /apis with its versions, the preferred one first.
func TestEveryKindIsDiscovered(t *testing.T) {
	groups := map[string]metav1.APIGroup{}
	var list metav1.APIGroupList
	decode(t, "/apis", APIGroupList(), &list)
	for _, g := range list.Groups {
		if _, dup := groups[g.Name]; dup {
			t.Errorf("/apis lists group %q twice", g.Name)
		}
		groups[g.Name] = g
	}
	core, apis := aggregated(t, Core), aggregated(t, Groups)
	if len(core.Items) != 1 || core.Items[0].Name != "" {
		t.Fatalf("aggregated /api: want the core group alone, got %+v", core.Items)
	}
	if _, ok := groups[""]; ok {
		t.Errorf("/apis lists the core group")
	}
	firstVersion := map[string]string{}
	for _, k := range kinds.All() {
		t.Run(k.GVK(), func(t *testing.T) {
			if _, ok := firstVersion[k.Group]; !ok {
				firstVersion[k.Group] = k.Version
			}
			if k.Group != "" {
				g, ok := groups[k.Group]
				if !ok {
					t.Fatalf("/apis has no group %q", k.Group)
				}
				if !slices.Contains(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: k.GroupVersion(), Version: k.Version}) {
					t.Errorf("/apis: group %q has no version %s: %+v", k.Group, k.Version, g.Versions)
				}
				if g.PreferredVersion.Version != firstVersion[k.Group] || g.Versions[0] != g.PreferredVersion {
					t.Errorf("/apis: group %q prefers %+v (first %+v), want %s", k.Group, g.PreferredVersion, g.Versions[0], firstVersion[k.Group])
				}
			}

			l := resourceList(t, k.GroupVersion())
			if l.GroupVersion != k.GroupVersion() {
				t.Errorf("groupVersion %q", l.GroupVersion)
			}
			var found []metav1.APIResource
			subs := map[string]metav1.APIResource{}
			for _, r := range l.APIResources {
				if r.Name == k.Resource {
					found = append(found, r)
				}
				if parent, sub, ok := strings.Cut(r.Name, "/"); ok && parent == k.Resource {
					subs[sub] = r
				}
			}
			if len(found) != 1 {
				t.Fatalf("%d resources %q in %s", len(found), k.Resource, k.GroupVersion())
			}
			r := found[0]
			if r.Kind != k.Kind.Kind || r.SingularName != k.Singular() || r.Namespaced != k.Namespaced ||
				!slices.Equal(r.ShortNames, k.ShortNames) || r.Group != "" || r.Version != "" {
				t.Errorf("resource %+v", r)
			}
			for _, v := range []string{"create", "delete", "get", "list", "patch", "update", "watch"} {
				if !slices.Contains(r.Verbs, v) {
					t.Errorf("verbs %v lack %s", r.Verbs, v)
				}
			}
			if !slices.IsSorted(r.Verbs) {
				t.Errorf("verbs %v not sorted", r.Verbs)
			}
			if want := StorageVersionHash(k.Stored.Group, k.Stored.Version, k.Stored.Kind.Kind); r.StorageVersionHash != want {
				t.Errorf("storageVersionHash %q, want %q (of the storage version %s)", r.StorageVersionHash, want, k.Stored.GVK())
			}
			if len(subs) != len(k.Subresources) {
				t.Errorf("subresources %v, declared %v", subs, k.Subresources)
			}
			for _, name := range k.Subresources {
				s, ok := subs[name]
				if !ok {
					t.Errorf("no %s/%s", k.Resource, name)
					continue
				}
				if s.Namespaced != k.Namespaced || len(s.Verbs) == 0 || s.Kind == "" || s.SingularName != "" || s.StorageVersionHash != "" {
					t.Errorf("subresource %+v", s)
				}
			}

			agg := apis
			if k.Group == "" {
				agg = core
			}
			vd := findVersion(agg, k.Group, k.Version)
			if vd == nil {
				t.Fatalf("aggregated discovery has no %s", k.GroupVersion())
			}
			if vd.Freshness != apidiscoveryv2.DiscoveryFreshnessCurrent {
				t.Errorf("freshness %q", vd.Freshness)
			}
			var ar []apidiscoveryv2.APIResourceDiscovery
			for _, x := range vd.Resources {
				if x.Resource == k.Resource {
					ar = append(ar, x)
				}
			}
			if len(ar) != 1 {
				t.Fatalf("aggregated: %d resources %q", len(ar), k.Resource)
			}
			scope := apidiscoveryv2.ScopeCluster
			if k.Namespaced {
				scope = apidiscoveryv2.ScopeNamespace
			}
			wantKind := metav1.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind.Kind}
			if a := ar[0]; a.Scope != scope || a.SingularResource != k.Singular() || *a.ResponseKind != wantKind ||
				!slices.Equal(a.Verbs, r.Verbs) || !slices.Equal(a.ShortNames, k.ShortNames) || !slices.Equal(a.Categories, r.Categories) {
				t.Errorf("aggregated resource %+v", a)
			}
			var aggSubs []string
			for _, s := range ar[0].Subresources {
				aggSubs = append(aggSubs, s.Subresource)
				if !slices.Equal(s.Verbs, subs[s.Subresource].Verbs) || s.ResponseKind == nil || s.ResponseKind.Kind != subs[s.Subresource].Kind {
					t.Errorf("aggregated subresource %+v, resource list has %+v", s, subs[s.Subresource])
				}
			}
			if want := slices.Sorted(slices.Values(k.Subresources)); !slices.Equal(aggSubs, want) {
				t.Errorf("aggregated subresources %v, want %v", aggSubs, want)
			}
		})
	}
}

// TestPodsAsKubernetes: the pods entries of /api/v1 and of aggregated
// /api as kube-apiserver v1.36 prints them (the subresources Skiff has;
// Kubernetes also has pods/proxy and pods/resize).
func TestPodsAsKubernetes(t *testing.T) {
	l := resourceList(t, "v1")
	if l.Kind != "APIResourceList" || l.APIVersion != "" {
		t.Errorf("/api/v1 is kind %q apiVersion %q; kube-apiserver's has kind APIResourceList and no apiVersion", l.Kind, l.APIVersion)
	}
	all := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	want := []metav1.APIResource{
		{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: all, ShortNames: []string{"po"}, Categories: []string{"all"}, StorageVersionHash: "xPOwRZ+Yhw8="},
		{Name: "pods/attach", Namespaced: true, Kind: "PodAttachOptions", Verbs: []string{"create", "get"}},
		{Name: "pods/binding", Namespaced: true, Kind: "Binding", Verbs: []string{"create"}},
		{Name: "pods/ephemeralcontainers", Namespaced: true, Kind: "Pod", Verbs: []string{"get", "patch", "update"}},
		{Name: "pods/eviction", Namespaced: true, Group: "policy", Version: "v1", Kind: "Eviction", Verbs: []string{"create"}},
		{Name: "pods/exec", Namespaced: true, Kind: "PodExecOptions", Verbs: []string{"create", "get"}},
		{Name: "pods/log", Namespaced: true, Kind: "Pod", Verbs: []string{"get"}},
		{Name: "pods/portforward", Namespaced: true, Kind: "PodPortForwardOptions", Verbs: []string{"create", "get"}},
		{Name: "pods/status", Namespaced: true, Kind: "Pod", Verbs: []string{"get", "patch", "update"}},
	}
	var got []metav1.APIResource
	for _, r := range l.APIResources {
		if r.Name == "pods" || strings.HasPrefix(r.Name, "pods/") {
			got = append(got, r)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pods in /api/v1:\n got %+v\nwant %+v", got, want)
	}
	for _, r := range l.APIResources {
		switch r.Name {
		case "namespaces":
			if !slices.Equal(r.Verbs, []string{"create", "delete", "get", "list", "patch", "update", "watch"}) || !slices.Equal(r.ShortNames, []string{"ns"}) || r.Namespaced {
				t.Errorf("namespaces %+v; Kubernetes' have no deletecollection", r)
			}
		case "services":
			if !slices.Equal(r.Categories, []string{"all"}) || !slices.Equal(r.ShortNames, []string{"svc"}) {
				t.Errorf("services %+v", r)
			}
		case "serviceaccounts/token":
			if r.Group != "authentication.k8s.io" || r.Version != "v1" || r.Kind != "TokenRequest" || !slices.Equal(r.Verbs, []string{"create"}) {
				t.Errorf("serviceaccounts/token %+v", r)
			}
		case "configmaps":
			if r.Categories != nil {
				t.Errorf("configmaps are in categories %v; Kubernetes' are in none", r.Categories)
			}
		}
	}

	vd := findVersion(aggregated(t, Core), "", "v1")
	var pods *apidiscoveryv2.APIResourceDiscovery
	for i := range vd.Resources {
		if vd.Resources[i].Resource == "pods" {
			pods = &vd.Resources[i]
		}
	}
	core := func(kind string) *metav1.GroupVersionKind { return &metav1.GroupVersionKind{Version: "v1", Kind: kind} }
	wantAgg := apidiscoveryv2.APIResourceDiscovery{
		Resource: "pods", ResponseKind: core("Pod"), Scope: apidiscoveryv2.ScopeNamespace, SingularResource: "pod",
		Verbs: all, ShortNames: []string{"po"}, Categories: []string{"all"},
		Subresources: []apidiscoveryv2.APISubresourceDiscovery{
			{Subresource: "attach", ResponseKind: core("PodAttachOptions"), Verbs: []string{"create", "get"}},
			{Subresource: "binding", ResponseKind: core("Binding"), Verbs: []string{"create"}},
			{Subresource: "ephemeralcontainers", ResponseKind: core("Pod"), Verbs: []string{"get", "patch", "update"}},
			{Subresource: "eviction", ResponseKind: &metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}, Verbs: []string{"create"}},
			{Subresource: "exec", ResponseKind: core("PodExecOptions"), Verbs: []string{"create", "get"}},
			{Subresource: "log", ResponseKind: core("Pod"), Verbs: []string{"get"}},
			{Subresource: "portforward", ResponseKind: core("PodPortForwardOptions"), Verbs: []string{"create", "get"}},
			{Subresource: "status", ResponseKind: core("Pod"), Verbs: []string{"get", "patch", "update"}},
		},
	}
	if pods == nil || !reflect.DeepEqual(*pods, wantAgg) {
		t.Errorf("aggregated pods:\n got %+v\nwant %+v", pods, wantAgg)
	}
}

// TestDeploymentsAsKubernetes: the deployments entries of /apis/apps/v1
// and aggregated /apis as kube-apiserver v1.36 prints them; apps/v1beta1
// (which Skiff still serves) stores as apps/v1, so has its hash.
func TestDeploymentsAsKubernetes(t *testing.T) {
	l := resourceList(t, "apps/v1")
	if l.Kind != "APIResourceList" || l.APIVersion != "v1" {
		t.Errorf("/apis/apps/v1 is kind %q apiVersion %q", l.Kind, l.APIVersion)
	}
	all := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	want := []metav1.APIResource{
		{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment", Verbs: all,
			ShortNames: []string{"deploy"}, Categories: []string{"all"}, StorageVersionHash: "8aSe+NMegvE="},
		{Name: "deployments/scale", Namespaced: true, Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: []string{"get", "patch", "update"}},
		{Name: "deployments/status", Namespaced: true, Kind: "Deployment", Verbs: []string{"get", "patch", "update"}},
	}
	var got []metav1.APIResource
	for _, r := range l.APIResources {
		if r.Name == "deployments" || strings.HasPrefix(r.Name, "deployments/") {
			got = append(got, r)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deployments in /apis/apps/v1:\n got %+v\nwant %+v", got, want)
	}
	if !slices.IsSortedFunc(l.APIResources, func(a, b metav1.APIResource) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("apps/v1 resources not sorted by name as kube-apiserver installs them")
	}

	for _, r := range resourceList(t, "apps/v1beta1").APIResources {
		if r.Name == "deployments" && r.StorageVersionHash != "8aSe+NMegvE=" {
			t.Errorf("apps/v1beta1 deployments hash %q, want apps/v1's", r.StorageVersionHash)
		}
	}

	apps := func(kind string) *metav1.GroupVersionKind {
		return &metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: kind}
	}
	wantAgg := apidiscoveryv2.APIResourceDiscovery{
		Resource: "deployments", ResponseKind: apps("Deployment"), Scope: apidiscoveryv2.ScopeNamespace,
		SingularResource: "deployment", Verbs: all, ShortNames: []string{"deploy"}, Categories: []string{"all"},
		Subresources: []apidiscoveryv2.APISubresourceDiscovery{
			{Subresource: "scale", ResponseKind: &metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, Verbs: []string{"get", "patch", "update"}},
			{Subresource: "status", ResponseKind: apps("Deployment"), Verbs: []string{"get", "patch", "update"}},
		},
	}
	vd := findVersion(aggregated(t, Groups), "apps", "v1")
	var gotAgg *apidiscoveryv2.APIResourceDiscovery
	for i := range vd.Resources {
		if vd.Resources[i].Resource == "deployments" {
			gotAgg = &vd.Resources[i]
		}
	}
	if gotAgg == nil || !reflect.DeepEqual(*gotAgg, wantAgg) {
		t.Errorf("aggregated deployments:\n got %+v\nwant %+v", gotAgg, wantAgg)
	}
}

// TestGroupOrder: /apis and aggregated /apis list groups as
// kube-aggregator does, by its group priorities; apps prefers v1.
func TestGroupOrder(t *testing.T) {
	var list metav1.APIGroupList
	decode(t, "/apis", APIGroupList(), &list)
	var names []string
	for _, g := range list.Groups {
		names = append(names, g.Name)
	}
	want := []string{"apps", "authentication.k8s.io", "authorization.k8s.io", "batch", "certificates.k8s.io", "policy", "rbac.authorization.k8s.io", "storage.k8s.io", "admissionregistration.k8s.io",
		"scheduling.k8s.io", "coordination.k8s.io", "node.k8s.io", "discovery.k8s.io"}
	if !slices.Equal(names, want) {
		t.Errorf("/apis groups %v, want %v", names, want)
	}
	var aggNames []string
	for _, g := range aggregated(t, Groups).Items {
		aggNames = append(aggNames, g.Name)
	}
	if !slices.Equal(aggNames, want) {
		t.Errorf("aggregated /apis groups %v, want %v", aggNames, want)
	}
	wantApps := `{"kind":"APIGroup","apiVersion":"v1","name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"},{"groupVersion":"apps/v1beta1","version":"v1beta1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}}` + "\n"
	if doc, _ := APIGroup("apps"); string(doc) != wantApps {
		t.Errorf("/apis/apps:\n got %s\nwant %s", doc, wantApps)
	}
}

func TestNotServed(t *testing.T) {
	for _, gv := range []string{"apps/v2", "v2", "", "autoscaling/v1", "apps"} {
		if _, ok := APIResourceList(gv); ok {
			t.Errorf("APIResourceList(%q) served", gv)
		}
	}
	for _, g := range []string{"", "autoscaling", "v1"} {
		if _, ok := APIGroup(g); ok {
			t.Errorf("APIGroup(%q) served", g)
		}
	}
}

func TestAPIVersions(t *testing.T) {
	for _, c := range []struct{ addr, want string }{
		{"10.0.0.1:6443", `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"10.0.0.1:6443"}]}`},
		{"", `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":null}`},
	} {
		if got := string(APIVersions(c.addr)); got != c.want+"\n" {
			t.Errorf("APIVersions(%q) = %s, want %s", c.addr, got, c.want)
		}
	}
}

func TestVersion(t *testing.T) {
	cases := []struct {
		name string
		info version.Info
		want k8sversion.Info
	}{
		{"release", version.Info{GitVersion: "v0.4.0", GitCommit: "0123abc", GoVersion: "go1.26.8", Platform: "linux/amd64"},
			k8sversion.Info{GitVersion: "v1.36.0+skiff.v0.4.0", GitCommit: "0123abc", GitTreeState: "clean"}},
		{"git describe of a dirty tree", version.Info{GitVersion: "v0.4.0-3-g0123abc-dirty", GitCommit: "0123abc", GoVersion: "go1.26.8", Platform: "linux/amd64"},
			k8sversion.Info{GitVersion: "v1.36.0+skiff.v0.4.0-3-g0123abc-dirty", GitCommit: "0123abc", GitTreeState: "dirty"}},
		{"pseudo-version", version.Info{GitVersion: "v0.0.0-20260101120000-0123456789ab+dirty", GitCommit: "0123456789abcdef", GoVersion: "go1.26.8", Platform: "linux/amd64"},
			k8sversion.Info{GitVersion: "v1.36.0+skiff.v0.0.0-20260101120000-0123456789ab-dirty", GitCommit: "0123456789abcdef", GitTreeState: "dirty"}},
		{"dev", version.Info{GitVersion: version.Dev, GoVersion: "go1.26.8", Platform: "linux/arm64"},
			k8sversion.Info{GitVersion: "v1.36.0+skiff.v0.0.0-dev"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got k8sversion.Info
			decode(t, "/version", Version(c.info), &got)
			want := c.want
			want.Major, want.Minor = "1", "36"
			want.EmulationMajor, want.EmulationMinor = "1", "36"
			want.MinCompatibilityMajor, want.MinCompatibilityMinor = "1", "35"
			want.BuildDate = "1970-01-01T00:00:00Z"
			want.GoVersion, want.Compiler, want.Platform = c.info.GoVersion, "gc", c.info.Platform
			if got != want {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			v, err := utilversion.ParseSemantic(got.GitVersion)
			if err != nil {
				t.Fatalf("gitVersion %q is not a semantic version: %v", got.GitVersion, err)
			}
			if v.Major() != 1 || v.Minor() != 36 || v.PreRelease() != "" {
				t.Errorf("gitVersion %q is %v, want 1.36 and no pre-release", got.GitVersion, v)
			}
		})
	}
	if got := GitVersion("v1..2/x"); got != "v1.36.0+skiff.v1.2-x" {
		t.Errorf("GitVersion: %q", got)
	}
}

// TestUndeclaredSubresource: a kind declaring a subresource discovery
// knows nothing of is refused, naming it, not served without verbs.
func TestUndeclaredSubresource(t *testing.T) {
	k := &kinds.Kind{Kind: decl.Kind{Group: "example.com", Version: "v1", Kind: "Widget", Resource: "widgets", Subresources: []string{"status", "frobnicate"}}}
	k.Stored = k
	_, err := build([]*kinds.Kind{k})
	if err == nil || !strings.Contains(err.Error(), `example.com/v1/Widget: subresource "frobnicate"`) {
		t.Errorf("build: %v", err)
	}
	k.Subresources = []string{"status"}
	c, err := build([]*kinds.Kind{k, k})
	if err == nil || !strings.Contains(err.Error(), `resource "widgets" declared twice`) {
		t.Errorf("build of a kind twice: %v, %v", c, err)
	}
}

func TestStorageVersionHash(t *testing.T) {
	// Values kube-apiserver prints.
	for _, c := range []struct{ group, version, kind, want string }{
		{"", "v1", "Pod", "xPOwRZ+Yhw8="},
		{"apps", "v1", "Deployment", "8aSe+NMegvE="},
	} {
		if got := StorageVersionHash(c.group, c.version, c.kind); got != c.want {
			t.Errorf("StorageVersionHash(%q, %q, %q) = %q, want %q", c.group, c.version, c.kind, got, c.want)
		}
	}
}

// TestReviewsAreDiscovered: the access and identity reviews, no kinds, are
// listed as kube-apiserver lists them (kubectl auth can-i and whoami look
// for them): create only, cluster-scoped, in /apis/<group>, its version's
// resource list and the aggregated document.
func TestReviewsAreDiscovered(t *testing.T) {
	for _, tc := range []struct{ group, resource, kind string }{
		{"authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview"},
		{"authorization.k8s.io", "selfsubjectrulesreviews", "SelfSubjectRulesReview"},
		{"authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview"},
		{"authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview"},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			if _, ok := APIGroup(tc.group); !ok {
				t.Fatalf("/apis/%s not served", tc.group)
			}
			l := resourceList(t, tc.group+"/v1")
			i := slices.IndexFunc(l.APIResources, func(r metav1.APIResource) bool { return r.Name == tc.resource })
			if i < 0 {
				t.Fatalf("%s/v1 does not list %s: %+v", tc.group, tc.resource, l.APIResources)
			}
			r := l.APIResources[i]
			if r.Kind != tc.kind || r.Namespaced || !slices.Equal(r.Verbs, []string{"create"}) || r.SingularName != strings.TrimSuffix(tc.resource, "s") || r.StorageVersionHash != "" {
				t.Errorf("%s: %+v", tc.resource, r)
			}
			vd := findVersion(aggregated(t, Groups), tc.group, "v1")
			if vd == nil {
				t.Fatalf("aggregated /apis has no %s/v1", tc.group)
			}
			j := slices.IndexFunc(vd.Resources, func(r apidiscoveryv2.APIResourceDiscovery) bool { return r.Resource == tc.resource })
			if j < 0 || vd.Resources[j].ResponseKind.Kind != tc.kind || string(vd.Resources[j].Scope) != "Cluster" || !slices.Equal(vd.Resources[j].Verbs, []string{"create"}) {
				t.Errorf("aggregated %s: %+v", tc.resource, vd.Resources)
			}
		})
	}
}
