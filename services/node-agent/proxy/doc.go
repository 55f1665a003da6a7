// Package proxy is the node agent's service proxy, Skiff's kube-proxy in
// its nftables mode: it makes a Service's ClusterIP:port (and NodePort on
// the node's addresses) reach the Service's endpoints, by programming one
// nftables table, "ip skiff-proxy" (TableName), that it owns whole.
//
// The data flow, one file per stage:
//
//	snapshot.go  BuildSnapshot: Services + EndpointSlices -> Snapshot, the
//	             plain model of what to program: per service port its
//	             ClusterIP, NodePort, affinity, and the endpoints its
//	             traffic goes to (ready ones; serving terminating ones
//	             when none is ready; under internalTrafficPolicy Local,
//	             only this node's for ClusterIP traffic). Pure.
//	rules.go     WriteTable: Snapshot -> one knftables transaction that
//	             makes the table hold exactly that. Pure.
//	proxier.go   Proxier: holds the latest objects (On* methods, or
//	             informers through NewFromInformers), syncs at most every
//	             MinSync, applies the transaction, deletes stale chains,
//	             records what was applied (Applied, Config.OnApplied), and
//	             clears conntrack of removed UDP endpoints.
//	netns_linux.go  running nft in another network namespace (tests, the
//	             bench): a goroutine locked to an OS thread in the namespace
//	             starts every nft process, which is born there.
//	conntrack_linux.go  deleting UDP conntrack entries through netlink.
//
// # The table
//
// Base chains hook nat prerouting (pods, the outside), nat output (the
// node's own processes), nat postrouting, and filter input/forward/output
// (before DNAT). Packets to ClusterIP . proto . port meet the verdict map
// service-ips; packets to a NodePort on a node address are marked for
// masquerading and meet service-nodeports; both go to the port's chain
// ("service-HASH-ns/name/proto/port", or "local-..." for ClusterIP
// traffic under internalTrafficPolicy Local when this node's endpoints
// are not all of them). Without session affinity that chain is one rule
// that picks an endpoint at random and DNATs to it:
//
//	meta l4proto tcp dnat ip addr . port to numgen random mod 2 map { 0 : 10.244.1.2 . 8080, 1 : 10.244.2.3 . 8080 }
//
// With ClientIP affinity the port chain sends a client found in an
// endpoint's affinity set (a dynamic set whose timeout is the affinity
// timeout, and is in its name) to that endpoint's chain
// ("endpoint-...__ip/port"), else one at random (numgen); the endpoint
// chain adds the client to its set and DNATs. Ports without endpoints
// are in no-endpoint-services / no-endpoint-nodeports, whose verdict
// rejects new connections at once (drops them when only
// internalTrafficPolicy Local leaves none here, as Kubernetes).
//
// Masquerading, as kube-proxy: a packet is marked (MasqueradeMark) and
// source-NATed in postrouting when it comes to a NodePort (it may leave
// for another node), when it comes to a ClusterIP from outside the
// cluster CIDR (a process of the node), or when an endpoint reaches
// itself through its Service (hairpin: in postrouting, a DNATed packet
// whose source . destination is in the set hairpin-pairs, which holds
// ip . ip for every endpoint on this node). Besides, pod traffic leaving
// the cluster CIDR is masqueraded (ip saddr CIDR ip daddr != CIDR).
// Same-node pod-to-Service traffic on a bridge needs br_netfilter (the
// endpoint's reply is bridged, and must still be un-DNATed), as for
// kube-proxy.
//
// The layout is kube-proxy's, with fewer objects: kube-proxy gives every
// endpoint a chain and every NodePort an "external" chain; here only
// affinity needs endpoint chains, and the NodePort mark is one rule
// (the lookup of the packet in service-nodeports' keys). For 1,000
// Services of 10 endpoints with NodePorts that is 1,012 chains and
// about 1,000 rules and 3,000 map and set elements instead of 12,000
// chains and 24,000 rules.
//
// A node process's connection to a Service without endpoints is refused
// by an ICMP error the kernel sends to the node's own address, through
// the loopback interface, which must be up (it is on any real host; a
// test network namespace must bring it up).
//
// # Syncs
//
// Every sync writes the whole table in one transaction: the fixed chains,
// maps and sets are created if missing and flushed, every service port's
// chains are created and flushed and written anew, the chains of ports
// that are gone are flushed (and deleted by a later transaction, a second
// on: kernels before 6.2 refuse to delete a chain a just-removed map
// element pointed to, as kube-proxy found), their affinity sets deleted.
// The first sync of a Proxier (an agent start), and the first after a
// failed one, does not know what the table holds and does not list it:
// its transaction deletes the table and writes it anew, without any
// flush. The transaction is atomic: the kernel switches from the old
// rules to the new between two packets. Established connections do not
// depend on the rules (conntrack holds their NAT), so a restarted agent
// drops none (the kernel test checks it); its affinity sets start empty.
// A running agent's affinity sets keep their contents across syncs.
//
// MinSync (500 ms; kube-proxy's default is 1 s) bounds the rate of
// syncs: a change after a quiet period is applied at once; changes that
// come faster are batched, two syncs a second at most. Without changes the table is rewritten
// every SyncPeriod (1 h) anyway. A sync whose Snapshot is the one applied
// last is skipped. A sync after a change leaves the chains whose rules
// are the same as they are (the Proxier remembers what each holds) and
// rewrites the others and the maps; the periodic and the first sync
// rewrite every chain. What a sync costs: a few ms for a few Services;
// for 1,000 NodePort Services of 10 endpoints (bench figure
// services.sync_1000_ms, target 500 ms, on the idle 2-core development
// machine) about 320-330 ms for an agent's first sync, 400-420 ms for a
// full resync, 100-110 ms for one changed Service (the maps are still
// written whole). nft -f alone of the same transaction takes 280 ms, and
// of just the fixed chains and maps holding 11,000 elements 200 ms: the
// floor of this way of writing (one nft process parsing text). Before
// this layout: 1,980 ms (24,017 rules, 12,012 chains).
//
// # Why knftables
//
// sigs.k8s.io/knftables is the library kube-proxy's nftables mode uses,
// maintained by Kubernetes SIG Network. It drives the nft binary, so a
// transaction is nft's own text syntax (what the nftables documentation
// and `nft list table ip skiff-proxy` show), applied by `nft -f` as one
// kernel transaction; and it ships an in-memory Fake with the same
// Interface, which the table tests here trace packets through. Its cost
// is one nft process per transaction. (github.com/google/nftables speaks
// netlink directly, but rules are then built as bytecode expressions,
// far from the documented syntax, and has no fake.)
//
// The package owns nothing else: not the pod network (package network),
// not DNS, not the agent's wiring (Config is meant to be filled from the
// agent's flags: NodeName, NodeIPs, ClusterCIDR).
package proxy
