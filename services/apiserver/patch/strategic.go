package patch

import (
	"encoding/json"
	"net/http"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	kjson "sigs.k8s.io/json"
)

// strategicMerge applies a strategic merge patch, as kube-apiserver's
// smpPatcher, with the patch strategies and merge keys of the kind's
// OpenAPI schema where kube-apiserver reads the Go struct tags of its
// types: lists of a merge strategy merge their elements by merge key
// (containers by name, ports by containerPort), the others are replaced,
// and the patch's directives ($patch: delete/replace/merge, $retainKeys,
// $deleteFromPrimitiveList, $setElementOrder) do what Kubernetes' do.
func (p *Patcher) strategicMerge(gvk schema.GroupVersionKind, current, patch []byte) ([]byte, error) {
	root, err := p.models.root(gvk)
	if err != nil {
		return nil, err
	}
	patchMap := map[string]any{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(patch, &patchMap); err != nil {
		return nil, badRequest(err.Error())
	}
	currentMap := map[string]any{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(current, &currentMap); err != nil {
		return nil, fromError(err)
	}
	lookup := strategicpatch.PatchMetaFromOpenAPIV3{SchemaList: p.models.schemas, Schema: root}
	patched, err := strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(currentMap, patchMap, lookup)
	if err != nil {
		return nil, strategicMergeError(err)
	}
	out, err := json.Marshal(patched)
	if err != nil {
		return nil, fromError(err)
	}
	return out, nil
}

// strategicMergeError is kube-apiserver's interpretStrategicMergePatchError.
func strategicMergeError(err error) error {
	switch err {
	case mergepatch.ErrBadJSONDoc, mergepatch.ErrBadPatchFormatForPrimitiveList, mergepatch.ErrBadPatchFormatForRetainKeys,
		mergepatch.ErrBadPatchFormatForSetElementOrderList, mergepatch.ErrUnsupportedStrategicMergePatchFormat:
		return badRequest(err.Error())
	case mergepatch.ErrNoListOfLists, mergepatch.ErrPatchContentNotMatchRetainKeys:
		return fromStatus(kerrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false).ErrStatus)
	}
	return fromError(err)
}
