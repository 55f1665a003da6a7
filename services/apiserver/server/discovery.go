package server

import (
	"context"
	"fmt"
	"runtime"

	"skiff.dev/internal/apierrors"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	"skiff.dev/services/apiserver/scheme"
)

// Discovery answers what the server serves, from the scheme.
type Discovery struct {
	Scheme     *scheme.Scheme
	GitVersion string
	GitCommit  string
}

func (d *Discovery) Groups(context.Context, *discoveryv1.GroupsRequest) (*discoveryv1.APIGroupList, error) {
	out := &discoveryv1.APIGroupList{}
	for _, g := range d.Scheme.Groups() {
		ag := &discoveryv1.APIGroup{Name: g.Name}
		for _, v := range g.Versions {
			gv := &discoveryv1.GroupVersionForDiscovery{GroupVersion: scheme.GroupVersion{Group: g.Name, Version: v}.String(), Version: v}
			ag.Versions = append(ag.Versions, gv)
			if v == g.Preferred {
				ag.PreferredVersion = gv
			}
		}
		out.Groups = append(out.Groups, ag)
	}
	return out, nil
}

func (d *Discovery) Resources(_ context.Context, req *discoveryv1.ResourcesRequest) (*discoveryv1.APIResourceList, error) {
	out := &discoveryv1.APIResourceList{}
	byGV := map[string]*discoveryv1.APIResourceGroup{}
	for _, k := range d.Scheme.Kinds() {
		gv := k.GVK.GroupVersion.String()
		if req.GetGroupVersion() != "" && req.GetGroupVersion() != gv {
			continue
		}
		g, ok := byGV[gv]
		if !ok {
			g = &discoveryv1.APIResourceGroup{GroupVersion: gv}
			byGV[gv] = g
			out.Groups = append(out.Groups, g)
		}
		g.Resources = append(g.Resources, &discoveryv1.APIResource{
			Name:           k.Resource,
			SingularName:   k.Singular,
			Namespaced:     k.Namespaced,
			Kind:           k.GVK.Kind,
			Verbs:          k.Verbs,
			ShortNames:     k.ShortNames,
			Service:        k.Service,
			StorageVersion: k.Storage.String(),
			Subresources:   k.Subresources,
			FieldSelectors: k.FieldSelectors,
		})
	}
	if req.GetGroupVersion() != "" && len(out.Groups) == 0 {
		return nil, apierrors.NewNotFound("groupversions", req.GetGroupVersion())
	}
	return out, nil
}

func (d *Discovery) Version(context.Context, *discoveryv1.VersionRequest) (*discoveryv1.VersionInfo, error) {
	return &discoveryv1.VersionInfo{
		GitVersion: d.GitVersion,
		GitCommit:  d.GitCommit,
		GoVersion:  runtime.Version(),
		Platform:   fmt.Sprintf("%s/%s", runtime.GOOS, runtime.GOARCH),
	}, nil
}
