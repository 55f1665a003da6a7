package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"skiff.dev/services/scheduler/config"
	"skiff.dev/services/scheduler/plugins"
)

func known(t *testing.T) config.KnownPlugins {
	t.Helper()
	k, err := plugins.Known(plugins.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func names(refs []config.PluginRef) string {
	var s []string
	for _, r := range refs {
		if r.Weight != 0 {
			s = append(s, r.Name+"*"+itoa(r.Weight))
		} else {
			s = append(s, r.Name)
		}
	}
	return strings.Join(s, ",")
}

func itoa(n int32) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

const header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

func TestDefault(t *testing.T) {
	c := config.Default(known(t))
	if len(c.Profiles) != 1 || c.Profiles[0].SchedulerName != "default-scheduler" {
		t.Fatalf("profiles: %+v", c.Profiles)
	}
	p := c.Profiles[0]
	want := map[config.ExtensionPoint]string{
		config.PreFilter:  "NodeName,NodeAffinity,VolumeBinding,PodTopologySpread,InterPodAffinity",
		config.Filter:     "NodeUnschedulable,NodeName,TaintToleration,NodeAffinity,NodeResourcesFit,VolumeBinding,PodTopologySpread,InterPodAffinity",
		config.PostFilter: "DefaultPreemption",
		config.PreScore:   "TaintToleration,NodeAffinity,PodTopologySpread,InterPodAffinity,NodeResourcesBalancedAllocation",
		config.Score:      "TaintToleration*3,NodeAffinity*2,NodeResourcesFit*1,PodTopologySpread*2,InterPodAffinity*2,NodeResourcesBalancedAllocation*1",
		config.Reserve:    "",
		config.PreBind:    "VolumeBinding",
		config.Bind:       "DefaultBinder",
	}
	for point, w := range want {
		if got := names(p.Plugins[point]); got != w {
			t.Errorf("%s: got %s, want %s", point, got, w)
		}
	}
	if c.Parallelism != 16 || c.PercentageOfNodesToScore != 0 || c.PodInitialBackoff != time.Second || c.PodMaxBackoff != 10*time.Second {
		t.Errorf("defaults: %+v", c)
	}
	if a := p.PluginArgs[config.NodeResourcesFit].(*config.NodeResourcesFitArgs); a.ScoringStrategy.Type != config.LeastAllocated {
		t.Errorf("fit args: %+v", a)
	}
}

func TestParseGoodFiles(t *testing.T) {
	cases := []struct {
		name  string
		yaml  string
		check func(t *testing.T, c *config.Configuration)
	}{
		{
			name: "empty file is the default",
			yaml: "",
			check: func(t *testing.T, c *config.Configuration) {
				if len(c.Profiles) != 1 || c.Profiles[0].SchedulerName != "default-scheduler" {
					t.Errorf("%+v", c.Profiles)
				}
			},
		},
		{
			name: "global settings",
			yaml: header + `parallelism: 4
percentageOfNodesToScore: 30
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
leaderElection:
  leaderElect: true
  leaseDuration: 20s
  renewDeadline: 15s
  retryPeriod: 3s
  resourceLock: leases
  resourceName: sched
  resourceNamespace: kube-system
`,
			check: func(t *testing.T, c *config.Configuration) {
				if c.Parallelism != 4 || c.PercentageOfNodesToScore != 30 || c.PodInitialBackoff != 2*time.Second || c.PodMaxBackoff != 20*time.Second {
					t.Errorf("%+v", c)
				}
				le := c.LeaderElection
				if le.LeaderElect == nil || !*le.LeaderElect || le.LeaseDuration != 20*time.Second || le.RenewDeadline != 15*time.Second ||
					le.RetryPeriod != 3*time.Second || le.ResourceName != "sched" || le.ResourceNamespace != "kube-system" {
					t.Errorf("leaderElection %+v", le)
				}
			},
		},
		{
			name: "two profiles, one packing",
			yaml: header + `profiles:
  - schedulerName: default-scheduler
  - schedulerName: packer
    percentageOfNodesToScore: 100
    plugins:
      score:
        disabled:
          - name: NodeResourcesBalancedAllocation
        enabled:
          - name: NodeResourcesFit
            weight: 5
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources:
              - {name: cpu, weight: 2}
              - {name: memory}
`,
			check: func(t *testing.T, c *config.Configuration) {
				if len(c.Profiles) != 2 {
					t.Fatalf("%+v", c.Profiles)
				}
				p := c.Profiles[1]
				if p.SchedulerName != "packer" || p.PercentageOfNodesToScore == nil || *p.PercentageOfNodesToScore != 100 {
					t.Errorf("%+v", p)
				}
				if got, want := names(p.Plugins[config.Score]), "TaintToleration*3,NodeAffinity*2,PodTopologySpread*2,InterPodAffinity*2,NodeResourcesFit*5"; got != want {
					t.Errorf("score: got %s, want %s", got, want)
				}
				a := p.PluginArgs[config.NodeResourcesFit].(*config.NodeResourcesFitArgs)
				if a.ScoringStrategy.Type != config.MostAllocated || len(a.ScoringStrategy.Resources) != 2 ||
					a.ScoringStrategy.Resources[0] != (config.ResourceSpec{Name: "cpu", Weight: 2}) ||
					a.ScoringStrategy.Resources[1] != (config.ResourceSpec{Name: "memory", Weight: 1}) {
					t.Errorf("args %+v", a)
				}
			},
		},
		{
			name: "disable everything at filter, keep one",
			yaml: header + `profiles:
  - schedulerName: x
    plugins:
      filter:
        disabled: [{name: "*"}]
        enabled: [{name: NodeResourcesFit}]
`,
			check: func(t *testing.T, c *config.Configuration) {
				if got := names(c.Profiles[0].Plugins[config.Filter]); got != "NodeResourcesFit" {
					t.Errorf("filter: %s", got)
				}
			},
		},
		{
			name: "multiPoint disable removes a plugin everywhere; kube-scheduler plugins may be disabled",
			yaml: header + `profiles:
  - plugins:
      multiPoint:
        disabled: [{name: TaintToleration}, {name: ImageLocality}]
      queueSort:
        enabled: [{name: PrioritySort}]
`,
			check: func(t *testing.T, c *config.Configuration) {
				p := c.Profiles[0]
				for _, point := range config.ExtensionPoints {
					if p.Enabled(point, "TaintToleration") {
						t.Errorf("TaintToleration still at %s", point)
					}
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse("policy.yaml", []byte(tc.yaml), known(t))
			if err != nil {
				t.Fatalf("unexpected error:\n%v", err)
			}
			tc.check(t, c)
		})
	}
}

func TestParseBadFiles(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want []string // every error, in order
	}{
		{
			name: "no apiVersion",
			yaml: "kind: KubeSchedulerConfiguration\n",
			want: []string{`policy.yaml:1:1: apiVersion: must be "kubescheduler.config.k8s.io/v1", not ""`},
		},
		{
			name: "syntax error",
			yaml: header + "profiles:\n  - schedulerName: a\n   plugins: {}\n",
			want: []string{`policy.yaml:5: invalid YAML: did not find expected '-' indicator`},
		},
		{
			name: "syntax error on the first line",
			yaml: "apiVersion: a: b\n",
			want: []string{`policy.yaml:1: invalid YAML: mapping values are not allowed in this context`},
		},
		{
			name: "unclosed flow list",
			yaml: header + "profiles: [\n  {schedulerName: a},\n",
			want: []string{`policy.yaml:3: invalid YAML: `},
		},
		{
			name: "unknown top-level field",
			yaml: header + "percentageOfNodesToScor: 50\n",
			want: []string{`policy.yaml:3:1: percentageOfNodesToScor: unknown field "percentageOfNodesToScor" (known: apiVersion,`},
		},
		{
			name: "percentage out of range and not a number",
			yaml: header + "percentageOfNodesToScore: 150\nparallelism: many\n",
			want: []string{
				`policy.yaml:3:27: percentageOfNodesToScore: must be between 0 and 100 (0: adaptive), not 150`,
				`policy.yaml:4:14: parallelism: must be an integer, not "many"`,
			},
		},
		{
			name: "backoff",
			yaml: header + "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n",
			want: []string{`policy.yaml:4:23: podMaxBackoffSeconds: must not be less than podInitialBackoffSeconds (2s < 5s)`},
		},
		{
			name: "SchedulingGates cannot be disabled",
			yaml: header + `profiles:
  - schedulerName: default-scheduler
    plugins:
      preEnqueue:
        disabled:
          - name: SchedulingGates
`,
			want: []string{`policy.yaml:8:19: profiles[0].plugins.preEnqueue.disabled[0].name: plugin "SchedulingGates" cannot be disabled: skiff-scheduler always keeps pods with spec.schedulingGates out of its queue`},
		},
		{
			name: "unknown plugin with its line",
			yaml: header + `profiles:
  - schedulerName: default-scheduler
    plugins:
      score:
        enabled:
          - name: NodeResourceFit
            weight: 2
`,
			want: []string{`policy.yaml:8:19: profiles[0].plugins.score.enabled[0].name: unknown plugin "NodeResourceFit" (available: DefaultBinder,`},
		},
		{
			name: "plugin at a point it does not implement",
			yaml: header + `profiles:
  - plugins:
      score:
        enabled: [{name: NodeName}]
`,
			want: []string{`policy.yaml:6:26: profiles[0].plugins.score.enabled[0].name: plugin "NodeName" does not implement score (it implements: preFilter, filter)`},
		},
		{
			name: "kube-scheduler plugin skiff lacks",
			yaml: header + `profiles:
  - plugins:
      score:
        enabled:
          - name: ImageLocality
`,
			want: []string{`policy.yaml:7:19: profiles[0].plugins.score.enabled[0].name: plugin "ImageLocality" is a kube-scheduler plugin that skiff-scheduler does not have`},
		},
		{
			name: "weight out of range",
			yaml: header + `profiles:
  - plugins:
      score:
        enabled:
          - name: NodeAffinity
            weight: 0
`,
			want: []string{`policy.yaml:8:21: profiles[0].plugins.score.enabled[0].weight: must be between 1 and 100, not 0`},
		},
		{
			name: "duplicate schedulerName and no binder",
			yaml: header + `profiles:
  - schedulerName: a
  - schedulerName: a
    plugins:
      bind:
        disabled: [{name: DefaultBinder}]
`,
			want: []string{
				`policy.yaml:5:20: profiles[1].schedulerName: duplicate schedulerName "a" (also at line 4)`,
				`policy.yaml:7:7: profiles[1].plugins: no bind plugin is enabled: a profile needs one (DefaultBinder)`,
			},
		},
		{
			name: "bad args",
			yaml: header + `profiles:
  - pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: Random
            resources:
              - name: cpu
                weight: 500
      - name: TaintToleration
        args:
          foo: 1
`,
			want: []string{
				`policy.yaml:8:19: profiles[0].pluginConfig[0].args.scoringStrategy.type: must be LeastAllocated or MostAllocated, not "Random"`,
				`policy.yaml:11:25: profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight: must be between 1 and 100, not 500`,
				`policy.yaml:14:11: profiles[0].pluginConfig[1].args.foo: unknown field "foo"`,
			},
		},
		{
			name: "permit has no plugins here",
			yaml: header + `profiles:
  - plugins:
      permit:
        enabled: [{name: NodeAffinity}]
`,
			want: []string{`policy.yaml:6:26: profiles[0].plugins.permit.enabled[0].name: skiff-scheduler runs no permit plugins`},
		},
		{
			name: "extenders",
			yaml: header + "extenders:\n  - urlPrefix: http://x\n",
			want: []string{`policy.yaml:4:3: extenders: scheduler extenders are not supported by skiff-scheduler`},
		},
		{
			name: "leader election durations",
			yaml: header + "leaderElection:\n  leaseDuration: 10s\n  renewDeadline: 10s\n  retryPeriod: soon\n",
			want: []string{
				`policy.yaml:4:3: leaderElection.renewDeadline: must be less than leaseDuration (10s >= 10s)`,
				`policy.yaml:6:16: leaderElection.retryPeriod: must be a positive duration such as "15s", not "soon"`,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("policy.yaml", []byte(tc.yaml), known(t))
			if err == nil {
				t.Fatal("no error")
			}
			var list config.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error is %T, not an ErrorList: %v", err, err)
			}
			if len(list) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(list), len(tc.want), err)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(list[i].Error(), w) {
					t.Errorf("error %d:\n got  %s\n want %s...", i, list[i].Error(), w)
				}
			}
		})
	}
}
