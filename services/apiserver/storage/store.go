package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/object"
)

// Magic prefixes every stored value.
var Magic = []byte("skf\x00")

// MaxObjectBytes is the largest encoded object accepted (1.5 MiB, as etcd's default request limit).
const MaxObjectBytes = 3 << 19

// Encoding needs no determinism: no-op updates are found with proto.Equal,
// never by comparing bytes.
var marshalOpts = proto.MarshalOptions{}

// Store keeps one kind, stored as Go type T, in etcd.
type Store[T object.Object] struct {
	client   *clientv3.Client
	watcher  Watcher
	resource string // plural name, for errors and metrics
	prefix   string // "/registry/<group>/<resource>/"
	newObj   func() T
	metrics  *Metrics
	// transformer encrypts values at rest (nil: stored plain).
	transformer Transformer
	// guard ends writes lost with a leader (nil: none).
	guard *LeaderGuard
}

// Transformer turns an encoded object into the value stored under an
// etcd key and back (encryption at rest, package encryption). FromStorage
// also says whether the value was written with a provider other than the
// one that writes now. Errors must not carry the value.
type Transformer interface {
	ToStorage(key string, plain []byte) ([]byte, error)
	FromStorage(key string, stored []byte) (plain []byte, stale bool, err error)
}

// SetTransformer makes every write go through t.ToStorage and every read
// through t.FromStorage. Call it before the store is used.
func (s *Store[T]) SetTransformer(t Transformer) { s.transformer = t }

// New returns a Store for one resource. group "" is stored as "core";
// watcher streams changes (nil: through client).
func New[T object.Object](client *clientv3.Client, watcher Watcher, group, resource string, newObj func() T, m *Metrics) *Store[T] {
	if watcher == nil {
		watcher = ClientWatcher{Client: client}
	}
	if group == "" {
		group = "core"
	}
	return &Store[T]{
		client:   client,
		watcher:  watcher,
		resource: resource,
		prefix:   "/registry/" + group + "/" + resource + "/",
		newObj:   newObj,
		metrics:  m,
	}
}

// SetLeaderGuard makes g end this store's writes lost with etcd's leader.
// Call it before the store is used.
func (s *Store[T]) SetLeaderGuard(g *LeaderGuard) { s.guard = g }

// Prefix is the key prefix of every object of this resource.
func (s *Store[T]) Prefix() string { return s.prefix }

// Resource is the plural resource name.
func (s *Store[T]) Resource() string { return s.resource }

// Watcher starts etcd watches of this store's keys.
func (s *Store[T]) Watcher() Watcher { return s.watcher }

// Client is the etcd client the store uses.
func (s *Store[T]) Client() *clientv3.Client { return s.client }

// Key is the etcd key of an object; namespace "" means cluster-scoped.
func (s *Store[T]) Key(namespace, name string) string {
	if namespace == "" {
		return s.prefix + name
	}
	return s.prefix + namespace + "/" + name
}

// NamespacePrefix is the key prefix of one namespace's objects ("" = all).
func (s *Store[T]) NamespacePrefix(namespace string) string {
	if namespace == "" {
		return s.prefix
	}
	return s.prefix + namespace + "/"
}

// Encode returns the stored form of obj: magic + protobuf,
// without resourceVersion. obj is not modified.
func Encode(obj object.Object) ([]byte, error) {
	rv := obj.GetMetadata().GetResourceVersion()
	if rv != "" {
		obj.GetMetadata().ResourceVersion = ""
		defer func() { obj.GetMetadata().ResourceVersion = rv }()
	}
	buf := make([]byte, len(Magic), len(Magic)+marshalOpts.Size(obj))
	copy(buf, Magic)
	return marshalOpts.MarshalAppend(buf, obj)
}

// toStorage encodes obj, checks its size and transforms it into the value
// stored under key.
func (s *Store[T]) toStorage(key string, obj T) ([]byte, error) {
	data, err := Encode(obj)
	if err != nil {
		return nil, apierrors.NewInternal(err)
	}
	if err := s.checkSize(obj.GetMetadata().GetName(), data); err != nil {
		return nil, err
	}
	if s.transformer == nil {
		return data, nil
	}
	if data, err = s.transformer.ToStorage(key, data); err != nil {
		return nil, apierrors.NewInternal(err)
	}
	return data, nil
}

// payload decrypts a value stored under key and strips the magic.
func (s *Store[T]) payload(key string, data []byte) ([]byte, error) {
	if s.transformer != nil {
		plain, _, err := s.transformer.FromStorage(key, data)
		if err != nil {
			return nil, err
		}
		data = plain
	}
	if !bytes.HasPrefix(data, Magic) {
		return nil, fmt.Errorf("%s: stored value has no %q prefix: not written by skiff", s.resource, Magic)
	}
	return data[len(Magic):], nil
}

// Decode parses the value stored under key into a new T and sets its
// resourceVersion.
func (s *Store[T]) Decode(key string, data []byte, rev int64) (T, error) {
	obj := s.newObj()
	payload, err := s.payload(key, data)
	if err != nil {
		return obj, err
	}
	if err := proto.Unmarshal(payload, obj); err != nil {
		return obj, fmt.Errorf("%s: decoding stored object: %w", s.resource, err)
	}
	object.Meta(obj).ResourceVersion = strconv.FormatInt(rev, 10)
	return obj, nil
}

// bytesString views data as a string without copying it; data must not
// change afterwards (encoded values are written once and dropped).
func bytesString(data []byte) string { return unsafe.String(unsafe.SliceData(data), len(data)) }

// Raw turns the value stored under key into the object's wire encoding at
// revision rev (decrypted, when a Transformer is set): the stored protobuf (which has no resourceVersion) followed by a
// second `metadata {resource_version: rev}` field. Protobuf decoders merge
// repeated occurrences of a message field, so this decodes exactly as the
// object with its resourceVersion set, with no decoding or re-encoding
// here. The result is a new slice.
func (s *Store[T]) Raw(key string, data []byte, rev int64) ([]byte, error) {
	payload, err := s.payload(key, data)
	if err != nil {
		return nil, err
	}
	return WithResourceVersion(payload, rev), nil
}

// WithResourceVersion returns a copy of an encoded object whose
// resourceVersion reads as rev (see Raw).
func WithResourceVersion(encoded []byte, rev int64) []byte {
	var rv [20]byte
	rvs := strconv.AppendInt(rv[:0], rev, 10)
	metaLen := 1 + protowire.SizeBytes(len(rvs))
	out := make([]byte, 0, len(encoded)+1+protowire.SizeBytes(metaLen))
	out = append(out, encoded...)
	out = protowire.AppendTag(out, 3, protowire.BytesType) // metadata
	out = protowire.AppendVarint(out, uint64(metaLen))
	out = protowire.AppendTag(out, 5, protowire.BytesType) // resource_version
	return protowire.AppendBytes(out, rvs)
}

// DecodeRaw decodes an object's wire encoding (see Raw) into a new T.
func (s *Store[T]) DecodeRaw(raw []byte) (T, error) {
	obj := s.newObj()
	if err := proto.Unmarshal(raw, obj); err != nil {
		return obj, fmt.Errorf("%s: decoding cached object: %w", s.resource, err)
	}
	return obj, nil
}

// SplitKey returns the namespace ("" for cluster-scoped kinds) and name of
// a key under this store's prefix. Names and namespaces never hold '/'.
func (s *Store[T]) SplitKey(key string) (namespace, name string) {
	rest := strings.TrimPrefix(key, s.prefix)
	if ns, name, ok := strings.Cut(rest, "/"); ok {
		return ns, name
	}
	return "", rest
}

// Scan calls fn with every stored value under prefix at one revision,
// which it returns.
func (s *Store[T]) Scan(ctx context.Context, prefix string, fn func(key string, value []byte, rev int64) error) (int64, error) {
	rev, _, _, err := s.pages(ctx, prefix, prefix, 0, 1000, func(kv *mvccpb.KeyValue) (bool, error) {
		return false, fn(string(kv.Key), kv.Value, kv.ModRevision)
	})
	return rev, err
}

// pages reads the keys under prefix from start on, batch at a time, all at
// revision rev (0: now), and calls fn with each until it says stop. It
// returns the revision read at and, when fn stopped, the key it stopped at
// and how many keys under prefix there are from that one on (etcd counts
// a range's keys with each batch).
func (s *Store[T]) pages(ctx context.Context, prefix, start string, rev, batch int64, fn func(*mvccpb.KeyValue) (stop bool, err error)) (int64, string, int64, error) {
	end := clientv3.GetPrefixRangeEnd(prefix)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(batch)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		t := time.Now()
		resp, err := s.readEtcd(ctx, start, opts...)
		s.metrics.observe("list", s.resource, t)
		if err != nil {
			return rev, "", 0, s.etcdError(err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for i, kv := range resp.Kvs {
			stop, err := fn(kv)
			if err != nil || stop {
				return rev, string(kv.Key), resp.Count - int64(i), err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return rev, "", 0, nil
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// ParseRV parses a resourceVersion string; "" is 0.
func ParseRV(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q: must be a non-negative integer", rv))
	}
	return n, nil
}

// CurrentRevision returns etcd's current revision with one cheap request.
func (s *Store[T]) CurrentRevision(ctx context.Context) (int64, error) {
	start := time.Now()
	resp, err := s.readEtcd(ctx, s.prefix, clientv3.WithCountOnly(), clientv3.WithLimit(1))
	s.metrics.observe("revision", s.resource, start)
	if err != nil {
		return 0, s.etcdError(err)
	}
	return resp.Header.Revision, nil
}

func (s *Store[T]) checkSize(name string, data []byte) error {
	if len(data) > MaxObjectBytes {
		return apierrors.NewTooLarge(s.resource, name, len(data), MaxObjectBytes)
	}
	return nil
}

// Create writes obj under key if the key does not exist. It returns obj
// with its resourceVersion set.
func (s *Store[T]) Create(ctx context.Context, key string, obj T) (T, error) {
	data, err := s.toStorage(key, obj)
	if err != nil {
		return obj, err
	}
	start := time.Now()
	wctx, done := s.guard.begin(ctx)
	resp, err := s.client.Txn(wctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, bytesString(data))).
		Commit()
	done()
	s.metrics.observe("create", s.resource, start)
	if err != nil {
		return obj, s.writeError(wctx, err)
	}
	if !resp.Succeeded {
		return obj, apierrors.NewAlreadyExists(s.resource, obj.GetMetadata().GetName())
	}
	object.Meta(obj).ResourceVersion = strconv.FormatInt(resp.Header.Revision, 10)
	return obj, nil
}

// Get reads one object; a missing key is NotFound.
func (s *Store[T]) Get(ctx context.Context, key, name string) (T, error) {
	start := time.Now()
	resp, err := s.readEtcd(ctx, key)
	s.metrics.observe("get", s.resource, start)
	var zero T
	if err != nil {
		return zero, s.etcdError(err)
	}
	if len(resp.Kvs) == 0 {
		return zero, apierrors.NewNotFound(s.resource, name)
	}
	return s.Decode(key, resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
}

// UpdateFunc computes the new state from the current one. It must not
// modify cur (it may be shared with the watch cache); it returns a new
// object, or cur itself for "no change", or an error to stop.
type UpdateFunc[T any] func(cur T) (T, error)

// GuaranteedUpdate applies tryUpdate to the current state and writes the
// result if nobody wrote in between, retrying on the fresh state otherwise.
// cached, when valid, is a recent state that saves the first read; a stale
// one only costs a retry.
func (s *Store[T]) GuaranteedUpdate(ctx context.Context, key, name string, cached T, tryUpdate UpdateFunc[T]) (T, error) {
	cur, haveCur := cached, any(cached) != nil && cached.ProtoReflect().IsValid()
	var zero T
	for {
		if !haveCur {
			var err error
			if cur, err = s.Get(ctx, key, name); err != nil {
				return zero, err
			}
		}
		curRev, err := ParseRV(cur.GetMetadata().GetResourceVersion())
		if err != nil {
			return zero, apierrors.NewInternal(err)
		}
		next, err := tryUpdate(cur)
		if err != nil {
			return zero, err
		}
		if any(next) == any(cur) {
			if stale, err := s.stale(ctx, key, curRev); err != nil || !stale {
				return cur, err
			}
			// Unchanged, but stored with a provider that no longer
			// writes: rewrite it (how keys rotate, as in Kubernetes).
		}
		data, err := s.toStorage(key, next)
		if err != nil {
			return zero, err
		}
		start := time.Now()
		wctx, done := s.guard.begin(ctx)
		resp, err := s.client.Txn(wctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", curRev)).
			Then(clientv3.OpPut(key, bytesString(data))).
			Else(clientv3.OpGet(key)).
			Commit()
		done()
		s.metrics.observe("update", s.resource, start)
		if err != nil {
			return zero, s.writeError(wctx, err)
		}
		if resp.Succeeded {
			object.Meta(next).ResourceVersion = strconv.FormatInt(resp.Header.Revision, 10)
			return next, nil
		}
		if cur, err = s.fromElse(resp, name); err != nil {
			return zero, err
		}
		haveCur = true
	}
}

// stale reports whether the value stored under key at revision rev was
// written by a transformer other than the one that writes now. Without a
// transformer nothing is stale. A value changed since rev is not stale
// (the update that changed it wrote it afresh).
func (s *Store[T]) stale(ctx context.Context, key string, rev int64) (bool, error) {
	if s.transformer == nil {
		return false, nil
	}
	start := time.Now()
	resp, err := s.readEtcd(ctx, key)
	s.metrics.observe("get", s.resource, start)
	if err != nil {
		return false, s.etcdError(err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].ModRevision != rev {
		return false, nil
	}
	_, stale, err := s.transformer.FromStorage(key, resp.Kvs[0].Value)
	if err != nil {
		return false, apierrors.NewInternal(err)
	}
	return stale, nil
}

// fromElse decodes the state an Else(OpGet) of a failed transaction read.
func (s *Store[T]) fromElse(resp *clientv3.TxnResponse, name string) (T, error) {
	var zero T
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return zero, apierrors.NewNotFound(s.resource, name)
	}
	return s.Decode(string(kvs[0].Key), kvs[0].Value, kvs[0].ModRevision)
}

// Delete removes the object if check (given the current state) allows it,
// retrying on the fresh state when a write raced. It returns the last
// state before deletion.
func (s *Store[T]) Delete(ctx context.Context, key, name string, cached T, check func(cur T) error) (T, error) {
	cur, haveCur := cached, any(cached) != nil && cached.ProtoReflect().IsValid()
	var zero T
	for {
		if !haveCur {
			var err error
			if cur, err = s.Get(ctx, key, name); err != nil {
				return zero, err
			}
		}
		if check != nil {
			if err := check(cur); err != nil {
				return zero, err
			}
		}
		curRev, err := ParseRV(cur.GetMetadata().GetResourceVersion())
		if err != nil {
			return zero, apierrors.NewInternal(err)
		}
		start := time.Now()
		wctx, done := s.guard.begin(ctx)
		resp, err := s.client.Txn(wctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", curRev)).
			Then(clientv3.OpDelete(key)).
			Else(clientv3.OpGet(key)).
			Commit()
		done()
		s.metrics.observe("delete", s.resource, start)
		if err != nil {
			return zero, s.writeError(wctx, err)
		}
		if resp.Succeeded {
			return cur, nil
		}
		if cur, err = s.fromElse(resp, name); err != nil {
			return zero, err
		}
		haveCur = true
	}
}

// ListPage is where a List read from etcd ended.
type ListPage struct {
	Revision int64  // the revision the whole list is consistent at
	NextKey  string // where the next page starts; "" when done
	// Left is how many keys under the prefix there are from NextKey on
	// (whether kept or not), when NextKey is set.
	Left int64
}

// List reads the values under prefix from startKey on, at revision rev
// (0 = now), and passes each to keep until keep has said yes limit times
// (0 = no limit). Every page of one listing uses the same revision, so
// paging across writes is consistent. keep may retain key but not value:
// value is etcd's, and may be reused once keep returns.
func (s *Store[T]) List(ctx context.Context, prefix, startKey string, rev, limit int64, keep func(key string, value []byte, modRev int64) (bool, error)) (ListPage, error) {
	var page ListPage
	if startKey == "" {
		startKey = prefix
	}
	batch := int64(500)
	if limit > 0 && limit < batch {
		batch = limit + 1 // one more tells whether there is a next page
	}
	var kept int64
	var err error
	page.Revision, page.NextKey, page.Left, err = s.pages(ctx, prefix, startKey, rev, batch, func(kv *mvccpb.KeyValue) (bool, error) {
		if limit > 0 && kept == limit {
			return true, nil // kv starts the next page
		}
		ok, err := keep(string(kv.Key), kv.Value, kv.ModRevision)
		if ok {
			kept++
		}
		return false, err
	})
	if err != nil {
		page.NextKey, page.Left = "", 0
	}
	return page, err
}

// IsCompacted reports whether err says a revision was compacted.
func IsCompacted(err error) bool {
	return errors.Is(err, rpctypes.ErrCompacted) || errors.Is(err, rpctypes.ErrGRPCCompacted)
}

// leaderWait bounds how long a read waits for etcd to elect a leader.
const leaderWait = 5 * time.Second

// leaderChange is a read that failed while etcd had no leader or changed
// it, still so after leaderWait.
type leaderChange struct{ error }

// isLeaderChange says whether err is etcd's answer while it elects a
// leader (a member's ReadIndex fails so when the leader of a cluster of
// control-plane members dies). Through the in-process client the errors
// are etcd server's, through gRPC rpctypes': their texts are the same.
func isLeaderChange(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "etcdserver: leader changed") || strings.Contains(msg, "etcdserver: no leader") ||
		strings.Contains(msg, "etcdserver: request timed out")
}

// readEtcd is s.client.Get, asked again while etcd elects a leader: a
// read is safe to repeat, and would otherwise fail the request (a
// consistent list of an admission plugin, say) during a failover. After
// leaderWait it fails with leaderChange, which etcdError answers as
// ServiceUnavailable.
func (s *Store[T]) readEtcd(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	deadline := time.Now().Add(leaderWait)
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		resp, err := s.client.Get(ctx, key, opts...)
		if err == nil || !isLeaderChange(err) {
			return resp, err
		}
		if time.Now().Add(wait).After(deadline) {
			return nil, leaderChange{err}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, leaderChange{err}
		case <-t.C:
		}
	}
}

// writeError is etcdError for a write of wctx: one the LeaderGuard ended
// is a Timeout, its outcome unknown.
func (s *Store[T]) writeError(wctx context.Context, err error) error {
	if errors.Is(context.Cause(wctx), errLeaderLost) {
		return apierrors.NewTimeout(fmt.Sprintf("%s: %v; it may or may not have been applied (read it again)", s.resource, errLeaderLost))
	}
	return s.etcdError(err)
}

func (s *Store[T]) etcdError(err error) error {
	switch {
	case errors.As(err, new(leaderChange)):
		return apierrors.NewServiceUnavailable(fmt.Sprintf("%s: etcd is electing a leader (%v): retry", s.resource, err))
	case IsCompacted(err):
		return apierrors.NewExpired(fmt.Sprintf("%s: the requested resourceVersion has been compacted; list again to get a fresh one", s.resource))
	case errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeout(fmt.Sprintf("%s: etcd did not answer in time", s.resource))
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, rpctypes.ErrGRPCNoSpace), errors.Is(err, rpctypes.ErrNoSpace):
		return apierrors.NewServiceUnavailable("etcd is out of space (backend quota reached): compact and defragment, or raise --quota-backend-bytes")
	}
	return apierrors.NewInternal(fmt.Errorf("etcd: %w", err))
}
