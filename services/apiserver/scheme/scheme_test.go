package scheme

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestParseGroupVersion(t *testing.T) {
	cases := []struct {
		in      string
		want    GroupVersion
		wantErr bool
	}{
		{in: "v1", want: GroupVersion{Version: "v1"}},
		{in: "apps/v1", want: GroupVersion{Group: "apps", Version: "v1"}},
		{in: "coordination.k8s.io/v1", want: GroupVersion{Group: "coordination.k8s.io", Version: "v1"}},
		{in: "", wantErr: true},
		{in: "apps/", wantErr: true},
		{in: "/v1", wantErr: true},
		{in: "a/b/c", wantErr: true},
	}
	for _, c := range cases {
		got, err := ParseGroupVersion(c.in)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("ParseGroupVersion(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.wantErr)
		}
		if err == nil && got.String() != c.in {
			t.Errorf("%q round-trips as %q", c.in, got.String())
		}
	}
}

func TestGroupsAndConversions(t *testing.T) {
	s := New()
	kind := func(group, version string) *Kind {
		return &Kind{GVK: GroupVersionKind{GroupVersion: GroupVersion{Group: group, Version: version}, Kind: "Thing"},
			New: func() proto.Message { return &wrapperspb.StringValue{} }}
	}
	s.AddKind(kind("apps", "v1"))
	s.AddKind(kind("", "v1"))
	s.AddKind(kind("apps", "v1beta1"))
	if got := fmt.Sprint(s.Groups()); got != "[{ [v1] v1} {apps [v1 v1beta1] v1}]" {
		t.Fatalf("groups: %s", got)
	}
	beta, v1 := kind("apps", "v1beta1").GVK, kind("apps", "v1").GVK
	s.AddConversion(beta, v1, func(in, out proto.Message) error {
		out.(*wrapperspb.StringValue).Value = "from beta: " + in.(*wrapperspb.StringValue).Value
		return nil
	})
	out, err := s.Convert(wrapperspb.String("x"), beta, v1)
	if err != nil || out.(*wrapperspb.StringValue).Value != "from beta: x" {
		t.Fatalf("convert: %v %v", out, err)
	}
	if _, err := s.Convert(wrapperspb.String("x"), v1, beta); err == nil {
		t.Fatal("conversion without a function succeeded")
	}
	same, err := s.Convert(wrapperspb.String("y"), v1, v1)
	if err != nil || same.(*wrapperspb.StringValue).Value != "y" {
		t.Fatalf("identity conversion: %v %v", same, err)
	}
}
