package validation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"skiff.dev/internal/defaults"
	"skiff.dev/internal/field"
	"skiff.dev/internal/validation"
	appsv1 "skiff.dev/proto/apps/v1"
	appsv1beta1 "skiff.dev/proto/apps/v1beta1"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
)

// The fuzz tests feed arbitrary wire bytes through the apiserver's
// pipeline: decode (errors ignored: a partly decoded message is still a
// message), default, validate (create and update). Nothing may panic,
// defaulting must be idempotent, validation must not modify its input, and
// every error must name a field.

func seed(f *testing.F, msgs ...proto.Message) {
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, b)
	}
	f.Add([]byte{}, []byte{})
}

func FuzzValidatePod(f *testing.F) {
	broken := nginxPod()
	broken.Spec.Containers[0].Resources.Limits["cpu"] = "1e99999"
	broken.Spec.Containers[0].LivenessProbe.TcpSocket = &corev1.TCPSocketAction{}
	seed(f, nginxPod(), broken, &corev1.Pod{Spec: &corev1.PodSpec{Containers: []*corev1.Container{{}}}})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		newP, oldP := &corev1.Pod{}, &corev1.Pod{}
		_ = proto.Unmarshal(a, newP)
		_ = proto.Unmarshal(b, oldP)
		checkErrors(t, validation.Pod(newP)) // undefaulted input too
		idempotent(t, newP, func() { defaults.Pod(newP) })
		defaults.Pod(oldP)
		pure(t, newP, func() field.ErrorList { return validation.Pod(newP) })
		pure(t, newP, func() field.ErrorList { return validation.PodUpdate(newP, oldP) })
		checkErrors(t, validation.PodSpec(newP.Spec, field.NewPath("spec")))
	})
}

func FuzzValidateDeployment(f *testing.F) {
	seed(f, nginxDeployment(), &appsv1.Deployment{Spec: &appsv1.DeploymentSpec{Strategy: &appsv1.DeploymentStrategy{Type: "Recreate"}}})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		newD, oldD := &appsv1.Deployment{}, &appsv1.Deployment{}
		_ = proto.Unmarshal(a, newD)
		_ = proto.Unmarshal(b, oldD)
		checkErrors(t, validation.Deployment(newD))
		idempotent(t, newD, func() { defaults.Deployment(newD) })
		defaults.Deployment(oldD)
		pure(t, newD, func() field.ErrorList { return validation.Deployment(newD) })
		pure(t, newD, func() field.ErrorList { return validation.DeploymentUpdate(newD, oldD) })

		// The same bytes as the older version, which shares most field numbers.
		beta := &appsv1beta1.Deployment{}
		_ = proto.Unmarshal(a, beta)
		idempotent(t, beta, func() { defaults.DeploymentV1beta1(beta) })

		rs, oldRS := &appsv1.ReplicaSet{}, &appsv1.ReplicaSet{}
		_ = proto.Unmarshal(a, rs)
		_ = proto.Unmarshal(b, oldRS)
		idempotent(t, rs, func() { defaults.ReplicaSet(rs) })
		pure(t, rs, func() field.ErrorList { return validation.ReplicaSet(rs) })
		pure(t, rs, func() field.ErrorList { return validation.ReplicaSetUpdate(rs, oldRS) })
	})
}

// FuzzValidateOtherKinds decodes the same bytes as each remaining kind.
func FuzzValidateOtherKinds(f *testing.F) {
	seed(f, validNode(), validEvent(), validConfigMap())
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ns, oldNS := &corev1.Namespace{}, &corev1.Namespace{}
		_, _ = proto.Unmarshal(a, ns), proto.Unmarshal(b, oldNS)
		idempotent(t, ns, func() { defaults.Namespace(ns) })
		pure(t, ns, func() field.ErrorList { return validation.NamespaceUpdate(ns, oldNS) })

		n, oldN := &corev1.Node{}, &corev1.Node{}
		_, _ = proto.Unmarshal(a, n), proto.Unmarshal(b, oldN)
		idempotent(t, n, func() { defaults.Node(n) })
		pure(t, n, func() field.ErrorList { return validation.NodeUpdate(n, oldN) })

		e, oldE := &corev1.Event{}, &corev1.Event{}
		_, _ = proto.Unmarshal(a, e), proto.Unmarshal(b, oldE)
		idempotent(t, e, func() { defaults.Event(e) })
		pure(t, e, func() field.ErrorList { return validation.EventUpdate(e, oldE) })

		cm, oldCM := &corev1.ConfigMap{}, &corev1.ConfigMap{}
		_, _ = proto.Unmarshal(a, cm), proto.Unmarshal(b, oldCM)
		pure(t, cm, func() field.ErrorList { return validation.ConfigMapUpdate(cm, oldCM) })

		l, oldL := &coordinationv1.Lease{}, &coordinationv1.Lease{}
		_, _ = proto.Unmarshal(a, l), proto.Unmarshal(b, oldL)
		pure(t, l, func() field.ErrorList { return validation.LeaseUpdate(l, oldL) })
	})
}

func idempotent(t *testing.T, m proto.Message, defaultFn func()) {
	t.Helper()
	defaultFn()
	once := proto.Clone(m)
	defaultFn()
	if !proto.Equal(once, m) {
		t.Fatalf("defaulting is not idempotent:\nonce:  %v\ntwice: %v", once, m)
	}
}

func pure(t *testing.T, m proto.Message, validate func() field.ErrorList) {
	t.Helper()
	before := proto.Clone(m)
	checkErrors(t, validate())
	if !proto.Equal(before, m) {
		t.Fatalf("validation modified its input")
	}
}

func checkErrors(t *testing.T, errs field.ErrorList) {
	t.Helper()
	for _, e := range errs {
		if e == nil || e.Field == "" || e.Field == "<nil>" {
			t.Fatalf("error without a field: %v", e)
		}
		_ = e.Error()
	}
}
