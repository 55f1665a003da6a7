// Package dns is the cluster DNS server the node agent embeds (CoreDNS
// with its kubernetes, forward and loadbalance plugins, in Kubernetes),
// built on github.com/miekg/dns. It answers the names of the Kubernetes
// DNS specification from an in-memory Index of the Services and
// EndpointSlices its informers deliver, and forwards every other name to
// the node's upstream resolvers.
//
// Names of the zone (Config.Zone, the cluster domain, cluster.local by
// default), with TTL 5 s:
//
//	<svc>.<ns>.svc.<zone>               A: the ClusterIP; for a headless Service
//	                                    (clusterIP None) the addresses of its
//	                                    ready endpoints (all of them with
//	                                    publishNotReadyAddresses); for an
//	                                    ExternalName Service a CNAME to
//	                                    spec.externalName, followed
//	<endpoint>.<svc>.<ns>.svc.<zone>    A: the endpoint whose hostname, or
//	                                    dashed address (10-244-1-5), is <endpoint>
//	_<port>._<proto>.<svc>.<ns>.svc.<zone>
//	                                    SRV of a named port: the Service's name
//	                                    (headless: each endpoint's name) and
//	                                    port, with their A records as
//	                                    additional records
//	<a-b-c-d>.<ns>.pod.<zone>           A: a.b.c.d (CoreDNS's "pods insecure")
//	d.c.b.a.in-addr.arpa                PTR of a ClusterIP or an endpoint
//	dns-version.<zone>                  TXT: the specification's version, 1.1.0
//
// Addresses are IPv4 only: AAAA is NODATA for a name that exists. A name of
// the zone that does not exist is NXDOMAIN (and SERVFAIL until the
// informers have synced, as CoreDNS answers); <zone>, svc.<zone>,
// pod.<zone> and <ns>.svc.<zone> exist without records (NODATA). Negative
// answers carry the zone's SOA. The rules, including the odd ones (a
// headless Service without ready endpoints is NXDOMAIN), are CoreDNS's
// kubernetes plugin's.
//
// Everything else goes to the upstream resolvers (Config.Upstreams, or the
// nameservers of a resolv.conf; never the server's own address): in their
// order, over UDP and again over TCP when an answer is truncated, all
// within Config.Timeout, after which the client gets SERVFAIL with an
// extended DNS error (RFC 8914) saying why. At most
// Config.MaxConcurrentForwards are in flight; beyond, REFUSED at once.
// Nothing is cached (CoreDNS's cache plugin is not reproduced), and the
// resolv.conf is read once, by New.
//
// The files, in the order a query meets them:
//
//	server.go   New (binds UDP and TCP), Run, ServeDNS: which part answers
//	names.go    a name of the zone taken apart (parseName), reverse names
//	index.go    the Index: Services and EndpointSlices by key, and per
//	            Service its records, rebuilt whole on each change
//	view.go     buildView, the pure function from a Service and its slices
//	            to its records; lookup, a parsed name to its records
//	answer.go   records to a DNS message (A, SRV, PTR, CNAME, SOA)
//	forward.go  the upstream resolvers
//	metrics.go  skiff_node_dns_* metrics
//
// Wiring: build the Service, EndpointSlice (and, optionally, Namespace)
// informers from the agent's shared factory, New(Config, Informers), start
// the factory, Run. The package owns neither the informers nor the pods'
// resolv.conf.
package dns
