package discoverydoc

// nonKinds are the resources served that are no kind (internal/kinds): the
// access and identity reviews (services/apiserver/httpapi/reviews.go),
// create-only and never stored, so without a storage version hash, as
// kube-apiserver lists them. kubectl auth can-i and auth whoami look for
// them in discovery before asking.
var nonKinds = []struct {
	group, version string
	resource
}{
	{"authentication.k8s.io", "v1", review("selfsubjectreviews", "SelfSubjectReview")},
	{"authorization.k8s.io", "v1", review("selfsubjectaccessreviews", "SelfSubjectAccessReview")},
	{"authorization.k8s.io", "v1", review("selfsubjectrulesreviews", "SelfSubjectRulesReview")},
	{"authorization.k8s.io", "v1", review("subjectaccessreviews", "SubjectAccessReview")},
	{"authorization.k8s.io", "v1", namespaced(review("localsubjectaccessreviews", "LocalSubjectAccessReview"))},
}

func namespaced(r resource) resource {
	r.namespaced = true
	return r
}

func review(name, kind string) resource {
	return resource{name: name, singular: name[:len(name)-1], kind: kind, verbs: []string{"create"}}
}
