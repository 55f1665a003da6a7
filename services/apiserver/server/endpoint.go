package server

import (
	"bytes"
	"context"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/apiserver/registry"
	"skiff.dev/services/apiserver/scheme"
	"skiff.dev/services/apiserver/watchcache"
)

// Version is one served version of a kind stored as S and served as E.
type Version[E, S object.Object] struct {
	// Slot is the index of this version's cached encodings in watch cache
	// entries: 0 for the storage version, 1.. for others of the same kind.
	Slot        int
	Kind        *scheme.Kind
	ToStorage   func(E) (S, error)
	FromStorage func(S) (E, error)
}

// StorageVersion is the served version that is the storage version itself:
// no conversion at all.
func StorageVersion[S object.Object](k *scheme.Kind) Version[S, S] {
	same := func(s S) (S, error) { return s, nil }
	return Version[S, S]{Slot: 0, Kind: k, ToStorage: same, FromStorage: same}
}

// Converted is a served version other than the storage version, converted
// through the scheme.
func Converted[E, S object.Object](sch *scheme.Scheme, slot int, served, storage *scheme.Kind) Version[E, S] {
	return Version[E, S]{
		Slot: slot,
		Kind: served,
		ToStorage: func(e E) (S, error) {
			out, err := sch.Convert(e, served.GVK, storage.GVK)
			if err != nil {
				var zero S
				return zero, apierrors.NewBadRequest(err.Error())
			}
			return out.(S), nil
		},
		FromStorage: func(s S) (E, error) {
			out, err := sch.Convert(s, storage.GVK, served.GVK)
			if err != nil {
				var zero E
				return zero, apierrors.NewInternal(err)
			}
			return out.(E), nil
		},
	}
}

// Endpoint serves one kind at one version: it implements the generated
// <Kind>sServer interface (E the object, L its list, W its watch response).
type Endpoint[E, S object.Object, L proto.Message, W any] struct {
	reg     *registry.Registry[S]
	ver     Version[E, S]
	newList func() L
	newObj  func() E
	// maxBatchBytes and maxBatchEvents cap one watch response message.
	maxBatchBytes  int
	maxBatchEvents int
}

// NewEndpoint returns the endpoint of one served version.
func NewEndpoint[E, S object.Object, L proto.Message, W any](reg *registry.Registry[S], ver Version[E, S], newObj func() E, newList func() L) *Endpoint[E, S, L, W] {
	return &Endpoint[E, S, L, W]{reg: reg, ver: ver, newObj: newObj, newList: newList, maxBatchBytes: 256 << 10, maxBatchEvents: 1024}
}

// Registry is the registry behind the endpoint.
func (ep *Endpoint[E, S, L, W]) Registry() *registry.Registry[S] { return ep.reg }

func (ep *Endpoint[E, S, L, W]) out(s S, err error) (E, error) {
	if err != nil {
		var zero E
		return zero, err
	}
	return ep.ver.FromStorage(s)
}

func (ep *Endpoint[E, S, L, W]) in(e E) (S, error) {
	if !e.ProtoReflect().IsValid() {
		var zero S
		return zero, apierrors.NewBadRequest("request has no object")
	}
	return ep.ver.ToStorage(e)
}

func (ep *Endpoint[E, S, L, W]) Create(ctx context.Context, obj E) (E, error) {
	s, err := ep.in(obj)
	if err != nil {
		return obj, err
	}
	return ep.out(ep.reg.Create(ctx, s))
}

func (ep *Endpoint[E, S, L, W]) Get(ctx context.Context, req *metav1.GetRequest) (E, error) {
	return ep.out(ep.reg.Get(ctx, req.GetNamespace(), req.GetName()))
}

func (ep *Endpoint[E, S, L, W]) Update(ctx context.Context, obj E) (E, error) {
	s, err := ep.in(obj)
	if err != nil {
		return obj, err
	}
	return ep.out(ep.reg.Update(ctx, s))
}

func (ep *Endpoint[E, S, L, W]) UpdateStatus(ctx context.Context, obj E) (E, error) {
	s, err := ep.in(obj)
	if err != nil {
		return obj, err
	}
	return ep.out(ep.reg.UpdateStatus(ctx, s))
}

func (ep *Endpoint[E, S, L, W]) Delete(ctx context.Context, req *metav1.DeleteRequest) (E, error) {
	return ep.out(ep.reg.Delete(ctx, req))
}

// List answers with the kind's list message, decoded from ListEncoded's
// (the served List is ListEncoded: see EncodedLists).
func (ep *Endpoint[E, S, L, W]) List(ctx context.Context, opts *metav1.ListOptions) (L, error) {
	list := ep.newList()
	enc, err := ep.ListEncoded(ctx, opts)
	if err == nil {
		err = enc.unmarshal(list)
	}
	if err != nil {
		var zero L
		return zero, err
	}
	return list, nil
}

// ListEncoded answers a List with the list message's encoding, assembled
// from the objects' encodings the registry found (the watch cache's own,
// for the storage version) without decoding, copying or re-encoding them:
// the list's fields 1-3 (apiVersion, kind, metadata), then for each object
// the tag and length of a field 4 (items) record, and the object's bytes.
func (ep *Endpoint[E, S, L, W]) ListEncoded(ctx context.Context, opts *metav1.ListOptions) (*encodedList, error) {
	res, err := ep.reg.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return ep.encodeList(res)
}

// encodeList assembles a list's encoding (see ListEncoded).
func (ep *Endpoint[E, S, L, W]) encodeList(res *registry.ListResult[S]) (*encodedList, error) {
	list := ep.newList()
	r := list.ProtoReflect()
	fds := r.Descriptor().Fields()
	k := ep.ver.Kind
	r.Set(fds.ByNumber(1), protoreflect.ValueOfString(k.GVK.GroupVersion.String()))
	r.Set(fds.ByNumber(2), protoreflect.ValueOfString(k.GVK.Kind+"List"))
	r.Set(fds.ByNumber(3), protoreflect.ValueOfMessage(res.Meta.ProtoReflect()))
	head, err := proto.Marshal(list)
	if err != nil {
		return nil, apierrors.NewInternal(err)
	}
	n := len(res.Entries)
	pieces := make([]mem.SliceBuffer, 1, 1+2*n)
	pieces[0] = head
	// Every record's tag and length, in one buffer: 1 byte of tag and at
	// most 3 of length for objects up to storage.MaxObjectBytes.
	tags := make([]byte, 0, 4*n)
	for _, e := range res.Entries {
		b, err := ep.item(e)
		if err != nil {
			return nil, err
		}
		at := len(tags)
		tags = protowire.AppendTag(tags, 4, protowire.BytesType)
		tags = protowire.AppendVarint(tags, uint64(len(b)))
		pieces = append(pieces, tags[at:len(tags):len(tags)], b)
	}
	return &encodedList{pieces: pieces, newList: func() proto.Message { return ep.newList() }}, nil
}

// item is an entry's encoding at the endpoint's version: the cached bytes
// at the storage version, else a conversion made for this list only (a
// list does not leave a second encoding of every object in the cache).
func (ep *Endpoint[E, S, L, W]) item(e *watchcache.Entry[S]) ([]byte, error) {
	if ep.ver.Slot == 0 {
		return e.Raw, nil
	}
	s, err := e.Object()
	if err != nil {
		return nil, apierrors.NewInternal(err)
	}
	return ep.encode(s)
}

// Watch streams events. Each message carries the events of one batch the
// watch cache published (at least one), each event framed once per version
// and type, and whole messages shared by the watchers that can share them
// (see watchcache.Share).
func (ep *Endpoint[E, S, L, W]) Watch(opts *metav1.ListOptions, stream grpc.ServerStreamingServer[W]) error {
	ctx := stream.Context()
	if t := opts.GetTimeoutSeconds(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Second)
		defer cancel()
	}
	w, err := ep.reg.Watch(ctx, opts)
	if err != nil {
		return err
	}
	defer w.Stop()
	// Header first, so a client knows the watch is established before any event.
	if err := stream.SendHeader(nil); err != nil {
		return err
	}
	// send sends deliveries of this watcher's own, their framed pieces as
	// they are (shared with other watchers, never copied).
	send := func(ds []watchcache.Delivery[S]) error {
		msgs, err := ep.pack(ds)
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if err := stream.SendMsg(m); err != nil {
				return err
			}
		}
		return nil
	}
	if err := send(w.Initial); err != nil {
		return err
	}
	w.Initial = nil
	if opts.GetSendInitialEvents() {
		// The end of the initial state, as Kubernetes marks it.
		obj, err := ep.bookmark(w.InitialRev, InitialEventsEndAnnotation)
		if err != nil {
			return apierrors.NewInternal(err)
		}
		if err := stream.SendMsg(rawBatch{frameEvent(watchcache.Bookmark, obj)}); err != nil {
			return err
		}
	}
	// The watch cache publishes events in batches, at most one per batch
	// interval; each is sent as it comes, in messages this watcher shares
	// with every other watcher of the same namespace and version when it
	// has no selector.
	share := &watchcache.Share[S]{Slot: ep.ver.Slot, Encode: ep.messages}
	var pending []watchcache.Delivery[S]
	for {
		shared, ds, err := w.Next(ctx, true, pending[:0], ep.maxBatchEvents, share)
		if err != nil {
			if ctx.Err() != nil {
				return ep.endOfWatch(ctx, opts)
			}
			return err
		}
		for _, m := range shared {
			if err := stream.SendMsg(rawBatch{m}); err != nil {
				return err
			}
		}
		if err := send(ds); err != nil {
			return err
		}
		pending = ds
	}
}

// pack frames deliveries (each event once per version and type, shared by
// every watcher) and groups them into watch response messages of at most
// maxBatchBytes (or one event, when larger) and maxBatchEvents each.
func (ep *Endpoint[E, S, L, W]) pack(ds []watchcache.Delivery[S]) ([]rawBatch, error) {
	pieces := make(rawBatch, len(ds))
	for i, d := range ds {
		b, err := ep.event(d)
		if err != nil {
			return nil, err
		}
		pieces[i] = b
	}
	var msgs []rawBatch
	for len(pieces) > 0 {
		n, size := 1, len(pieces[0])
		for n < len(pieces) && n < ep.maxBatchEvents && size+len(pieces[n]) <= ep.maxBatchBytes {
			size += len(pieces[n])
			n++
		}
		msgs, pieces = append(msgs, pieces[:n:n]), pieces[n:]
	}
	return msgs, nil
}

// messages packs deliveries as pack does, every message one contiguous
// encoding that many streams may send (watchcache.Share).
func (ep *Endpoint[E, S, L, W]) messages(ds []watchcache.Delivery[S]) ([][]byte, error) {
	batches, err := ep.pack(ds)
	if err != nil {
		return nil, err
	}
	msgs := make([][]byte, len(batches))
	for i, pieces := range batches {
		msgs[i] = bytes.Join(pieces, nil)
	}
	return msgs, nil
}

// endOfWatch is how a watch ends when its context does: cleanly at the
// requested timeout, with the context's error otherwise.
func (ep *Endpoint[E, S, L, W]) endOfWatch(ctx context.Context, opts *metav1.ListOptions) error {
	if ctx.Err() == context.DeadlineExceeded && opts.GetTimeoutSeconds() > 0 {
		return nil
	}
	return ctx.Err()
}

// event returns a delivery as one `events` entry (field 1 of the watch
// response) holding a WatchEvent{type, object}: built once per entry,
// version and type, shared by every watcher.
func (ep *Endpoint[E, S, L, W]) event(d watchcache.Delivery[S]) ([]byte, error) {
	if d.Type == watchcache.Bookmark {
		obj, err := ep.bookmark(d.Rev, "")
		if err != nil {
			return nil, apierrors.NewInternal(err)
		}
		return frameEvent(d.Type, obj), nil
	}
	b, err := d.Event.Cur.Framed(ep.ver.Slot, d.Type, ep.frame)
	if err != nil {
		return nil, apierrors.NewInternal(err)
	}
	return b, nil
}

func (ep *Endpoint[E, S, L, W]) frame(e *watchcache.Entry[S], typ watchcache.EventType) ([]byte, error) {
	obj, err := e.Encoded(ep.ver.Slot, ep.encode)
	if err != nil {
		return nil, err
	}
	return frameEvent(typ, obj), nil
}

// frameEvent encodes `events: {type: typ, object: obj}`.
func frameEvent(typ watchcache.EventType, obj []byte) []byte {
	name := typ.String()
	size := 1 + protowire.SizeBytes(len(name)) + 1 + protowire.SizeBytes(len(obj))
	buf := make([]byte, 0, 1+protowire.SizeVarint(uint64(size))+size)
	buf = protowire.AppendTag(buf, 1, protowire.BytesType)
	buf = protowire.AppendVarint(buf, uint64(size))
	buf = protowire.AppendTag(buf, 1, protowire.BytesType)
	buf = protowire.AppendString(buf, name)
	buf = protowire.AppendTag(buf, 2, protowire.BytesType)
	return protowire.AppendBytes(buf, obj)
}

func (ep *Endpoint[E, S, L, W]) encode(s S) ([]byte, error) {
	e, err := ep.ver.FromStorage(s)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(e)
}

// InitialEventsEndAnnotation marks the BOOKMARK that ends a watch's
// initial state (sendInitialEvents), as Kubernetes'.
const InitialEventsEndAnnotation = "k8s.io/initial-events-end"

// bookmark is a BOOKMARK event's object at rev, annotated with
// annotation: "true" when annotation is given.
func (ep *Endpoint[E, S, L, W]) bookmark(rev int64, annotation string) ([]byte, error) {
	e := ep.newObj()
	k := ep.ver.Kind
	object.SetTypeMeta(e, k.GVK.GroupVersion.String(), k.GVK.Kind)
	meta := object.Meta(e)
	meta.ResourceVersion = strconv.FormatInt(rev, 10)
	if annotation != "" {
		meta.Annotations = map[string]string{annotation: "true"}
	}
	return proto.Marshal(e)
}
