package integration

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	schedulingv1 "skiff.dev/proto/scheduling/v1"
	"skiff.dev/services/apiserver/apiservertest"
)

// TestSystemPriorityClasses: the apiserver creates system-node-critical
// and system-cluster-critical at start, admission on or off, and refuses
// other system- names and changes of their value.
func TestSystemPriorityClasses(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := testContext(t)
	pcs := client.PriorityClasses(s.Conn)
	for name, value := range map[string]int32{"system-node-critical": 2000001000, "system-cluster-critical": 2000000000} {
		pc, err := pcs.Get(ctx, "", name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if pc.GetValue() != value || pc.GetGlobalDefault() || pc.GetPreemptionPolicy() != "PreemptLowerPriority" {
			t.Errorf("%s: %v", name, pc)
		}
	}
	_, err := pcs.Create(ctx, &schedulingv1.PriorityClass{Metadata: &metav1.ObjectMeta{Name: "system-mine"}, Value: 10})
	wantRefused(t, err, codes.InvalidArgument, "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class")
	pc, err := pcs.Get(ctx, "", "system-node-critical")
	if err != nil {
		t.Fatal(err)
	}
	pc.Value = 1
	_, err = pcs.Update(ctx, pc)
	wantRefused(t, err, codes.InvalidArgument, "value: Forbidden: may not be changed in an update.")
}

// TestPriorityAdmission: the Priority plugin (on by default) sets a pod's
// priority and preemption policy from its class or the global default,
// refuses unknown classes and a priority the pod gives that differs from
// its class's, keeps priority on update, and allows one global default.
func TestPriorityAdmission(t *testing.T) {
	s := startAdmission(t)
	ctx := testContext(t)
	pcs, pods := client.PriorityClasses(s.Conn), client.Pods(s.Conn)
	never := "Never"
	for _, pc := range []*schedulingv1.PriorityClass{
		{Metadata: &metav1.ObjectMeta{Name: "high"}, Value: 1000},
		{Metadata: &metav1.ObjectMeta{Name: "batch"}, Value: -5, PreemptionPolicy: &never},
	} {
		if _, err := pcs.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
	}
	withClass := func(name, class string) *corev1.Pod {
		p := pod("default", name)
		p.Spec.PriorityClassName = class
		return p
	}

	type want struct {
		class    string
		priority int32
		policy   string
	}
	admitted := []struct {
		name string
		pod  *corev1.Pod
		want want
	}{
		{"no class and no default: priority 0", pod("default", "plain"), want{"", 0, "PreemptLowerPriority"}},
		{"a class", withClass("web", "high"), want{"high", 1000, "PreemptLowerPriority"}},
		{"a class that never preempts", withClass("cron", "batch"), want{"batch", -5, "Never"}},
		{"a system class", withClass("dns", "system-cluster-critical"), want{"system-cluster-critical", 2000000000, "PreemptLowerPriority"}},
		{"the class's own priority given", func() *corev1.Pod { p := withClass("same", "high"); p.Spec.Priority = proto.Int32(1000); return p }(),
			want{"high", 1000, "PreemptLowerPriority"}},
	}
	for _, c := range admitted {
		t.Run(c.name, func(t *testing.T) {
			got, err := pods.Create(ctx, c.pod)
			if err != nil {
				t.Fatal(err)
			}
			sp := got.GetSpec()
			if g := (want{sp.GetPriorityClassName(), sp.GetPriority(), sp.GetPreemptionPolicy()}); g != c.want {
				t.Errorf("got %+v, want %+v", g, c.want)
			}
		})
	}

	refused := []struct {
		name string
		pod  *corev1.Pod
		msg  string
	}{
		{"unknown class", withClass("lost", "foo"), `pods "lost" is forbidden: no PriorityClass with name foo was found`},
		{"another priority", func() *corev1.Pod { p := withClass("cheat", "high"); p.Spec.Priority = proto.Int32(5000); return p }(),
			`pods "cheat" is forbidden: the integer value of priority (5000) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name`},
		{"another preemption policy", func() *corev1.Pod {
			p := withClass("pushy", "batch")
			p.Spec.PreemptionPolicy = proto.String("PreemptLowerPriority")
			return p
		}(),
			`pods "pushy" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name`},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			_, err := pods.Create(ctx, c.pod)
			wantRefused(t, err, codes.PermissionDenied, c.msg)
		})
	}

	// One global default: the second is refused, making an existing class
	// the default too; the default's own update passes.
	def, err := pcs.Create(ctx, &schedulingv1.PriorityClass{Metadata: &metav1.ObjectMeta{Name: "normal"}, Value: 100, GlobalDefault: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pcs.Create(ctx, &schedulingv1.PriorityClass{Metadata: &metav1.ObjectMeta{Name: "other"}, Value: 7, GlobalDefault: true})
	wantRefused(t, err, codes.PermissionDenied, `priorityclasses "other" is forbidden: PriorityClass normal is already marked as default. Only one default can exist`)
	high, err := pcs.Get(ctx, "", "high")
	if err != nil {
		t.Fatal(err)
	}
	high.GlobalDefault = true
	_, err = pcs.Update(ctx, high)
	wantRefused(t, err, codes.PermissionDenied, "PriorityClass normal is already marked as default")
	def.Description = "the default"
	if _, err := pcs.Update(ctx, def); err != nil {
		t.Fatalf("updating the default itself: %v", err)
	}

	// A pod without a class gets the default's name, value and policy
	// (once the plugin's informer has seen it: retried until then).
	var got *corev1.Pod
	for i := 0; ctx.Err() == nil; i++ {
		if got, err = pods.Create(ctx, pod("default", fmt.Sprintf("defaulted-%d", i))); err != nil {
			t.Fatal(err)
		}
		if got.GetSpec().GetPriorityClassName() != "" {
			break
		}
	}
	if sp := got.GetSpec(); sp.GetPriorityClassName() != "normal" || sp.GetPriority() != 100 {
		t.Errorf("defaulted pod: class %q priority %d, want normal 100", sp.GetPriorityClassName(), sp.GetPriority())
	}

	// Updates keep the priority the plugin set.
	web, err := pods.Get(ctx, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	web.Metadata.Labels = map[string]string{"tier": "front"}
	web.Spec.Priority = proto.Int32(1)
	if _, err := pods.Update(ctx, web); err == nil {
		updated, _ := pods.Get(ctx, "default", "web")
		if updated.GetSpec().GetPriority() != 1000 {
			t.Errorf("update changed the priority to %d", updated.GetSpec().GetPriority())
		}
	}
}
