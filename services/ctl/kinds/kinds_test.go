package kinds

import (
	"errors"
	"testing"

	discoveryv1 "skiff.dev/proto/discovery/v1"
)

func TestForResource(t *testing.T) {
	m := Static()
	cases := map[string]string{
		"pods":                    "v1/Pod",
		"po":                      "v1/Pod",
		"Pod":                     "v1/Pod",
		"deploy":                  "apps/v1/Deployment",
		"deployments.apps":        "apps/v1/Deployment",
		"deployment.v1beta1.apps": "apps/v1beta1/Deployment",
		"rs":                      "apps/v1/ReplicaSet",
		"leases":                  "coordination.k8s.io/v1/Lease",
		"leases.coordination":     "coordination.k8s.io/v1/Lease",
		"cm":                      "v1/ConfigMap",
		"ev":                      "v1/Event",
		"no":                      "v1/Node",
		"ns":                      "v1/Namespace",
	}
	for in, want := range cases {
		k, err := m.ForResource(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := k.GroupVersion() + "/" + k.Kind; got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
	var unknown *UnknownResourceError
	if _, err := m.ForResource("gadgets"); !errors.As(err, &unknown) || err.Error() != `the server doesn't have a resource type "gadgets"` {
		t.Errorf("gadgets: %v", err)
	}
	if _, err := m.ForResource("pods.apps"); err == nil {
		t.Error("pods.apps resolved")
	}
}

func TestDiscoveryDecidesWhatIsServed(t *testing.T) {
	groups := &discoveryv1.APIGroupList{Groups: []*discoveryv1.APIGroup{
		{Name: "apps", PreferredVersion: &discoveryv1.GroupVersionForDiscovery{GroupVersion: "apps/v1beta1", Version: "v1beta1"}},
	}}
	res := &discoveryv1.APIResourceList{Groups: []*discoveryv1.APIResourceGroup{
		{GroupVersion: "apps/v1", Resources: []*discoveryv1.APIResource{{Name: "deployments", Namespaced: true, Service: "skiff.apps.v1.Deployments", ShortNames: []string{"dep"}}}},
		{GroupVersion: "apps/v1beta1", Resources: []*discoveryv1.APIResource{{Name: "deployments", Namespaced: true, Service: "skiff.apps.v1beta1.Deployments"}}},
	}}
	m := FromDiscovery(groups, res)
	k, err := m.ForResource("deployments")
	if err != nil || k.Version != "v1beta1" {
		t.Errorf("deployments resolve to %v (%v), want the preferred apps/v1beta1", k, err)
	}
	if k, err := m.ForResource("dep"); err != nil || k.Version != "v1" {
		t.Errorf("the server's short name: %v, %v", k, err)
	}
	if _, err := m.ForManifest("v1", "Pod"); err == nil || err.Error() != `no matches for kind "Pod" in version "v1"` {
		t.Errorf("a kind the server does not serve: %v", err)
	}
}
