package apiserver

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc"
	"go.etcd.io/etcd/server/v3/proxy/grpcproxy/adapter"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
)

// inProcessClient is etcd's in-process client (v3client: direct calls,
// no sockets) whose requests carry no gRPC peer. The storage passes the
// contexts of the apiserver's own requests down, and etcd, whose client
// port requires certificates (ClientCertAuth), reads the peer of a
// request's context as its client's TLS connection: it would take an API
// client's connection (or the HTTP API's, which is no TLS info at all, and
// panic) for its own.
func inProcessClient(s *etcdserver.EtcdServer) *clientv3.Client {
	c := v3client.New(s)
	c.KV = clientv3.NewKVFromKVClient(noPeerKV{adapter.KvServerToKvClient(v3rpc.NewQuotaKVServer(s))}, c)
	_ = c.Lease.Close() // v3client's, replaced before any use
	c.Lease = clientv3.NewLeaseFromLeaseClient(noPeerLease{adapter.LeaseServerToLeaseClient(v3rpc.NewQuotaLeaseServer(s))}, c, time.Second)
	return c
}

// noPeer is ctx without its gRPC peer.
func noPeer(ctx context.Context) context.Context {
	if _, ok := peer.FromContext(ctx); !ok {
		return ctx
	}
	return peer.NewContext(ctx, nil)
}

type noPeerKV struct{ pb.KVClient }

func (k noPeerKV) Range(ctx context.Context, in *pb.RangeRequest, opts ...grpc.CallOption) (*pb.RangeResponse, error) {
	return k.KVClient.Range(noPeer(ctx), in, opts...)
}

func (k noPeerKV) RangeStream(ctx context.Context, in *pb.RangeRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[pb.RangeStreamResponse], error) {
	return k.KVClient.RangeStream(noPeer(ctx), in, opts...)
}

func (k noPeerKV) Put(ctx context.Context, in *pb.PutRequest, opts ...grpc.CallOption) (*pb.PutResponse, error) {
	return k.KVClient.Put(noPeer(ctx), in, opts...)
}

func (k noPeerKV) DeleteRange(ctx context.Context, in *pb.DeleteRangeRequest, opts ...grpc.CallOption) (*pb.DeleteRangeResponse, error) {
	return k.KVClient.DeleteRange(noPeer(ctx), in, opts...)
}

func (k noPeerKV) Txn(ctx context.Context, in *pb.TxnRequest, opts ...grpc.CallOption) (*pb.TxnResponse, error) {
	return k.KVClient.Txn(noPeer(ctx), in, opts...)
}

func (k noPeerKV) Compact(ctx context.Context, in *pb.CompactionRequest, opts ...grpc.CallOption) (*pb.CompactionResponse, error) {
	return k.KVClient.Compact(noPeer(ctx), in, opts...)
}

type noPeerLease struct{ pb.LeaseClient }

func (l noPeerLease) LeaseGrant(ctx context.Context, in *pb.LeaseGrantRequest, opts ...grpc.CallOption) (*pb.LeaseGrantResponse, error) {
	return l.LeaseClient.LeaseGrant(noPeer(ctx), in, opts...)
}

func (l noPeerLease) LeaseRevoke(ctx context.Context, in *pb.LeaseRevokeRequest, opts ...grpc.CallOption) (*pb.LeaseRevokeResponse, error) {
	return l.LeaseClient.LeaseRevoke(noPeer(ctx), in, opts...)
}

func (l noPeerLease) LeaseKeepAlive(ctx context.Context, opts ...grpc.CallOption) (grpc.BidiStreamingClient[pb.LeaseKeepAliveRequest, pb.LeaseKeepAliveResponse], error) {
	return l.LeaseClient.LeaseKeepAlive(noPeer(ctx), opts...)
}

func (l noPeerLease) LeaseTimeToLive(ctx context.Context, in *pb.LeaseTimeToLiveRequest, opts ...grpc.CallOption) (*pb.LeaseTimeToLiveResponse, error) {
	return l.LeaseClient.LeaseTimeToLive(noPeer(ctx), in, opts...)
}
