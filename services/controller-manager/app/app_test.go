package app

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"skiff.dev/services/controller-manager/manager"
)

func TestChooseControllers(t *testing.T) {
	all := []string{"cronjob", "csrapproving", "csrsigning", "daemonset", "deployment", "disruption", "endpointslice", "garbagecollector", "job", "local-path-provisioner", "namespace", "nodeipam",
		"nodelifecycle", "persistentvolume-binder", "podgc", "pv-protection", "pvc-protection", "replicaset", "resourcequota", "root-ca-cert-publisher",
		"serviceaccount", "statefulset", "tokencleaner", "ttl-after-finished"}
	var minusAll []string
	for _, n := range all {
		minusAll = append(minusAll, "-"+n)
	}
	cases := []struct {
		name    string
		list    []string
		want    []string
		wantErr string
	}{
		{"default is all", nil, all, ""},
		{"star minus one", []string{"*", "-nodelifecycle"}, slices.DeleteFunc(slices.Clone(all), func(n string) bool { return n == "nodelifecycle" }), ""},
		{"named only", []string{"replicaset"}, []string{"replicaset"}, ""},
		{"unknown names are listed", []string{"replicaset", "jobs", "-cron"}, nil, "unknown controller(s) jobs, cron"},
		{"nothing left", append([]string{"*"}, minusAll...), nil, "no controller left"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := manager.Choose(tc.list, Builders(), Defaults())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Choose(%v) error = %v, want one containing %q", tc.list, err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("Choose(%v) = %v, %v; want %v", tc.list, got, err, tc.want)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	o, err := ParseFlags([]string{"--controllers", "replicaset,deployment", "--concurrent-replicaset-syncs", "8", "--leader-elect=false"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.Manager.Controllers, []string{"replicaset", "deployment"}) || o.Manager.Workers["replicaset"] != 8 || o.Manager.LeaderElect {
		t.Errorf("parsed %+v", o.Manager)
	}
	if o.Manager.TerminatedPodGCThreshold != 12500 {
		t.Errorf("--terminated-pod-gc-threshold default %d, want Kubernetes' 12500", o.Manager.TerminatedPodGCThreshold)
	}
	if o.Manager.ClusterCIDR != "10.244.0.0/16" || o.Manager.NodeCIDRMaskSize != 24 {
		t.Errorf("node IPAM defaults: --cluster-cidr %q --node-cidr-mask-size %d", o.Manager.ClusterCIDR, o.Manager.NodeCIDRMaskSize)
	}
	if o, err := ParseFlags([]string{"--cluster-cidr", "fd00:10:244::/48", "--node-cidr-mask-size", "64"}, nil); err != nil || o.Manager.ClusterCIDR != "fd00:10:244::/48" {
		t.Errorf("an IPv6 cluster CIDR: %+v, %v", o, err)
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"--concurrent-gc-syncs", "-1"}, "--concurrent-gc-syncs: -1"},
		{[]string{"--node-monitor-grace-period", "0s"}, "--node-monitor-grace-period"},
		{[]string{"--default-toleration-seconds", "-5"}, "--default-toleration-seconds"},
		{[]string{"--terminated-pod-gc-threshold", "-1"}, "--terminated-pod-gc-threshold: -1, must be 0 (no limit) or more"},
		{[]string{"--resource-quota-sync-period", "0s"}, "--resource-quota-sync-period: 0s, must be positive"},
		{[]string{"--cluster-cidr", "10.244.0.0"}, `--cluster-cidr "10.244.0.0": not a CIDR`},
		{[]string{"--cluster-cidr", "10.244.1.0/16"}, "did you mean 10.244.0.0/16?"},
		{[]string{"--cluster-cidr", "10.0.0.0/8", "--node-cidr-mask-size", "26"}, "--node-cidr-mask-size 26 with --cluster-cidr 10.0.0.0/8: node CIDR mask size 26 is too big"},
		{[]string{"--node-cidr-mask-size", "8"}, "--node-cidr-mask-size 8"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
	}
	for _, tc := range bad {
		if _, err := ParseFlags(tc.args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseFlags(%v) error = %v, want one containing %q", tc.args, err, tc.want)
		}
	}
	var help bytes.Buffer
	if _, err := ParseFlags([]string{"--help"}, &help); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: err = %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"Usage: skiff-controller-manager", "--leader-elect", "nodelifecycle", "nodeipam", "--cluster-cidr"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("--help output lacks %q", want)
		}
	}
}

// A restarted process is the same member: without --leader-elect-identity
// it takes its host's name, so it finds the Lease its previous run held as
// its own and leads at once instead of waiting the lease out.
func TestLeaderElectIdentityIsStableAcrossRestarts(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		t.Fatalf("os.Hostname() = %q, %v", host, err)
	}
	first, err := ParseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	restarted, err := ParseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := first.Manager.LeaderElection.Identity, restarted.Manager.LeaderElection.Identity; a != host || b != host {
		t.Errorf("default identities of two runs on host %q: %q and %q; want the host name both times", host, a, b)
	}
	given, err := ParseFlags([]string{"--leader-elect-identity", "cm-b"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if id := given.Manager.LeaderElection.Identity; id != "cm-b" {
		t.Errorf("--leader-elect-identity cm-b: identity %q", id)
	}
}

func TestEndpointSliceFlags(t *testing.T) {
	o, err := ParseFlags([]string{"--max-endpoints-per-slice", "50", "--endpoint-updates-batch-period", "1s", "--concurrent-service-endpoint-syncs", "3"}, io.Discard)
	if err != nil || o.Manager.MaxEndpointsPerSlice != 50 || o.Manager.EndpointUpdatesBatchPeriod != time.Second || o.Manager.Workers["endpointslice"] != 3 {
		t.Fatalf("%+v, %v", o, err)
	}
	if o, _ := ParseFlags(nil, io.Discard); o.Manager.MaxEndpointsPerSlice != 100 {
		t.Errorf("default max endpoints per slice %d", o.Manager.MaxEndpointsPerSlice)
	}
	for _, bad := range [][]string{{"--max-endpoints-per-slice", "1001"}, {"--max-endpoints-per-slice", "0"}, {"--endpoint-updates-batch-period", "-1s"}} {
		if _, err := ParseFlags(bad, io.Discard); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
