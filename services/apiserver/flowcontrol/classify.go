package flowcontrol

import "skiff.dev/services/apiserver/user"

// schema is a flow schema: which users a rule matches and the priority
// level it sends them to.
type schema int

const (
	exempt schema = iota
	systemNodes
	kubeScheduler
	kubeControllerManager
	globalDefault
	numSchemas
)

// Priority levels.
const (
	levelSystem   = "system"
	levelWorkload = "workload"
)

var schemas = [numSchemas]struct{ name, level string }{
	exempt:                {"exempt", "exempt"},
	systemNodes:           {"system-nodes", levelSystem},
	kubeScheduler:         {"kube-scheduler", levelSystem},
	kubeControllerManager: {"kube-controller-manager", levelSystem},
	globalDefault:         {"global-default", levelWorkload},
}

// loopbackAuthenticator is user.Info.Authenticator of the apiserver's own
// loopback connection; a client certificate naming system:apiserver is
// not exempt.
const loopbackAuthenticator = "loopback"

// classify finds the flow schema of a user.
func classify(u *user.Info) schema {
	if u == nil {
		return globalDefault
	}
	switch u.Name {
	case user.APIServer:
		if u.Authenticator == loopbackAuthenticator {
			return exempt
		}
	case user.Scheduler:
		return kubeScheduler
	case user.ControllerManager:
		return kubeControllerManager
	}
	if u.InGroup(user.NodesGroup) {
		return systemNodes
	}
	return globalDefault
}

// kind is read-only or mutating.
type kind int

const (
	readOnly kind = iota
	mutating
	numKinds
)

var kindNames = [numKinds]string{readOnly: "readOnly", mutating: "mutating"}

// kindOf classifies a verb: create, update and delete mutate; get, list,
// watch and the verbs of non-resource services (discovery) only read.
func kindOf(verb string) kind {
	switch verb {
	case "create", "update", "delete", "patch", "deletecollection":
		return mutating
	}
	return readOnly
}
