package printers

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"skiff.dev/internal/object"
	admissionregistrationv1 "skiff.dev/proto/admissionregistration/v1"
	appsv1 "skiff.dev/proto/apps/v1"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var now = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(now.Add(-d)) }

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (run with -update to accept):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-5 * time.Second:               "<invalid>",
		-time.Second / 2:               "0s",
		5 * time.Second:                "5s",
		119 * time.Second:              "119s",
		2 * time.Minute:                "2m",
		3*time.Minute + 20*time.Second: "3m20s",
		15 * time.Minute:               "15m",
		3*time.Hour + 20*time.Minute:   "3h20m",
		5 * time.Hour:                  "5h",
		10 * time.Hour:                 "10h",
		53 * time.Hour:                 "2d5h",
		72 * time.Hour:                 "3d",
		30 * 24 * time.Hour:            "30d",
		(365*2 + 100) * 24 * time.Hour: "2y100d",
		(365 * 9) * 24 * time.Hour:     "9y",
	} {
		if got := HumanDuration(d); got != want {
			t.Errorf("HumanDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func running(name string, ready bool, restarts int32) *corev1.ContainerStatus {
	cs := &corev1.ContainerStatus{Name: name, Ready: ready, RestartCount: restarts,
		State: &corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Hour)}}}
	if restarts > 0 {
		cs.LastState = &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(10 * time.Minute)}}
	}
	return cs
}

func pod(name string, age time.Duration, fn func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		Metadata: &metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(age), Labels: map[string]string{"app": "web"}},
		Spec:     &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web", Image: "nginx"}}},
		Status:   &corev1.PodStatus{Phase: "Pending"},
	}
	if fn != nil {
		fn(p)
	}
	return p
}

func pods() []object.Object {
	return []object.Object{
		pod("pending", 5*time.Second, nil),
		pod("running", 3*time.Hour, func(p *corev1.Pod) {
			p.Spec.NodeName = "node-1"
			p.Status = &corev1.PodStatus{Phase: "Running", PodIp: "10.0.0.5", ContainerStatuses: []*corev1.ContainerStatus{running("web", true, 0)}}
		}),
		pod("two-containers", 26*time.Hour, func(p *corev1.Pod) {
			p.Spec.NodeName = "node-2"
			p.Spec.Containers = append(p.Spec.Containers, &corev1.Container{Name: "sidecar", Image: "envoy"})
			p.Status = &corev1.PodStatus{Phase: "Running", PodIp: "10.0.0.6", ContainerStatuses: []*corev1.ContainerStatus{running("web", true, 3), running("sidecar", false, 0)}}
		}),
		pod("crashing", 10*time.Minute, func(p *corev1.Pod) {
			p.Status = &corev1.PodStatus{Phase: "Running", ContainerStatuses: []*corev1.ContainerStatus{{Name: "web", RestartCount: 4,
				State:     &corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastState: &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, FinishedAt: ago(30 * time.Second)}}}}}
		}),
		pod("init", time.Minute, func(p *corev1.Pod) {
			p.Spec.InitContainers = []*corev1.Container{{Name: "migrate"}, {Name: "seed"}}
			p.Status.InitContainerStatuses = []*corev1.ContainerStatus{
				{Name: "migrate", State: &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
				{Name: "seed", State: &corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			}
		}),
		pod("failed-exit", 2*time.Hour, func(p *corev1.Pod) {
			p.Status = &corev1.PodStatus{Phase: "Failed", ContainerStatuses: []*corev1.ContainerStatus{{Name: "web",
				State: &corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}}}
		}),
		pod("going", 8*24*time.Hour, func(p *corev1.Pod) {
			p.Metadata.DeletionTimestamp = ago(0)
			p.Status = &corev1.PodStatus{Phase: "Running", ContainerStatuses: []*corev1.ContainerStatus{running("web", true, 0)}}
		}),
	}
}

func deployments() []object.Object {
	d := &appsv1.Deployment{
		Metadata: &metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: ago(45 * time.Minute)},
		Spec: &appsv1.DeploymentSpec{Replicas: proto.Int32(3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &corev1.PodTemplateSpec{Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web", Image: "nginx:1.25"}, {Name: "log", Image: "fluentd"}}}}},
		Status: &appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2},
	}
	d2 := proto.Clone(d).(*appsv1.Deployment)
	d2.Metadata.Name, d2.Metadata.Namespace, d2.Status = "api", "prod", nil
	d2.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []*metav1.LabelSelectorRequirement{{Key: "tier", Operator: "In", Values: []string{"a", "b"}}}}
	return []object.Object{d, d2}
}

func TestTables(t *testing.T) {
	rs := &appsv1.ReplicaSet{
		Metadata: &metav1.ObjectMeta{Name: "web-7d9f8c6b5", Namespace: "default", CreationTimestamp: ago(45 * time.Minute)},
		Spec: &appsv1.ReplicaSetSpec{Replicas: proto.Int32(3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "7d9f8c6b5"}},
			Template: &corev1.PodTemplateSpec{Spec: &corev1.PodSpec{Containers: []*corev1.Container{{Name: "web", Image: "nginx:1.25"}}}}},
		Status: &appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2},
	}
	nodes := []object.Object{
		&corev1.Node{Metadata: &metav1.ObjectMeta{Name: "node-1", CreationTimestamp: ago(10 * 24 * time.Hour), Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}},
			Status: &corev1.NodeStatus{Conditions: []*corev1.NodeCondition{{Type: "Ready", Status: "True"}},
				Addresses: []*corev1.NodeAddress{{Type: "InternalIP", Address: "192.168.1.10"}},
				NodeInfo:  &corev1.NodeSystemInfo{KubeletVersion: "v0.1.0", OsImage: "Debian GNU/Linux 12", KernelVersion: "6.1.0", ContainerRuntimeVersion: "containerd://1.7.0"}}},
		&corev1.Node{Metadata: &metav1.ObjectMeta{Name: "node-2", CreationTimestamp: ago(time.Hour)}, Spec: &corev1.NodeSpec{Unschedulable: true},
			Status: &corev1.NodeStatus{Conditions: []*corev1.NodeCondition{{Type: "Ready", Status: "Unknown"}}}},
	}
	events := []object.Object{
		&corev1.Event{Metadata: &metav1.ObjectMeta{Name: "web.2", Namespace: "default"}, InvolvedObject: &corev1.ObjectReference{Kind: "Pod", Name: "web-1"},
			Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container", Count: 5,
			FirstTimestamp: ago(10 * time.Minute), LastTimestamp: ago(30 * time.Second), Source: &corev1.EventSource{Component: "kubelet", Host: "node-1"}},
		&corev1.Event{Metadata: &metav1.ObjectMeta{Name: "web.1", Namespace: "default"}, InvolvedObject: &corev1.ObjectReference{Kind: "Pod", Name: "web-1"},
			Type: "Normal", Reason: "Scheduled", Message: "Successfully assigned default/web-1 to node-1",
			EventTime: ago(11 * time.Minute), ReportingComponent: "default-scheduler"},
	}
	others := map[string][]object.Object{
		"namespaces": {&corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: "default", CreationTimestamp: ago(30 * 24 * time.Hour)}, Status: &corev1.NamespaceStatus{Phase: "Active"}}},
		"leases":     {&coordinationv1.Lease{Metadata: &metav1.ObjectMeta{Name: "skiff-controller-manager", Namespace: "kube-system", CreationTimestamp: ago(2 * time.Hour)}, Spec: &coordinationv1.LeaseSpec{HolderIdentity: "host_1234"}}},
		"configmaps": {&corev1.ConfigMap{Metadata: &metav1.ObjectMeta{Name: "settings", Namespace: "default", CreationTimestamp: ago(90 * time.Second)}, Data: map[string]string{"a": "1", "b": "2"}}},
		"resourcequotas": {&corev1.ResourceQuota{Metadata: &metav1.ObjectMeta{Name: "team", Namespace: "default", CreationTimestamp: ago(time.Hour)},
			Spec:   &corev1.ResourceQuotaSpec{Hard: map[string]string{"pods": "10", "requests.cpu": "4", "limits.memory": "8Gi"}},
			Status: &corev1.ResourceQuotaStatus{Used: map[string]string{"pods": "3", "requests.cpu": "1500m"}}}},
		"rolebindings": {&rbacv1.RoleBinding{Metadata: &metav1.ObjectMeta{Name: "devs", Namespace: "default", CreationTimestamp: ago(time.Hour)},
			RoleRef:  &rbacv1.RoleRef{Kind: "ClusterRole", Name: "edit"},
			Subjects: []*rbacv1.Subject{{Kind: "User", Name: "alice"}, {Kind: "Group", Name: "devs"}, {Kind: "ServiceAccount", Namespace: "ci", Name: "deployer"}}}},
		"validatingwebhookconfigurations": {&admissionregistrationv1.ValidatingWebhookConfiguration{Metadata: &metav1.ObjectMeta{Name: "policy", CreationTimestamp: ago(time.Minute)},
			Webhooks: []*admissionregistrationv1.ValidatingWebhook{{Name: "a.example.com"}, {Name: "b.example.com"}}}},
	}
	var b bytes.Buffer
	section := func(title string, objs []object.Object, o Options) {
		o.Now = now
		b.WriteString("== " + title + "\n")
		if err := PrintTable(&b, MakeTable(objs, o), o.NoHeaders); err != nil {
			t.Fatal(err)
		}
	}
	section("pods", pods(), Options{})
	section("pods -o wide --show-labels", pods(), Options{Wide: true, ShowLabels: true})
	section("deployments -A", deployments(), Options{WithNamespace: true})
	section("deployments -o wide", deployments(), Options{Wide: true})
	section("replicasets -o wide -L app", []object.Object{rs}, Options{Wide: true, LabelColumns: []string{"app"}})
	section("nodes", nodes, Options{})
	section("nodes -o wide", nodes, Options{Wide: true})
	section("events (sorted by last seen)", events, Options{})
	section("events -o wide --no-headers", events, Options{Wide: true, NoHeaders: true})
	for _, k := range []string{"namespaces", "leases", "configmaps", "resourcequotas", "validatingwebhookconfigurations"} {
		section(k, others[k], Options{})
	}
	section("rolebindings -o wide", others["rolebindings"], Options{Wide: true})
	golden(t, "tables", b.String())
}
