package integration

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	appsv1 "skiff.dev/proto/apps/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/controllerutil"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/simnode"
)

// TestCascadingDeleteOfADeployment deletes a running Deployment with each
// propagation policy, through the whole controller-manager: its
// ReplicaSet and pods go with it (Background, Foreground), or stay without
// an owner (Orphan).
func TestCascadingDeleteOfADeployment(t *testing.T) {
	env := managertest.Start(t)
	env.SimNode(simnode.Options{})
	env.StartInformers()
	startManager(t, env, "cm", false)
	deps := client.Deployments(env.Conn)
	rsStore := informer.For(env.Manager.Informers, client.ReplicaSets(env.Conn)).Store()
	depStore := informer.For(env.Manager.Informers, deps).Store()

	for _, policy := range []string{"Background", "Foreground", "Orphan"} {
		t.Run(policy, func(t *testing.T) {
			name := "web-" + map[string]string{"Background": "bg", "Foreground": "fg", "Orphan": "orphan"}[policy]
			labels := map[string]string{"app": name}
			tmpl := webTemplate("demo:v1")
			tmpl.Metadata.Labels = labels
			d, err := deps.Create(env.Ctx, &appsv1.Deployment{
				Metadata: &metav1.ObjectMeta{Namespace: "default", Name: name},
				Spec: &appsv1.DeploymentSpec{
					Replicas: proto.Int32(3),
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: tmpl,
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			uid := d.GetMetadata().GetUid()
			var rsUID string
			env.Await(20*time.Second, "3 available pods", func() (bool, string) {
				cur, _ := depStore.GetByName("default", name)
				rss := rsStore.ByOwner(uid)
				if len(rss) == 1 {
					rsUID = rss[0].GetMetadata().GetUid()
				}
				return cur.GetStatus().GetAvailableReplicas() == 3 && len(rss) == 1, fmt.Sprintf("status %v, %d replicasets", cur.GetStatus(), len(rss))
			})
			if _, err := deps.Delete(env.Ctx, &metav1.DeleteRequest{Namespace: "default", Name: name, PropagationPolicy: policy}); err != nil {
				t.Fatal(err)
			}
			env.Await(20*time.Second, "the deletion to finish", func() (bool, string) {
				_, depLeft := depStore.GetByName("default", name)
				rss := rsStore.ByOwner(uid)
				pods := 0
				owned := 0
				for _, p := range env.Pods().Store().ByIndex(informer.IndexLabel, "app="+name) {
					if controllerutil.IsPodActive(p) {
						pods++
						if controllerutil.ControllerOf(p.GetMetadata()).GetUid() == rsUID {
							owned++
						}
					}
				}
				orphanRS := 0
				for _, rs := range rsStore.ByNamespace("default") {
					if rs.GetMetadata().GetUid() == rsUID && len(rs.GetMetadata().GetOwnerReferences()) == 0 {
						orphanRS++
					}
				}
				why := fmt.Sprintf("deployment left %v, %d replicasets owned by it, %d orphaned replicasets, %d pods (%d of the replicaset)", depLeft, len(rss), orphanRS, pods, owned)
				if policy == "Orphan" {
					return !depLeft && orphanRS == 1 && owned == 3, why
				}
				return !depLeft && len(rss) == 0 && pods == 0, why
			})
		})
	}
}
