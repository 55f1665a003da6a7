package describe

import (
	"bytes"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	appsv1 "skiff.dev/proto/apps/v1"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

func TestDescribeDaemonSet(t *testing.T) {
	ds := &appsv1.DaemonSet{
		Metadata: &metav1.ObjectMeta{Name: "fluentd", Namespace: "kube-system", Labels: map[string]string{"k8s-app": "fluentd"}},
		Spec: &appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": "fluentd"}},
			Template: &corev1.PodTemplateSpec{
				Metadata: &metav1.ObjectMeta{Labels: map[string]string{"name": "fluentd"}},
				Spec: &corev1.PodSpec{
					NodeSelector: map[string]string{"kubernetes.io/os": "linux", "disk": "ssd"},
					Containers:   []*corev1.Container{{Name: "fluentd", Image: "fluentd:v5"}},
				},
			},
		},
		Status: &appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 2, NumberAvailable: 2, NumberMisscheduled: 1},
	}
	pods := []*corev1.Pod{
		{Status: &corev1.PodStatus{Phase: "Running"}},
		{Status: &corev1.PodStatus{Phase: "Running"}},
		{Status: &corev1.PodStatus{Phase: "Failed"}},
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	p := &out{w: tw, now: time.Now()}
	p.daemonSet(ds, Related{Pods: pods})
	tw.Flush()
	// Values are aligned by the tab writer; compare with single spaces.
	got := strings.Join(strings.Fields(strings.ReplaceAll(buf.String(), "\n", " | ")), " ")
	for _, want := range []string{
		"Name:                                           fluentd",
		"Selector:                                       name=fluentd",
		"Node-Selector:                                  disk=ssd,kubernetes.io/os=linux",
		"Labels:                                         k8s-app=fluentd",
		"Desired Number of Nodes Scheduled:              3",
		"Current Number of Nodes Scheduled:              3",
		"Number of Nodes Scheduled with Up-to-date Pods: 2",
		"Number of Nodes Scheduled with Available Pods:  2",
		"Number of Nodes Misscheduled:                   1",
		"Pods Status:                                    2 Running / 0 Waiting / 0 Succeeded / 1 Failed",
		"Pod Template:",
	} {
		if !strings.Contains(got, strings.Join(strings.Fields(want), " ")+" |") {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}
