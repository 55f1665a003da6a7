// Package server is the apiserver's wire: thin gRPC handlers over the
// generic registry, one generic Endpoint type instantiated per kind and
// served version, the request chain (interceptors: request info and id,
// metrics, logs, error mapping), strict request decoding (decode.go: bodies
// that do not decode and writes with unknown fields are BadRequests),
// discovery, health and reflection. A watch
// event is encoded once per served version and the same bytes go to every
// watcher (a pass-through codec sends them as they are); a watcher that is
// behind gets several events in one message.
package server
