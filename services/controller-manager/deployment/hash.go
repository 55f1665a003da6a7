package deployment

import (
	"encoding/binary"
	"hash/fnv"
	"maps"
	"strconv"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/deployutil"
	corev1 "skiff.dev/proto/core/v1"
)

// PodTemplateHashLabel is the label that ties a ReplicaSet, its selector
// and its pods to one pod template of a Deployment.
const PodTemplateHashLabel = deployutil.PodTemplateHashLabel

// safeAlphabet is Kubernetes' rand.SafeEncodeString alphabet: no vowels
// (no words) and no look-alike characters (0/o, 1/l, 3/e).
const safeAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// PodTemplateHash is the value of the pod-template-hash label of the
// ReplicaSet a Deployment makes for template: FNV-32a of the template's
// deterministic protobuf encoding, with collisionCount (the Deployment's
// status.collisionCount, when set) mixed in, its decimal digits mapped to
// the safe alphabet as Kubernetes' ComputeHash does. The same template
// gives the same hash in every process built from the same API types.
func PodTemplateHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(template)
	if err != nil {
		// Only invalid UTF-8 in a string fails; the apiserver stores none.
		// Hash the text form rather than give up.
		b = []byte(template.String())
	}
	h.Write(b)
	if collisionCount != nil {
		buf := make([]byte, 8)
		binary.LittleEndian.PutUint32(buf, uint32(*collisionCount))
		h.Write(buf)
	}
	return safeEncode(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// safeEncode maps each byte of s into the safe alphabet.
func safeEncode(s string) string {
	out := make([]byte, len(s))
	for i := range len(s) {
		out[i] = safeAlphabet[int(s[i])%len(safeAlphabet)]
	}
	return string(out)
}

// EqualIgnoreHash reports whether two pod templates are the same but for
// the pod-template-hash label: whether a ReplicaSet runs a Deployment's
// template.
func EqualIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	return proto.Equal(deployutil.WithoutHash(a), deployutil.WithoutHash(b))
}

// withLabel returns a copy of m with k=v added.
func withLabel(m map[string]string, k, v string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	out[k] = v
	return out
}
