package openapi

// fieldMarker is what Kubernetes' source says of a field beyond its Go
// type and tags, in the markers openapi-gen turns into the extensions of
// Kubernetes' OpenAPI documents (markers.gen.go holds them). They tell
// server-side apply how a field merges and who owns what: a list is
// atomic (replaced and owned whole), a set, or a map of elements keyed by
// listMapKeys; a struct or map is atomic or granular; a key missing from
// an element takes its default.
type fieldMarker struct {
	listType    string   // +listType: "atomic", "set" or "map"
	listMapKeys []string // +listMapKey: a map list's keys, in order
	mapType     string   // +mapType (a map) or +structType (a struct): "atomic" or "granular"
	def         string   // the default, as JSON: +default, or the zero value of a scalar that is not omitempty
}

func (m fieldMarker) empty() bool {
	return m.listType == "" && len(m.listMapKeys) == 0 && m.mapType == "" && m.def == ""
}
