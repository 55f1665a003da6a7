package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"skiff.dev/internal/client"
	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/controller-manager/daemonset"
	"skiff.dev/services/controller-manager/manager/managertest"
	"skiff.dev/services/controller-manager/simnode"
	"skiff.dev/services/controller-manager/statefulset"
)

const agentDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  annotations:
    kubernetes.io/change-cause: first
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - name: agent
        image: agent:v1
`

// TestRolloutDaemonSet: status, history (with change causes and one
// revision's template) and undo of a DaemonSet run by the real DaemonSet
// controller on two simulated nodes.
func TestRolloutDaemonSet(t *testing.T) {
	env := managertest.Start(t)
	env.SimNode(simnode.Options{})
	for _, n := range []string{"n1", "n2"} {
		if _, err := client.Nodes(env.Conn).Create(env.Ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	dc := daemonset.New(env.Manager, daemonset.Options{})
	env.StartInformers()
	env.GoErr(dc.Run)

	c := newCLIFor(t, env.Server.Addr(), "default", time.Now())
	c.stdin = agentDaemonSet
	c.ok("apply", "-f", "-")
	out := c.ok("rollout", "status", "daemonset/agent", "--timeout=30s")
	if !strings.HasSuffix(out, "daemon set \"agent\" successfully rolled out\n") {
		t.Fatalf("rollout status:\n%s", out)
	}

	c.stdin = strings.NewReplacer("agent:v1", "agent:v2", "first", "second").Replace(agentDaemonSet)
	c.ok("apply", "-f", "-")
	out = c.ok("rollout", "status", "ds/agent", "--timeout=30s")
	if !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status after the change:\n%s", out)
	}
	out = c.ok("rollout", "history", "daemonset/agent")
	if want := "daemonset.apps/agent\nREVISION   CHANGE-CAUSE\n1          first\n2          second\n\n"; out != want {
		t.Errorf("history:\n%s\nwant:\n%s", out, want)
	}
	if out := c.ok("rollout", "history", "daemonset/agent", "--revision=1"); !strings.Contains(out, "agent:v1") || !strings.HasPrefix(out, "daemonset.apps/agent with revision #1\n") {
		t.Errorf("history --revision=1:\n%s", out)
	}

	if out := c.ok("rollout", "undo", "daemonset/agent"); out != "daemonset.apps/agent rolled back\n" {
		t.Errorf("undo: %q", out)
	}
	ds, err := client.DaemonSets(env.Conn).Get(context.Background(), "default", "agent")
	if err != nil {
		t.Fatal(err)
	}
	if img := ds.GetSpec().GetTemplate().GetSpec().GetContainers()[0].GetImage(); img != "agent:v1" {
		t.Errorf("after undo the image is %s", img)
	}
	c.ok("rollout", "status", "daemonset/agent", "--timeout=30s")
	out = c.ok("rollout", "history", "daemonset/agent")
	if !strings.Contains(out, "2          second\n3          first\n") {
		t.Errorf("history after undo (revision 1 renumbered to 3):\n%s", out)
	}
	if out := c.ok("rollout", "undo", "daemonset/agent", "--to-revision=3"); !strings.Contains(out, "skipped rollback (current template already matches revision 3)") {
		t.Errorf("undo to the current revision: %q", out)
	}
	if errOut := c.fails("rollout", "undo", "daemonset/agent", "--to-revision=9"); !strings.Contains(errOut, "unable to find specified revision 9 in history") {
		t.Errorf("undo to a missing revision: %q", errOut)
	}
}

const dbStatefulSet = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  annotations:
    kubernetes.io/change-cause: first
spec:
  replicas: 2
  serviceName: db
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: db:v1
`

// TestRolloutStatefulSet: status, history and undo of a StatefulSet run
// by the real StatefulSet controller on a simulated node: the undo brings
// the first template back as a new revision, rolled out to every pod.
func TestRolloutStatefulSet(t *testing.T) {
	env := managertest.Start(t)
	env.SimNode(simnode.Options{})
	if _, err := client.Nodes(env.Conn).Create(env.Ctx, &corev1.Node{Metadata: &metav1.ObjectMeta{Name: "n1"}}); err != nil {
		t.Fatal(err)
	}
	sc := statefulset.New(env.Manager, statefulset.Options{})
	env.StartInformers()
	env.GoErr(sc.Run)

	c := newCLIFor(t, env.Server.Addr(), "default", time.Now())
	c.stdin = dbStatefulSet
	c.ok("apply", "-f", "-")
	// The default strategy has rollingUpdate.partition 0: kubectl says
	// "partitioned" then too.
	if out := c.ok("rollout", "status", "statefulset/db", "--timeout=30s"); !strings.HasSuffix(out, "partitioned roll out complete: 2 new pods have been updated...\n") {
		t.Fatalf("rollout status:\n%s", out)
	}
	c.stdin = strings.NewReplacer("db:v1", "db:v2", "first", "second").Replace(dbStatefulSet)
	c.ok("apply", "-f", "-")
	c.ok("rollout", "status", "sts/db", "--timeout=30s")
	out := c.ok("rollout", "history", "statefulset/db")
	if want := "statefulset.apps/db\nREVISION   CHANGE-CAUSE\n1          first\n2          second\n\n"; out != want {
		t.Errorf("history:\n%s\nwant:\n%s", out, want)
	}
	if out := c.ok("rollout", "undo", "statefulset/db"); out != "statefulset.apps/db rolled back\n" {
		t.Errorf("undo: %q", out)
	}
	c.ok("rollout", "status", "statefulset/db", "--timeout=30s")
	for _, name := range []string{"db-0", "db-1"} {
		p, err := client.Pods(env.Conn).Get(env.Ctx, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		if img := p.GetSpec().GetContainers()[0].GetImage(); img != "db:v1" {
			t.Errorf("after undo %s runs %s, want db:v1", name, img)
		}
	}
	if out := c.ok("rollout", "history", "statefulset/db"); !strings.Contains(out, "2          second\n3          first\n") {
		t.Errorf("history after undo (revision 1 renumbered to 3):\n%s", out)
	}
}

func TestStatefulSetRolloutStatus(t *testing.T) {
	sts := func(gen, observed int64, replicas int32, partition *int32, st *appsv1.StatefulSetStatus) *appsv1.StatefulSet {
		st.ObservedGeneration = observed
		s := &appsv1.StatefulSet{Metadata: &metav1.ObjectMeta{Name: "db", Generation: gen},
			Spec:   &appsv1.StatefulSetSpec{Replicas: &replicas, UpdateStrategy: &appsv1.StatefulSetUpdateStrategy{Type: "RollingUpdate"}},
			Status: st}
		if partition != nil {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: partition}
		}
		return s
	}
	p := func(i int32) *int32 { return &i }
	cases := []struct {
		name string
		sts  *appsv1.StatefulSet
		msg  string
		done bool
	}{
		{"not observed", sts(2, 1, 3, nil, &appsv1.StatefulSetStatus{}), "Waiting for statefulset spec update to be observed...", false},
		{"not ready", sts(1, 1, 3, nil, &appsv1.StatefulSetStatus{ReadyReplicas: 1}), "Waiting for 2 pods to be ready...", false},
		{"partition pending", sts(1, 1, 3, p(1), &appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 1}), "Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated...", false},
		{"partition done", sts(1, 1, 3, p(1), &appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 2}), "partitioned roll out complete: 2 new pods have been updated...", true},
		{"revisions differ", sts(1, 1, 3, nil, &appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 2, CurrentRevision: "db-a", UpdateRevision: "db-b"}), "waiting for statefulset rolling update to complete 2 pods at revision db-b...", false},
		{"complete", sts(1, 1, 3, nil, &appsv1.StatefulSetStatus{ReadyReplicas: 3, CurrentReplicas: 3, CurrentRevision: "db-b", UpdateRevision: "db-b"}), "statefulset rolling update complete 3 pods at revision db-b...", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg, done, err := StatefulSetRolloutStatus(tc.sts)
			if err != nil || msg != tc.msg || done != tc.done {
				t.Errorf("got %q %v %v, want %q %v", msg, done, err, tc.msg, tc.done)
			}
		})
	}
	onDelete := sts(1, 1, 3, nil, &appsv1.StatefulSetStatus{})
	onDelete.Spec.UpdateStrategy.Type = "OnDelete"
	if _, _, err := StatefulSetRolloutStatus(onDelete); err == nil {
		t.Error("OnDelete: no error")
	}
}
