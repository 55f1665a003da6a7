package authz

import (
	"flag"
	"fmt"
	"slices"
	"strings"
)

// The authorization modes, in the spelling of --authorization-mode.
const (
	// ModeAlwaysAllow allows every request (development only).
	ModeAlwaysAllow = "AlwaysAllow"
	// ModeNode lets a node agent (user system:node:<name> in group
	// system:nodes) do what the agent needs, and only that: its own Node,
	// Lease and the pods bound to it (see node.go).
	ModeNode = "Node"
	// ModeRBAC is role-based access control: Roles, ClusterRoles and their
	// bindings.
	ModeRBAC = "RBAC"
)

// Modes lists the known modes.
var Modes = []string{ModeAlwaysAllow, ModeNode, ModeRBAC}

// DefaultModes is the command's --authorization-mode.
var DefaultModes = []string{ModeNode, ModeRBAC}

// Options are the authz flags of skiff-apiserver. The zero value is off:
// no authorizer, every authenticated request is allowed (in-process tests
// start so). The command's default is Node,RBAC.
type Options struct {
	// Modes are asked in order; the first that allows or denies a request
	// decides it, one without an opinion passes it on. None left: denied.
	Modes []string
}

// Enabled says whether requests are authorized at all.
func (o Options) Enabled() bool { return len(o.Modes) > 0 }

// Has says whether mode m is on.
func (o Options) Has(m string) bool { return slices.Contains(o.Modes, m) }

// AddFlags registers the options' flags on fs, with the command's default
// (Node,RBAC) when no mode is set yet.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	if o.Modes == nil {
		o.Modes = slices.Clone(DefaultModes)
	}
	fs.Var((*modesFlag)(o), "authorization-mode",
		"comma-separated `modes`, asked in order until one allows or denies a request: "+
			"Node (a node agent, user system:node:<name> in group system:nodes, may read the nodes, the pods bound to it and the ConfigMaps they use, "+
			"and write only its own Node, its Lease and its pods' status), "+
			"RBAC (Roles, ClusterRoles and their bindings; bootstrap roles for the control plane are created at start), "+
			"AlwaysAllow (every request: development only). "+
			"Members of system:masters are always allowed")
}

// Validate checks the modes, naming the flag at fault.
func (o Options) Validate() error {
	if err := validateModes(o.Modes); err != nil {
		return fmt.Errorf("--authorization-mode: %w", err)
	}
	return nil
}

func validateModes(modes []string) error {
	for i, m := range modes {
		if !slices.Contains(Modes, m) {
			hint := ""
			for _, known := range Modes {
				if strings.EqualFold(known, m) {
					hint = fmt.Sprintf(" (did you mean %q? modes are case-sensitive)", known)
				}
			}
			return fmt.Errorf("unknown mode %q%s; the modes are %s", m, hint, strings.Join(Modes, ", "))
		}
		if slices.Contains(modes[:i], m) {
			return fmt.Errorf("mode %q is given more than once", m)
		}
	}
	return nil
}

// modesFlag is --authorization-mode as a flag.Value.
type modesFlag Options

func (f *modesFlag) String() string { return strings.Join(f.Modes, ",") }

func (f *modesFlag) Set(v string) error {
	var modes []string
	for m := range strings.SplitSeq(v, ",") {
		if m = strings.TrimSpace(m); m != "" {
			modes = append(modes, m)
		}
	}
	if len(modes) == 0 {
		return fmt.Errorf("at least one mode is needed (%s); AlwaysAllow turns authorization off", strings.Join(Modes, ", "))
	}
	if err := validateModes(modes); err != nil {
		return err
	}
	f.Modes = modes
	return nil
}
