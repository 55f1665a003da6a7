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
//   - keeps (Backend routes, the default), in the main routing table, a
//     route to every other node's pod subnet through that node's
//     InternalIP (routes.go: DesiredRoutes, a pure function of the Nodes;
//     Plan, the changes to get there). The routes are installed with
//     their own protocol number (RouteProtocol, 83), which is how the
//     agent finds the routes it installed, also after a restart, and never
//     touches anyone else's; and only routes to subnets inside
//     --cluster-cidr are touched at all. That needs the nodes on one L2
//     segment: the kernel takes no gateway it cannot reach directly;
//   - or, with --pod-network-backend=vxlan (Backend, vxlan.go), reaches
//     them through an overlay as flannel's vxlan backend does: a VXLAN
//     device (VXLANDevice, skiff.vxlan) bound to the node's InternalIP,
//     learning off, MTU its device's less VXLANOverhead, addressed with
//     its pod subnet's first address (10.244.1.0/32), whose MAC the agent
//     publishes on its own Node (annotation AnnVTEPMAC). For every other
//     node with a MAC: an FDB entry (MAC -> its InternalIP), a permanent
//     neighbour (its 10.244.2.0 -> MAC) and the route "10.244.2.0/24 via
//     10.244.2.0 dev skiff.vxlan onlink", with the same protocol number.
//     DesiredVXLAN is the pure function of the Nodes, PlanEntries the
//     changes to the FDB and the neighbours; the nodes need only reach
//     each other's InternalIPs over UDP (--vxlan-port). The CNI
//     configuration gives the pods the device's MTU (ConflistMTU), and is
//     written only once the device is up.
//
// Manager (manager.go) runs both over an informer of every Node: at once on
// a change, and every Resync (30 s) to repair what someone else removed.
// The kernel is reached through a Router (routes) and an Overlay (the VXLAN
// device and its entries): netlink on Linux (netlink.go, vxlan_linux.go),
// in memory for tests and simulated nodes (MemoryRouter, MemoryOverlay).
package network
