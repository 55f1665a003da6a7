package manifest

import (
	"testing"

	"google.golang.org/protobuf/proto"

	corev1 "skiff.dev/proto/core/v1"
)

// Every map of quantities takes numbers, as kubectl does: a ResourceQuota's
// hard (pods: 10) and a LimitRange's limits were refused while a
// container's resources were not.
func TestEveryQuantityMapTakesNumbers(t *testing.T) {
	for _, tc := range []struct {
		src  string
		obj  proto.Message
		got  func(proto.Message) string
		want string
	}{
		{"spec:\n  hard: {pods: 10, requests.cpu: 2, requests.memory: 1Gi}\n", &corev1.ResourceQuota{},
			func(m proto.Message) string { return m.(*corev1.ResourceQuota).GetSpec().GetHard()["pods"] }, "10"},
		{"status:\n  used: {pods: 3}\n", &corev1.ResourceQuota{},
			func(m proto.Message) string { return m.(*corev1.ResourceQuota).GetStatus().GetUsed()["pods"] }, "3"},
		{"spec:\n  limits:\n  - type: Container\n    max: {cpu: 2}\n    min: {cpu: 0.1}\n    default: {cpu: 1}\n    defaultRequest: {cpu: 0.5}\n    maxLimitRequestRatio: {cpu: 4}\n", &corev1.LimitRange{},
			func(m proto.Message) string {
				l := m.(*corev1.LimitRange).GetSpec().GetLimits()[0]
				return l.GetMax()["cpu"] + " " + l.GetMin()["cpu"] + " " + l.GetDefault()["cpu"] + " " + l.GetDefaultRequest()["cpu"] + " " + l.GetMaxLimitRequestRatio()["cpu"]
			}, "2 0.1 1 0.5 4"},
	} {
		if err := Decode(parse(t, tc.src), tc.obj, DecodeOptions{}); err != nil {
			t.Errorf("%q: %v", tc.src, err)
			continue
		}
		if got := tc.got(tc.obj); got != tc.want {
			t.Errorf("%q decodes as %q, want %q", tc.src, got, tc.want)
		}
	}
}
