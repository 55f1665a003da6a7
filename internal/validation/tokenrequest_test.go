package validation

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
)

func TestTokenRequest(t *testing.T) {
	for _, c := range []struct {
		name string
		spec *corev1.TokenRequestSpec
		want []string
	}{
		{"defaults", &corev1.TokenRequestSpec{}, nil},
		{"10 minutes", &corev1.TokenRequestSpec{ExpirationSeconds: proto.Int64(600)}, nil},
		{"under 10 minutes", &corev1.TokenRequestSpec{ExpirationSeconds: proto.Int64(599)},
			[]string{"spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"}},
		{"over 2^32 s", &corev1.TokenRequestSpec{ExpirationSeconds: proto.Int64(1<<32 + 1)},
			[]string{"spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds"}},
		{"bound object without a name", &corev1.TokenRequestSpec{BoundObjectRef: &corev1.BoundObjectReference{Kind: "Pod", ApiVersion: "v1"}},
			[]string{"spec.boundObjectRef.name: Required value"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, e := range TokenRequest(&corev1.TokenRequest{Spec: c.spec}) {
				got = append(got, e.Error())
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("errors %q, want %q", got, c.want)
			}
		})
	}
}
