// Command kubectl is Kubernetes' kubectl, built from k8s.io/kubectl's
// command package at the version hack/tools/go.mod pins, so that Skiff's
// HTTP API tests drive the real client (issue 22). It is cmd/kubectl of
// k8s.io/kubernetes, line for line: that main is not in any module the
// Go module proxy serves on its own (k8s.io/kubernetes is not meant to be
// required), so this module carries its few lines.
//
// Its version (kubectl version's clientVersion) comes from -ldflags, as
// Kubernetes' release build sets it: see build.sh.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	// The client auth plugins (exec, oidc), as the released kubectl has.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

func main() {
	// The verbosity is read before the flags are parsed (inside
	// RunNoErrOutput) so that klog logs at -v while the command is built:
	// plugins and .kuberc are handled then.
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) // nolint:errcheck
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		// kubectl's own error printing and exit codes.
		util.CheckErr(err)
	}
}
