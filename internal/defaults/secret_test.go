package defaults_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/defaults"
	corev1 "skiff.dev/proto/core/v1"
)

func TestSecret(t *testing.T) {
	s := &corev1.Secret{
		Data:       map[string][]byte{"a": []byte("from data"), "b": []byte("kept")},
		StringData: map[string]string{"a": "from stringData", "c": "new"},
	}
	defaults.Secret(s)
	want := &corev1.Secret{
		Type: "Opaque",
		Data: map[string][]byte{"a": []byte("from stringData"), "b": []byte("kept"), "c": []byte("new")},
	}
	if !proto.Equal(s, want) {
		t.Fatalf("got %v\nwant %v", s, want)
	}
	// stringData alone makes data; a type is kept; twice is once.
	s = &corev1.Secret{Type: "kubernetes.io/tls", StringData: map[string]string{"tls.crt": "c"}}
	defaults.Secret(s)
	once := proto.Clone(s)
	defaults.Secret(s)
	if !proto.Equal(s, once) || s.Type != "kubernetes.io/tls" || string(s.Data["tls.crt"]) != "c" || s.StringData != nil {
		t.Fatalf("got %v", s)
	}
	defaults.Secret(nil)
}
