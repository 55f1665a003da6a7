package openapi

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Schema names of the types Skiff's proto holds as scalars, and the
// Kubernetes types of Skiff messages whose Kubernetes package differs
// from their proto package.
const (
	quantityName    = "io.k8s.apimachinery.pkg.api.resource.Quantity"
	intOrStringName = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
	timeName        = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
	microTimeName   = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
	fieldsV1Name    = "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"

	protoIntOrString = "skiff.meta.v1.IntOrString"
	protoTimestamp   = "google.protobuf.Timestamp"
	protoFieldsV1    = "skiff.meta.v1.FieldsV1"
)

// renamed are Skiff messages whose Kubernetes type lives in another
// package than the proto message's.
var renamed = map[protoreflect.FullName]string{
	"skiff.apps.v1.Scale":         "io.k8s.api.autoscaling.v1.Scale",
	"skiff.apps.v1.ScaleSpec":     "io.k8s.api.autoscaling.v1.ScaleSpec",
	"skiff.apps.v1.ScaleStatus":   "io.k8s.api.autoscaling.v1.ScaleStatus",
	"skiff.core.v1.DeleteOptions": "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
}

// schemaName is the name Kubernetes gives the Go type of a Skiff message:
// skiff.<group>.<version>.<Name> is io.k8s.api.<group>.<version>.<Name>,
// and skiff.meta.v1 is apimachinery's meta/v1.
func schemaName(md protoreflect.MessageDescriptor) (string, error) {
	if n, ok := renamed[md.FullName()]; ok {
		return n, nil
	}
	rest, ok := strings.CutPrefix(string(md.FullName()), "skiff.")
	if !ok || strings.Count(rest, ".") != 2 {
		return "", fmt.Errorf("message %s is not of a Skiff API package (skiff.<group>.<version>)", md.FullName())
	}
	if m, ok := strings.CutPrefix(rest, "meta."); ok {
		return "io.k8s.apimachinery.pkg.apis.meta." + m, nil
	}
	return "io.k8s.api." + rest, nil
}

// operationGroup is a group as Kubernetes writes it in operation ids:
// "Core" for the core group, "RbacAuthorization" for
// rbac.authorization.k8s.io; tagGroup is its lower-camel form in tags.
func operationGroup(group string) string {
	if group == "" {
		return "Core"
	}
	var b strings.Builder
	for part := range strings.SplitSeq(strings.TrimSuffix(group, ".k8s.io"), ".") {
		b.WriteString(upperFirst(part))
	}
	return b.String()
}

func tag(group, version string) string {
	g := operationGroup(group)
	return strings.ToLower(g[:1]) + g[1:] + "_" + version
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// docPath is the /openapi/v3 key of a group version: "api/v1",
// "apis/apps/v1".
func docPath(group, version string) string {
	if group == "" {
		return "api/" + version
	}
	return "apis/" + group + "/" + version
}
