package printers

import (
	"fmt"
	"strings"
	"testing"

	"skiff.dev/internal/kinds"
)

// kubernetesColumns are kube-apiserver's column definitions of every kind
// Skiff serves, as k8s.io/kubernetes pkg/printers/internalversion's
// AddHandlers declares them (Kubernetes 1.36), "Name:type", with
// ":name" for the name format and ":wide" for priority 1. LimitRange,
// Role and ClusterRole have no printer there: they get the apiserver's
// default table.
var kubernetesColumns = map[string][]string{
	"Pod":                            {"Name:string:name", "Ready:string", "Status:string", "Restarts:string", "Age:string", "IP:string:wide", "Node:string:wide", "Nominated Node:string:wide", "Readiness Gates:string:wide"},
	"Deployment":                     {"Name:string:name", "Ready:string", "Up-to-date:string", "Available:string", "Age:string", "Containers:string:wide", "Images:string:wide", "Selector:string:wide"},
	"ReplicaSet":                     {"Name:string:name", "Desired:integer", "Current:integer", "Ready:integer", "Age:string", "Containers:string:wide", "Images:string:wide", "Selector:string:wide"},
	"Node":                           {"Name:string:name", "Status:string", "Roles:string", "Age:string", "Version:string", "Internal-IP:string:wide", "External-IP:string:wide", "OS-Image:string:wide", "Kernel-Version:string:wide", "Container-Runtime:string:wide"},
	"Namespace":                      {"Name:string:name", "Status:string", "Age:string"},
	"Event":                          {"Last Seen:string", "Type:string", "Reason:string", "Object:string", "Subobject:string:wide", "Source:string:wide", "Message:string", "First Seen:string:wide", "Count:string:wide", "Name:string:name:wide"},
	"Lease":                          {"Name:string:name", "Holder:string", "Age:string"},
	"ConfigMap":                      {"Name:string:name", "Data:string", "Age:string"},
	"Secret":                         {"Name:string:name", "Type:string", "Data:string", "Age:string"},
	"ServiceAccount":                 {"Name:string:name", "Secrets:string", "Age:string"},
	"ResourceQuota":                  {"Name:string:name", "Request:string", "Limit:string", "Age:string"},
	"RoleBinding":                    {"Name:string:name", "Role:string", "Age:string", "Users:string:wide", "Groups:string:wide", "ServiceAccounts:string:wide"},
	"ClusterRoleBinding":             {"Name:string:name", "Role:string", "Age:string", "Users:string:wide", "Groups:string:wide", "ServiceAccounts:string:wide"},
	"Service":                        {"Name:string:name", "Type:string", "Cluster-IP:string", "External-IP:string", "Port(s):string", "Age:string", "Selector:string:wide"},
	"EndpointSlice":                  {"Name:string:name", "AddressType:string", "Ports:string", "Endpoints:string", "Age:string"},
	"Job":                            {"Name:string:name", "Status:string", "Completions:string", "Duration:string", "Age:string", "Containers:string:wide", "Images:string:wide", "Selector:string:wide"},
	"CronJob":                        {"Name:string:name", "Schedule:string", "Timezone:string", "Suspend:boolean", "Active:integer", "Last Schedule:string", "Age:string", "Containers:string:wide", "Images:string:wide", "Selector:string:wide"},
	"DaemonSet":                      {"Name:string:name", "Desired:integer", "Current:integer", "Ready:integer", "Up-to-date:integer", "Available:integer", "Node Selector:string", "Age:string", "Containers:string:wide", "Images:string:wide", "Selector:string:wide"},
	"StatefulSet":                    {"Name:string:name", "Ready:string", "Age:string", "Containers:string:wide", "Images:string:wide"},
	"ControllerRevision":             {"Name:string:name", "Controller:string", "Revision:string", "Age:string"},
	"PersistentVolume":               {"Name:string:name", "Capacity:string", "Access Modes:string", "Reclaim Policy:string", "Status:string", "Claim:string", "StorageClass:string", "VolumeAttributesClass:string", "Reason:string", "Age:string", "VolumeMode:string:wide"},
	"PersistentVolumeClaim":          {"Name:string:name", "Status:string", "Volume:string", "Capacity:string", "Access Modes:string", "StorageClass:string", "VolumeAttributesClass:string", "Age:string", "VolumeMode:string:wide"},
	"PodDisruptionBudget":            {"Name:string:name", "Min Available:string", "Max Unavailable:string", "Allowed Disruptions:integer", "Age:string"},
	"StorageClass":                   {"Name:string:name", "Provisioner:string", "ReclaimPolicy:string", "VolumeBindingMode:string", "AllowVolumeExpansion:string", "Age:string"},
	"PriorityClass":                  {"Name:string:name", "Value:integer", "Global-Default:boolean", "Age:string", "PreemptionPolicy:string"},
	"RuntimeClass":                   {"Name:string:name", "Handler:string", "Age:string"},
	"CertificateSigningRequest":      {"Name:string:name", "Age:string", "SignerName:string", "Requestor:string", "RequestedDuration:string", "Condition:string"},
	"MutatingWebhookConfiguration":   {"Name:string:name", "Webhooks:integer", "Age:string"},
	"ValidatingWebhookConfiguration": {"Name:string:name", "Webhooks:integer", "Age:string"},
	"LimitRange":                     {"Name:string:name", "Created At:date"},
	"Role":                           {"Name:string:name", "Created At:date"},
	"ClusterRole":                    {"Name:string:name", "Created At:date"},
}

// TestColumnsAreKubernetes: every kind's columns are kube-apiserver's, in
// its order, with its types, the name format and -o wide priorities, and
// each says what it shows.
func TestColumnsAreKubernetes(t *testing.T) {
	for _, k := range kinds.All() {
		want, ok := kubernetesColumns[k.Kind.Kind]
		if !ok {
			t.Errorf("%s: no Kubernetes columns in this test: add them from Kubernetes' printers", k.GVK())
			continue
		}
		obj := k.New()
		table := tableOf(obj)
		if cells := table.cells(obj, now); len(cells) != len(table.columns) {
			t.Errorf("%s: %d cells for %d columns", k.GVK(), len(cells), len(table.columns))
		}
		var got []string
		for _, c := range table.columns {
			s := c.Name + ":" + c.Type
			if c.Format != "" {
				s += ":" + c.Format
			}
			switch c.Priority {
			case 0:
			case 1:
				s += ":wide"
			default:
				s += fmt.Sprintf(":priority %d", c.Priority)
			}
			got = append(got, s)
			if c.Description == "" {
				t.Errorf("%s: column %s has no description", k.GVK(), c.Name)
			}
		}
		if strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Errorf("%s columns:\n got %s\nwant %s", k.GVK(), strings.Join(got, ", "), strings.Join(want, ", "))
		}
		if !HasColumns(obj) {
			t.Errorf("%s has only the default table of an unknown kind", k.GVK())
		}
	}
}
