// Package network is the node agent's pod network, what a flannel-like
// CNI daemon does in Kubernetes (there, not the kubelet's job): with
// --manage-pod-network the agent
//
//   - writes the CNI configuration of its Node's spec.podCIDR, assigned by
//     the controller-manager's nodeipam controller, into --cni-conf-dir
//     (cni.go: ConflistName, a bridge "cni0" with host-local addresses
//     from the podCIDR, and portmap), atomically and only when its content
//     changes. Until then Problem says why the pod network is not ready:
//     the agent reports its Node NotReady and creates no pod sandbox;
//   - keeps, in the main routing table, a route to every other node's pod
//     subnet through that node's InternalIP (routes.go: DesiredRoutes, a
//     pure function of the Nodes; Plan, the changes to get there). The
//     routes are installed with their own protocol number (RouteProtocol,
//     83), which is how the agent finds the routes it installed, also
//     after a restart, and never touches anyone else's; and only routes to
//     subnets inside --cluster-cidr are touched at all.
//
// Manager (manager.go) runs both over an informer of every Node: at once on
// a change, and every Resync (30 s) to repair what someone else removed.
// The kernel is reached through a Router: netlink on Linux (netlink.go), an
// in-memory one for tests and simulated nodes (MemoryRouter).
package network
