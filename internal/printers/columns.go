package printers

import (
	"time"

	"skiff.dev/internal/kfields"
	"skiff.dev/internal/object"
	admissionregistrationv1 "skiff.dev/proto/admissionregistration/v1"
	appsv1 "skiff.dev/proto/apps/v1"
	appsv1beta1 "skiff.dev/proto/apps/v1beta1"
	certificatesv1 "skiff.dev/proto/certificates/v1"
	coordinationv1 "skiff.dev/proto/coordination/v1"
	corev1 "skiff.dev/proto/core/v1"
	discoveryv1 "skiff.dev/proto/discovery/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
)

// Column is one column of a kind's table, as Kubernetes declares it (a
// meta.k8s.io/v1 TableColumnDefinition, in
// k8s.io/kubernetes/pkg/printers/internalversion, whose JSON it is).
type Column struct {
	// Name is Kubernetes' ("Nominated Node"); kubectl prints it
	// upper-cased.
	Name string `json:"name"`
	// Type is the OpenAPI type Kubernetes declares: string, integer,
	// boolean or date. Cells hold what Kubernetes' printer puts there,
	// which the type does not always say: an event's Count is a string
	// column of integers, as in kube-apiserver's answers.
	Type string `json:"type"`
	// Format is "name" on the column of the object's name.
	Format      string `json:"format"`
	Description string `json:"description"`
	// Priority is 0 for the columns kubectl always prints, 1 for those
	// of -o wide only.
	Priority int32 `json:"priority"`
}

// kindTable is a kind's columns and its cells: one per column, a
// string, an int64 or a bool as Kubernetes' printer has it. kubectl
// prints a cell as fmt.Sprint does.
type kindTable struct {
	columns []Column
	cells   func(obj object.Object, now time.Time) []any
}

// Kubernetes' descriptions of its columns are mostly its fields' (the
// SwaggerDoc of k8s.io/api, which kfields holds).
func doc(typeName, field string) string { return kfields.Doc(typeName, field) }

var (
	nameColumn = Column{Name: "Name", Type: "string", Format: "name", Description: doc("meta/v1.ObjectMeta", "name")}
	ageColumn  = Column{Name: "Age", Type: "string", Description: doc("meta/v1.ObjectMeta", "creationTimestamp")}
	// The columns of a pod template's containers, in -o wide.
	containersColumn = Column{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."}
	imagesColumn     = Column{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."}
)

// column is a string column of priority 0.
func column(name, description string) Column {
	return Column{Name: name, Type: "string", Description: description}
}

// typed is c with Kubernetes' type for it.
func typed(typ string, c Column) Column {
	c.Type = typ
	return c
}

// wide is c as an -o wide column.
func wide(c Column) Column {
	c.Priority = 1
	return c
}

// selectorColumn is the -o wide SELECTOR of a kind whose selector is
// typeName's field selector.
func selectorColumn(typeName string) Column {
	return wide(column("Selector", doc(typeName, "selector")))
}

// defaultTable is Kubernetes' table of a kind without a printer of its
// own (the apiserver's default table convertor): NAME and CREATED AT, a
// date.
var defaultTable = kindTable{[]Column{
	nameColumn,
	{Name: "Created At", Type: "date", Description: doc("meta/v1.ObjectMeta", "creationTimestamp")},
}, createdAtCells}

func tableOf(obj object.Object) kindTable {
	if t, ok := ownTable(obj); ok {
		return t
	}
	return defaultTable
}

// HasColumns says whether skiffctl has table columns of obj's kind (as
// kubectl's), not only the default table of a kind it does not know (the
// conformance test requires them of every kind).
func HasColumns(obj object.Object) bool {
	_, ok := ownTable(obj)
	return ok
}

// ownTable is the table of obj's kind, if it has its own. Limit ranges
// and roles have Kubernetes' default table: kube-apiserver has no
// printer of them either.
func ownTable(obj object.Object) (kindTable, bool) {
	switch obj.(type) {
	case *corev1.Pod:
		return podTable, true
	case *appsv1.Deployment, *appsv1beta1.Deployment:
		return deploymentTable, true
	case *appsv1.ReplicaSet:
		return replicaSetTable, true
	case *corev1.Node:
		return nodeTable, true
	case *corev1.Namespace:
		return namespaceTable, true
	case *corev1.Event:
		return eventTable, true
	case *coordinationv1.Lease:
		return leaseTable, true
	case *corev1.ConfigMap:
		return configMapTable, true
	case *corev1.Secret:
		return secretTable, true
	case *corev1.ResourceQuota:
		return resourceQuotaTable, true
	case *rbacv1.RoleBinding:
		return roleBindingTable, true
	case *rbacv1.ClusterRoleBinding:
		return clusterRoleBindingTable, true
	case *admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration:
		return webhookConfigurationTable, true
	case *corev1.ServiceAccount:
		return serviceAccountTable, true
	case *corev1.Service:
		return serviceTable, true
	case *discoveryv1.EndpointSlice:
		return endpointSliceTable, true
	case *certificatesv1.CertificateSigningRequest:
		return csrTable, true
	case *corev1.LimitRange, *rbacv1.Role, *rbacv1.ClusterRole:
		return defaultTable, true
	}
	return workloadTable(obj)
}
