package plugins

import (
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/framework"
)

func TestFitFilter(t *testing.T) {
	gpuPod := pod("gpu", "1", "1Gi")
	gpuPod.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = "2"
	initPod := pod("init", "100m", "")
	initPod.Spec.InitContainers = []*corev1.Container{{Name: "i", Resources: &corev1.ResourceRequirements{Requests: map[string]string{"cpu": "3"}}}}
	gpuNode := node("g", "8", "16Gi", "110")
	gpuNode.Status.Allocatable["nvidia.com/gpu"] = "1"

	cases := []struct {
		name string
		pod  *corev1.Pod
		node *framework.NodeInfo
		want string
	}{
		{"fits an empty node", pod("p", "1", "1Gi"), nodeInfo(node("n", "4", "8Gi", "110")), ""},
		{"fits exactly", pod("p", "4", "8Gi"), nodeInfo(node("n", "4", "8Gi", "110")), ""},
		{"cpu left is too little", pod("p", "1", "1Gi"), nodeInfo(node("n", "4", "8Gi", "110"), pod("a", "3500m", "1Gi")), "Unschedulable: Insufficient cpu"},
		{"memory left is too little", pod("p", "100m", "5Gi"), nodeInfo(node("n", "4", "8Gi", "110"), pod("a", "1", "4Gi")), "Unschedulable: Insufficient memory"},
		{"both, in a fixed order", pod("p", "5", "9Gi"), nodeInfo(node("n", "4", "8Gi", "110")), "Unschedulable: Insufficient cpu, Insufficient memory"},
		{"pod count", pod("p", "", ""), nodeInfo(node("n", "4", "8Gi", "2"), pod("a", "", ""), pod("b", "", "")), "Unschedulable: Too many pods"},
		{"a node without a pods entry takes none", pod("p", "", ""), nodeInfo(node("n", "4", "8Gi", "")), "Unschedulable: Too many pods"},
		{"a pod requesting nothing fits a full node", pod("p", "", ""), nodeInfo(node("n", "1", "1Gi", "110"), pod("a", "1", "1Gi")), ""},
		{"extended resources", gpuPod, nodeInfo(gpuNode), "Unschedulable: Insufficient nvidia.com/gpu"},
		{"init container's request counts when larger", initPod, nodeInfo(node("n", "2", "8Gi", "110")), "Unschedulable: Insufficient cpu"},
	}
	p, _ := NewFit(nil, nil)
	fit := p.(*Fit)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := statusString(fit.Filter(ctx, nil, framework.NewPodInfo(tc.pod), tc.node))
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFitScore(t *testing.T) {
	cases := []struct {
		name     string
		strategy string
		pod      *corev1.Pod
		node     *framework.NodeInfo
		want     int64
	}{
		// (4000-1000)/4000*100 = 75 for cpu; (8-2)/8*100 = 75 for memory.
		{"least allocated, empty node", config.LeastAllocated, pod("p", "1", "2Gi"), nodeInfo(node("n", "4", "8Gi", "110")), 75},
		// cpu (4-3)/4 = 25, memory (8-4)/8 = 50 -> 37.
		{"least allocated, half used", config.LeastAllocated, pod("p", "1", "2Gi"), nodeInfo(node("n", "4", "8Gi", "110"), pod("a", "2", "2Gi")), 37},
		{"most allocated, empty node", config.MostAllocated, pod("p", "1", "2Gi"), nodeInfo(node("n", "4", "8Gi", "110")), 25},
		{"most allocated, half used", config.MostAllocated, pod("p", "1", "2Gi"), nodeInfo(node("n", "4", "8Gi", "110"), pod("a", "2", "2Gi")), 62},
		// A pod requesting nothing counts as 100m and 200Mi.
		{"least allocated, zero requests use defaults", config.LeastAllocated, pod("p", "", ""), nodeInfo(node("n", "1", "1000Mi", "110")), 85},
		{"over-committed scores 0", config.LeastAllocated, pod("p", "8", "16Gi"), nodeInfo(node("n", "4", "8Gi", "110")), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := config.DefaultNodeResourcesFitArgs()
			args.ScoringStrategy.Type = tc.strategy
			p, err := NewFit(args, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, s := p.(*Fit).Score(ctx, nil, framework.NewPodInfo(tc.pod), tc.node)
			if !s.IsSuccess() || got != tc.want {
				t.Errorf("got %d (%v), want %d", got, s, tc.want)
			}
		})
	}
}

func TestBalancedAllocation(t *testing.T) {
	cases := []struct {
		name string
		pod  *corev1.Pod
		node *framework.NodeInfo
		want int64
	}{
		{"even use scores 100", pod("p", "1", "2Gi"), nodeInfo(node("n", "4", "8Gi", "110")), 100},
		// cpu 4/4 = 1, memory 2/8 = 0.25: std 0.375 -> 62.
		{"uneven use", pod("p", "4", "2Gi"), nodeInfo(node("n", "4", "8Gi", "110")), 62},
		// Existing pods count: cpu (2+1)/4 = .75, memory (1+1)/8 = .25 -> std .25 -> 75.
		{"existing pods count", pod("p", "1", "1Gi"), nodeInfo(node("n", "4", "8Gi", "110"), pod("a", "2", "1Gi")), 75},
	}
	p, _ := NewBalancedAllocation(nil, nil)
	b := p.(*BalancedAllocation)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := b.Score(ctx, nil, framework.NewPodInfo(tc.pod), tc.node)
			if got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
	if s := b.PreScore(ctx, nil, framework.NewPodInfo(pod("be", "", "")), nil); !s.IsSkip() {
		t.Errorf("a pod requesting nothing should skip scoring, got %v", s)
	}
}
