package integration

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/workqueue"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/app"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/simnode"
)

// TestDefaultControllersCollectPodsOfADeletedNode: the controllers that run
// by default, on a fake clock, remove the pods of a Node that was deleted,
// running and terminating ones alike (nobody else would: their agent went
// with the node). The test moves the clock 5 s at a time while it waits;
// Kubernetes' pod garbage collector takes a 40 s quarantine, then a look at
// the API, within its 20 s period.
func TestDefaultControllersCollectPodsOfADeletedNode(t *testing.T) {
	env := managertest.Start(t)
	clock := workqueue.NewFakeClock(time.Now())
	env.Manager.Clock = clock
	o, err := app.ParseFlags(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range app.Defaults() {
		env.GoErr(app.Builders()[name](env.Manager, &o.Manager).Run)
	}
	env.StartInformers()

	nodes := client.Nodes(env.Conn)
	if _, err := nodes.Create(env.Ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "node-a"}}); err != nil {
		t.Fatal(err)
	}
	pods := client.Pods(env.Conn)
	for _, name := range []string{"running", "terminating"} {
		p, err := pods.Create(env.Ctx, &corev1.Pod{
			Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: &corev1.PodSpec{
				NodeName:                      "node-a",
				Containers:                    []*corev1.Container{{Name: "c", Image: "busybox"}},
				TerminationGracePeriodSeconds: proto.Int64(30),
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := simnode.MarkReady(env.Ctx, env.Conn, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pods.Delete(env.Ctx, &metav1.DeleteRequest{Namespace: "default", Name: "terminating"}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.Delete(env.Ctx, &metav1.DeleteRequest{Name: "node-a"}); err != nil {
		t.Fatal(err)
	}

	start := clock.Now()
	env.Await(15*time.Second, "the pods of the deleted node-a removed", func() (bool, string) {
		left := env.Pods().Store().List()
		if len(left) == 0 {
			return true, ""
		}
		clock.Step(5 * time.Second)
		names := make([]string, 0, len(left))
		for _, p := range left {
			names = append(names, p.GetMetadata().GetName())
		}
		return false, managertest.Explain("%v after node-a's deletion, pods %v still there", clock.Now().Sub(start), names)
	})
	took := clock.Now().Sub(start)
	t.Logf("the pods of the deleted node went %v (on the fake clock) after its deletion", took)
	if took > 90*time.Second {
		t.Errorf("the pods of the deleted node went %v after its deletion, want within a quarantine and two periods", took)
	}
}
