package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"skiff.dev/internal/defaults"
	"skiff.dev/internal/validation"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestNamespace(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(ns *corev1.Namespace)
		want   []string
	}{
		{"valid", func(ns *corev1.Namespace) {}, nil},
		{"name with a dot", func(ns *corev1.Namespace) { ns.Metadata.Name = "team.a" }, []string{"metadata.name: Invalid value"}},
		{"name too long for a label", func(ns *corev1.Namespace) { ns.Metadata.Name = strings.Repeat("a", 64) }, []string{"metadata.name: Invalid value"}},
		{"namespace set", func(ns *corev1.Namespace) { ns.Metadata.Namespace = "default" }, []string{"metadata.namespace: Forbidden"}},
		{"finalizer invalid", func(ns *corev1.Namespace) {
			ns.Spec = &corev1.NamespaceSpec{Finalizers: []string{"kubernetes", "cleanup"}}
		},
			[]string{"spec.finalizers[1]: Invalid value"}},
		{"phase unsupported", func(ns *corev1.Namespace) { ns.Status.Phase = "Deleting" }, []string{"status.phase: Unsupported value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: "team-a"}}
			defaults.Namespace(ns)
			c.mutate(ns)
			expectErrors(t, validation.Namespace(ns), c.want)
		})
	}
}

func TestNamespaceUpdate(t *testing.T) {
	oldNS := &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: "team-a", Uid: "u1"}}
	defaults.Namespace(oldNS)
	newNS := proto.Clone(oldNS).(*corev1.Namespace)
	newNS.Metadata.Labels["env"] = "prod"
	expectErrors(t, validation.NamespaceUpdate(newNS, oldNS), nil)
	newNS.Metadata.Uid = "u2"
	expectErrors(t, validation.NamespaceUpdate(newNS, oldNS), []string{"metadata.uid: Invalid value"})
}

func validNode() *corev1.Node {
	n := &corev1.Node{
		Metadata: &metav1.ObjectMeta{Name: "node-1.example.com", Labels: map[string]string{"kubernetes.io/hostname": "node-1"}},
		Spec: &corev1.NodeSpec{
			PodCidr:  "10.244.1.0/24",
			PodCidrs: []string{"10.244.1.0/24", "fd00:10:244:1::/64"},
			Taints:   []*corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: "NoSchedule"}, {Key: "dedicated", Value: "gpu", Effect: "NoExecute"}},
		},
		Status: &corev1.NodeStatus{Capacity: map[string]string{"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "2"}},
	}
	defaults.Node(n)
	return n
}

func TestNode(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(n *corev1.Node)
		want   []string
	}{
		{"valid", func(n *corev1.Node) {}, nil},
		{"namespace set", func(n *corev1.Node) { n.Metadata.Namespace = "default" }, []string{"metadata.namespace: Forbidden"}},
		{"name invalid", func(n *corev1.Node) { n.Metadata.Name = "Node_1" }, []string{"metadata.name: Invalid value"}},
		{"taint effect missing", func(n *corev1.Node) { n.Spec.Taints[0].Effect = "" }, []string{"spec.taints[0].effect: Required value"}},
		{"taint effect unsupported", func(n *corev1.Node) { n.Spec.Taints[0].Effect = "NoRun" }, []string{"spec.taints[0].effect: Unsupported value"}},
		{"taint key missing", func(n *corev1.Node) { n.Spec.Taints[1].Key = "" }, []string{"spec.taints[1].key: Invalid value", "spec.taints[1].key: Invalid value"}},
		{"taint key invalid", func(n *corev1.Node) { n.Spec.Taints[1].Key = "dedicated!" }, []string{"spec.taints[1].key: Invalid value"}},
		{"taint value invalid", func(n *corev1.Node) { n.Spec.Taints[1].Value = "gpu a100" }, []string{"spec.taints[1].value: Invalid value"}},
		{"duplicate taint", func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, &corev1.Taint{Key: "dedicated", Value: "other", Effect: "NoExecute"})
		}, []string{"spec.taints[2]: Duplicate value"}},
		{"same key other effect", func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, &corev1.Taint{Key: "dedicated", Value: "gpu", Effect: "NoSchedule"})
		}, nil},
		{"podCIDR invalid", func(n *corev1.Node) { n.Spec.PodCidr = "10.244.1.0" }, []string{"spec.podCIDR: Invalid value"}},
		{"podCIDRs entry invalid", func(n *corev1.Node) { n.Spec.PodCidrs[1] = "fd00::/129" }, []string{"spec.podCIDRs[1]: Invalid value"}},
		{"two IPv4 podCIDRs", func(n *corev1.Node) { n.Spec.PodCidrs[1] = "10.245.1.0/24" }, []string{"spec.podCIDRs: Invalid value"}},
		{"capacity malformed", func(n *corev1.Node) { n.Status.Capacity["cpu"] = "eight" }, []string{"status.capacity[cpu]: Invalid value"}},
		{"allocatable negative", func(n *corev1.Node) { n.Status.Allocatable["memory"] = "-1Gi" }, []string{"status.allocatable[memory]: Invalid value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := validNode()
			c.mutate(n)
			expectErrors(t, validation.Node(n), c.want)
		})
	}
}

func TestNodeUpdate(t *testing.T) {
	oldN := validNode()
	newN := proto.Clone(oldN).(*corev1.Node)
	newN.Spec.Unschedulable = true
	expectErrors(t, validation.NodeUpdate(newN, oldN), nil)
	newN.Spec.PodCidr = "10.244.2.0/24"
	newN.Spec.PodCidrs[0] = "10.244.2.0/24"
	expectErrors(t, validation.NodeUpdate(newN, oldN), []string{"spec.podCIDR: Forbidden", "spec.podCIDRs: Forbidden"})
}

func validEvent() *corev1.Event {
	e := &corev1.Event{
		Metadata:       &metav1.ObjectMeta{Name: "nginx-deployment-7c5ddbdf54-x2k9q.17a3f0c2b1d4e5f6", Namespace: "default"},
		InvolvedObject: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "nginx-deployment-7c5ddbdf54-x2k9q", ApiVersion: "v1", Uid: "u"},
		Reason:         "Scheduled",
		Message:        "Successfully assigned default/nginx-deployment-7c5ddbdf54-x2k9q to node-1",
		Source:         &corev1.EventSource{Component: "default-scheduler"},
	}
	defaults.Event(e)
	return e
}

func TestEvent(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(e *corev1.Event)
		want   []string
	}{
		{"valid", func(e *corev1.Event) {}, nil},
		{"involvedObject missing", func(e *corev1.Event) { e.InvolvedObject = nil }, []string{"involvedObject: Required value"}},
		{"involvedObject kind and name missing", func(e *corev1.Event) { e.InvolvedObject.Kind, e.InvolvedObject.Name = "", "" },
			[]string{"involvedObject.kind: Required value", "involvedObject.name: Required value"}},
		{"involvedObject in another namespace", func(e *corev1.Event) { e.InvolvedObject.Namespace = "kube-system" },
			[]string{"involvedObject.namespace: Invalid value"}},
		{"cluster-scoped object, event in default", func(e *corev1.Event) { e.InvolvedObject = &corev1.ObjectReference{Kind: "Node", Name: "node-1"} }, nil},
		{"cluster-scoped object, event elsewhere", func(e *corev1.Event) {
			e.InvolvedObject = &corev1.ObjectReference{Kind: "Node", Name: "node-1"}
			e.Metadata.Namespace = "kube-system"
		}, []string{"involvedObject.namespace: Invalid value"}},
		{"namespace missing", func(e *corev1.Event) { e.Metadata.Namespace = "" },
			[]string{"metadata.namespace: Required value", "involvedObject.namespace: Invalid value"}},
		{"type unsupported", func(e *corev1.Event) { e.Type = "Error" }, []string{"type: Unsupported value"}},
		{"new-style event needs reporting fields", func(e *corev1.Event) { e.EventTime = timestamppb.Now(); e.Reason = "" }, []string{
			"reportingComponent: Required value", "reportingInstance: Required value", "action: Required value", "reason: Required value"}},
		{"new-style event", func(e *corev1.Event) {
			e.EventTime = timestamppb.Now()
			e.ReportingComponent, e.ReportingInstance, e.Action = "skiff.dev/scheduler", "scheduler-0", "Binding"
		}, nil},
		{"new-style event note too long", func(e *corev1.Event) {
			e.EventTime = timestamppb.Now()
			e.ReportingComponent, e.ReportingInstance, e.Action = "skiff.dev/scheduler", "scheduler-0", "Binding"
			e.Message = strings.Repeat("x", 1025)
		}, []string{"message: Too long"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := validEvent()
			c.mutate(e)
			expectErrors(t, validation.Event(e), c.want)
		})
	}
}

func TestEventUpdate(t *testing.T) {
	oldE := validEvent()
	newE := proto.Clone(oldE).(*corev1.Event)
	newE.Count = 2
	expectErrors(t, validation.EventUpdate(newE, oldE), nil)
	newE.Metadata.Name = "renamed"
	expectErrors(t, validation.EventUpdate(newE, oldE), []string{"metadata.name: Invalid value"})
}

func validConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		Metadata:   &metav1.ObjectMeta{Name: "nginx-config", Namespace: "default"},
		Data:       map[string]string{"default.conf": "server { listen 80; }", "log.level": "info", "KEY_NAME": "x", "key-name": ""},
		BinaryData: map[string][]byte{"favicon.ico": {0, 1, 2}},
	}
}

func TestConfigMap(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(cm *corev1.ConfigMap)
		want   []string
	}{
		{"valid", func(cm *corev1.ConfigMap) {}, nil},
		{"key with a slash", func(cm *corev1.ConfigMap) { cm.Data["conf.d/default"] = "" }, []string{"data[conf.d/default]: Invalid value"}},
		{"key ..", func(cm *corev1.ConfigMap) { cm.Data[".."] = "" }, []string{"data[..]: Invalid value"}},
		{"key starting with ..", func(cm *corev1.ConfigMap) { cm.Data["..data"] = "" }, []string{"data[..data]: Invalid value"}},
		{"key too long", func(cm *corev1.ConfigMap) { cm.Data[strings.Repeat("k", 254)] = "" }, []string{"data[" + strings.Repeat("k", 254) + "]: Invalid value"}},
		{"binary key invalid", func(cm *corev1.ConfigMap) { cm.BinaryData["logo png"] = nil }, []string{"binaryData[logo png]: Invalid value"}},
		{"key in data and binaryData", func(cm *corev1.ConfigMap) { cm.BinaryData["log.level"] = []byte("info") }, []string{"binaryData[log.level]: Invalid value"}},
		{"too large", func(cm *corev1.ConfigMap) {
			cm.Data["big"] = strings.Repeat("x", 1<<19)
			cm.BinaryData["big.bin"] = make([]byte, 1<<19)
		}, []string{"data: Too long"}},
		{"name invalid", func(cm *corev1.ConfigMap) { cm.Metadata.Name = "nginx_config" }, []string{"metadata.name: Invalid value"}},
		{"namespace missing", func(cm *corev1.ConfigMap) { cm.Metadata.Namespace = "" }, []string{"metadata.namespace: Required value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cm := validConfigMap()
			defaults.ConfigMap(cm)
			c.mutate(cm)
			expectErrors(t, validation.ConfigMap(cm), c.want)
		})
	}
}

func TestConfigMapUpdate(t *testing.T) {
	cases := []struct {
		name      string
		immutable bool
		mutate    func(cm *corev1.ConfigMap)
		want      []string
	}{
		{"mutable: data may change", false, func(cm *corev1.ConfigMap) { cm.Data["log.level"] = "debug" }, nil},
		{"mutable: may become immutable", false, func(cm *corev1.ConfigMap) { cm.Immutable = ptr(true) }, nil},
		{"immutable: labels may change", true, func(cm *corev1.ConfigMap) { cm.Metadata.Labels = map[string]string{"a": "b"} }, nil},
		{"immutable: data may not change", true, func(cm *corev1.ConfigMap) { cm.Data["log.level"] = "debug" }, []string{"data: Forbidden"}},
		{"immutable: binaryData may not change", true, func(cm *corev1.ConfigMap) { cm.BinaryData["favicon.ico"] = []byte{9} }, []string{"binaryData: Forbidden"}},
		{"immutable: may not become mutable", true, func(cm *corev1.ConfigMap) { cm.Immutable = nil }, []string{"immutable: Forbidden"}},
		{"name immutable", false, func(cm *corev1.ConfigMap) { cm.Metadata.Name = "other" }, []string{"metadata.name: Invalid value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			oldCM := validConfigMap()
			if c.immutable {
				oldCM.Immutable = ptr(true)
			}
			newCM := proto.Clone(oldCM).(*corev1.ConfigMap)
			c.mutate(newCM)
			expectErrors(t, validation.ConfigMapUpdate(newCM, oldCM), c.want)
		})
	}
}

func TestLease(t *testing.T) {
	valid := func() *coordinationv1.Lease {
		return &coordinationv1.Lease{
			Metadata: &metav1.ObjectMeta{Name: "node-1", Namespace: "skiff-node-lease"},
			Spec: &coordinationv1.LeaseSpec{
				HolderIdentity: "node-1", LeaseDurationSeconds: ptr[int32](40),
				RenewTime: timestamppb.Now(), LeaseTransitions: ptr[int32](0),
			},
		}
	}
	cases := []struct {
		name   string
		mutate func(l *coordinationv1.Lease)
		want   []string
	}{
		{"valid", func(l *coordinationv1.Lease) {}, nil},
		{"no spec", func(l *coordinationv1.Lease) { l.Spec = nil }, nil},
		{"duration unset", func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = nil }, nil},
		{"duration zero", func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = ptr[int32](0) }, []string{"spec.leaseDurationSeconds: Invalid value"}},
		{"transitions negative", func(l *coordinationv1.Lease) { l.Spec.LeaseTransitions = ptr[int32](-1) }, []string{"spec.leaseTransitions: Invalid value"}},
		{"namespace missing", func(l *coordinationv1.Lease) { l.Metadata.Namespace = "" }, []string{"metadata.namespace: Required value"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := valid()
			defaults.Lease(l)
			c.mutate(l)
			expectErrors(t, validation.Lease(l), c.want)
		})
	}
	oldL := valid()
	newL := proto.Clone(oldL).(*coordinationv1.Lease)
	newL.Spec.HolderIdentity = "node-2"
	expectErrors(t, validation.LeaseUpdate(newL, oldL), nil)
	newL.Metadata.Namespace = "default"
	expectErrors(t, validation.LeaseUpdate(newL, oldL), []string{"metadata.namespace: Invalid value"})
}
