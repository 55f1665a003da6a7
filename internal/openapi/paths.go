package openapi

import (
	"fmt"
	"slices"

	"skiff.dev/internal/kinds"
)

// An operation is one verb on one path, as kube-apiserver documents it.
type operation struct {
	method      string // get, post, put, patch, delete
	id          string // "readCoreV1NamespacedPod"
	description string
	action      string // x-kubernetes-action: get, list, post, put, patch, delete, deletecollection
	gvk         gvk
	query       []param
	body        string // the request body's schema, "" for none; patchBody for PATCH
	bodyOK      bool   // the request body may be left out (DELETE's DeleteOptions)
	responses   []response
}

type response struct {
	code   string
	schema string // "" for a response without a body
	desc   string
}

// patchBody is the body of a PATCH: meta/v1 Patch, in every patch type.
const patchBody = "<patch>"

// A pathItem is one path with its path parameters and its operations.
type pathItem struct {
	path   string
	params []param
	ops    []operation
}

type param struct {
	name, in, typ, desc string
	required, unique    bool
}

var (
	nameParam      = param{name: "name", in: "path", typ: "string", required: true, unique: true, desc: "name of the resource"}
	namespaceParam = param{name: "namespace", in: "path", typ: "string", required: true, unique: true, desc: "object name and auth scope, such as for teams and projects"}
	prettyParam    = param{name: "pretty", in: "query", typ: "string", unique: true, desc: "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)."}

	dryRun          = param{name: "dryRun", in: "query", typ: "string", unique: true, desc: "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed"}
	fieldManager    = param{name: "fieldManager", in: "query", typ: "string", unique: true, desc: "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint."}
	fieldValidation = param{name: "fieldValidation", in: "query", typ: "string", unique: true, desc: "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered."}
	force           = param{name: "force", in: "query", typ: "boolean", unique: true, desc: "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests."}
	gracePeriod     = param{name: "gracePeriodSeconds", in: "query", typ: "integer", unique: true, desc: "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately."}
	propagation     = param{name: "propagationPolicy", in: "query", typ: "string", unique: true, desc: "Whether and how garbage collection will be performed. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground."}

	listParams = []param{
		{name: "allowWatchBookmarks", in: "query", typ: "boolean", unique: true, desc: "allowWatchBookmarks requests watch events with type \"BOOKMARK\"."},
		{name: "continue", in: "query", typ: "string", unique: true, desc: "The continue option should be set when retrieving more results from the server."},
		{name: "fieldSelector", in: "query", typ: "string", unique: true, desc: "A selector to restrict the list of returned objects by their fields. Defaults to everything."},
		{name: "labelSelector", in: "query", typ: "string", unique: true, desc: "A selector to restrict the list of returned objects by their labels. Defaults to everything."},
		{name: "limit", in: "query", typ: "integer", unique: true, desc: "limit is a maximum number of responses to return for a list call."},
		{name: "resourceVersion", in: "query", typ: "string", unique: true, desc: "resourceVersion sets a constraint on what resource versions a request may be served from."},
		{name: "resourceVersionMatch", in: "query", typ: "string", unique: true, desc: "resourceVersionMatch determines how resourceVersion is applied to list calls."},
		{name: "sendInitialEvents", in: "query", typ: "boolean", unique: true, desc: "`sendInitialEvents=true` may be set together with `watch=true`: the watch starts with synthetic events for the current state of the objects, then a bookmark."},
		{name: "timeoutSeconds", in: "query", typ: "integer", unique: true, desc: "Timeout for the list/watch call."},
		{name: "watch", in: "query", typ: "boolean", unique: true, desc: "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."},
	}
)

const statusSchema = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"

// kindPaths are the paths of a kind and of its subresources that have a
// schema (status, scale, ephemeralcontainers); schema is the kind's
// schema, list its list's, scale the Scale's (when it has a scale).
func kindPaths(k *kinds.Kind, schema, list, scale, deleteOptions string) []pathItem {
	g := gvk{k.Group, k.Version, k.Kind.Kind}
	gv := operationGroup(k.Group) + upperFirst(k.Version)
	prefix := "/" + docPath(k.Group, k.Version)
	kind := k.Kind.Kind
	ns, nsParams := "", []param{}
	if k.Namespaced {
		prefix += "/namespaces/{namespace}"
		ns, nsParams = "Namespaced", []param{namespaceParam}
	}
	collection := prefix + "/" + k.Resource
	item := collection + "/{name}"
	ok := func(s string) []response {
		return []response{{"200", s, "OK"}, {"401", "", "Unauthorized"}}
	}
	created := func(s string) []response {
		return []response{{"200", s, "OK"}, {"201", s, "Created"}, {"401", "", "Unauthorized"}}
	}
	write := []param{dryRun, fieldManager, fieldValidation}
	patch := []param{dryRun, fieldManager, fieldValidation, force}
	del := []param{dryRun, gracePeriod, propagation}

	items := []pathItem{
		{path: collection, params: append(slices.Clone(nsParams), prettyParam), ops: []operation{
			{method: "get", id: "list" + gv + ns + kind, action: "list", gvk: g, query: listParams, responses: ok(list),
				description: "list or watch objects of kind " + kind},
			{method: "post", id: "create" + gv + ns + kind, action: "post", gvk: g, query: write, body: schema,
				responses: append(created(schema), response{"202", schema, "Accepted"}), description: "create a " + kind},
			{method: "delete", id: "delete" + gv + "Collection" + ns + kind, action: "deletecollection", gvk: g,
				query: append(collectionParams(), del...), body: deleteOptions, bodyOK: true,
				responses: ok(statusSchema), description: "delete collection of " + kind},
		}},
		{path: item, params: append(append([]param{nameParam}, nsParams...), prettyParam), ops: []operation{
			{method: "get", id: "read" + gv + ns + kind, action: "get", gvk: g, responses: ok(schema),
				description: "read the specified " + kind},
			{method: "put", id: "replace" + gv + ns + kind, action: "put", gvk: g, query: write, body: schema,
				responses: created(schema), description: "replace the specified " + kind},
			{method: "patch", id: "patch" + gv + ns + kind, action: "patch", gvk: g, query: patch, body: patchBody,
				responses: created(schema), description: "partially update the specified " + kind},
			{method: "delete", id: "delete" + gv + ns + kind, action: "delete", gvk: g, query: del, body: deleteOptions, bodyOK: true,
				responses: append(ok(statusSchema), response{"202", statusSchema, "Accepted"}), description: "delete a " + kind},
		}},
	}
	if k.Namespaced {
		items = append(items, pathItem{path: "/" + docPath(k.Group, k.Version) + "/" + k.Resource, params: []param{prettyParam}, ops: []operation{
			{method: "get", id: "list" + gv + kind + "ForAllNamespaces", action: "list", gvk: g, query: listParams, responses: ok(list),
				description: "list or watch objects of kind " + kind},
		}})
	}
	for _, sub := range k.Subresources {
		subSchema, subGVK := schema, g
		switch sub {
		case "status", "ephemeralcontainers", "approval":
		case "scale":
			subSchema, subGVK = scale, gvk{"autoscaling", "v1", "Scale"}
		default:
			continue // binding, eviction, log, exec, attach, portforward, token: not yet documented
		}
		suffix := upperFirst(sub)
		items = append(items, pathItem{path: item + "/" + sub, params: append(append([]param{nameParam}, nsParams...), prettyParam), ops: []operation{
			{method: "get", id: "read" + gv + ns + kind + suffix, action: "get", gvk: subGVK, responses: ok(subSchema),
				description: fmt.Sprintf("read %s of the specified %s", sub, kind)},
			{method: "put", id: "replace" + gv + ns + kind + suffix, action: "put", gvk: subGVK, query: write, body: subSchema,
				responses: created(subSchema), description: fmt.Sprintf("replace %s of the specified %s", sub, kind)},
			{method: "patch", id: "patch" + gv + ns + kind + suffix, action: "patch", gvk: subGVK, query: patch, body: patchBody,
				responses: created(subSchema), description: fmt.Sprintf("partially update %s of the specified %s", sub, kind)},
		}})
	}
	return items
}

// collectionParams are the list parameters of a DELETE of a collection:
// those of a list but watching.
func collectionParams() []param {
	var out []param
	for _, p := range listParams {
		if p.name != "watch" && p.name != "allowWatchBookmarks" {
			out = append(out, p)
		}
	}
	return out
}

// Media types of requests and responses.
var (
	produces      = []string{"application/json", "application/yaml"}
	listProduces  = []string{"application/json", "application/yaml", "application/json;stream=watch"}
	patchConsumes = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"}
)

func (o operation) produces() []string {
	if o.action == "list" {
		return listProduces
	}
	return produces
}

func (o operation) consumes() []string {
	if o.body == patchBody {
		return patchConsumes
	}
	return []string{"*/*"}
}
