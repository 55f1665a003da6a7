package httpapi

import (
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	kubescheme "k8s.io/client-go/kubernetes/scheme"

	"skiff.dev/internal/apierrors"
)

// Kubernetes' protobuf bodies (application/vnd.kubernetes.protobuf), as
// client-go's typed clients send them when asked to (Helm's release
// storage, kubectl create): Kubernetes' own messages, whose field numbers
// are not Skiff's. A body is decoded into Kubernetes' Go type of its kind
// (k8s.io/api, through client-go's scheme) and read as that type's JSON:
// the same object, in the shape the rest of the HTTP API reads. Answers
// stay JSON, which those clients accept as well.

const kubeProtobuf = "application/vnd.kubernetes.protobuf"

var (
	kubeProtoOnce  sync.Once
	kubeProtoCodec *protobuf.Serializer
)

// kubeProtoToJSON is a Kubernetes protobuf body as JSON.
func kubeProtoToJSON(body []byte) ([]byte, error) {
	kubeProtoOnce.Do(func() {
		kubeProtoCodec = protobuf.NewSerializer(kubescheme.Scheme, kubescheme.Scheme)
	})
	obj, _, err := kubeProtoCodec.Decode(body, nil, nil)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded as %s: %v", kubeProtobuf, err))
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, apierrors.NewInternal(err)
	}
	return b, nil
}
