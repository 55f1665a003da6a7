package patch

import (
	"fmt"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// maxJSONPatchOperations is kube-apiserver's limit on the operations of
// one JSON patch.
const maxJSONPatchOperations = 10000

// jsonPatch applies an RFC 6902 patch, as kube-apiserver's jsonPatcher:
// a patch that does not decode is a 400, one that does not apply (a
// failed test, a path that is not there) a 422 whose message, as
// Kubernetes', does not say why.
func jsonPatch(current, patch []byte) ([]byte, error) {
	ops, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, badRequest(err.Error())
	}
	if len(ops) > maxJSONPatchOperations {
		return nil, fromStatus(kerrors.NewRequestEntityTooLargeError(
			fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(ops))).ErrStatus)
	}
	patched, err := ops.Apply(current)
	if err != nil {
		return nil, fromStatus(kerrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false).ErrStatus)
	}
	return patched, nil
}

// mergePatch applies an RFC 7386 merge patch: the patch's fields replace
// the object's, null deletes, lists are replaced whole.
func mergePatch(current, patch []byte) ([]byte, error) {
	patched, err := jsonpatch.MergePatch(current, patch)
	if err == jsonpatch.ErrBadJSONPatch {
		return nil, badRequest(err.Error())
	}
	if err != nil {
		return nil, fromError(err)
	}
	return patched, nil
}
