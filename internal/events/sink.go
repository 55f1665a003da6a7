package events

import (
	"context"
	"fmt"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// maxNamePrefix keeps "<prefix>.<16 hex digits>" within a DNS subdomain's 253 characters.
const maxNamePrefix = 253 - 17

// write applies the correlator's decisions to one event and does the I/O.
func (b *Broadcaster) write(ctx context.Context, ev *corev1.Event) {
	if !b.corr.allow(ev) {
		b.metrics.drop(dropRateLimited)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	var stored *corev1.Event
	var err error
	if prev, ok := b.corr.previous(ev); ok {
		stored, err = b.increment(ctx, prev, ev)
	} else {
		stored, err = b.create(ctx, ev)
	}
	if err != nil {
		io := ev.GetInvolvedObject()
		b.log.Warn("writing an event failed; dropped", zap.Error(err),
			zap.String("object", io.GetKind()+" "+io.GetNamespace()+"/"+io.GetName()),
			zap.String("reason", ev.GetReason()), zap.String("message", ev.GetMessage()))
		b.metrics.drop(dropWriteFailed)
		return
	}
	b.corr.stored(ev, stored)
}

// create names ev after its involved object and its time and creates it.
func (b *Broadcaster) create(ctx context.Context, ev *corev1.Event) (*corev1.Event, error) {
	ev = proto.Clone(ev).(*corev1.Event)
	ev.Metadata = &metav1.ObjectMeta{Namespace: ev.GetMetadata().GetNamespace(), Name: b.name(ev)}
	stored, err := b.cfg.Client.Create(ctx, ev)
	if err != nil {
		return nil, fmt.Errorf("creating event %s/%s: %w", ev.Metadata.Namespace, ev.Metadata.Name, err)
	}
	return stored, nil
}

// name is "<involved name>.<hex unix nanoseconds of the event>"; the
// nanoseconds are kept increasing so that events recorded in the same
// nanosecond (or on a stopped fake clock) get distinct names.
func (b *Broadcaster) name(ev *corev1.Event) string {
	n := ev.GetLastTimestamp().AsTime().UnixNano()
	if n <= b.lastName {
		n = b.lastName + 1
	}
	b.lastName = n
	prefix := ev.GetInvolvedObject().GetName()
	if len(prefix) > maxNamePrefix {
		prefix = prefix[:maxNamePrefix]
	}
	return fmt.Sprintf("%s.%x", prefix, n)
}

// increment counts ev as one more occurrence of the stored event prev. On a
// conflict it reads the event again and increments what it finds; when the
// event is gone it creates a new one that keeps the count.
func (b *Broadcaster) increment(ctx context.Context, prev, ev *corev1.Event) (*corev1.Event, error) {
	next := proto.Clone(prev).(*corev1.Event)
	bump(next, ev)
	stored, err := b.cfg.Client.Update(ctx, next)
	if apierrors.IsConflict(err) {
		var cur *corev1.Event
		if cur, err = b.cfg.Client.Get(ctx, prev.GetMetadata().GetNamespace(), prev.GetMetadata().GetName()); err == nil {
			bump(cur, ev)
			stored, err = b.cfg.Client.Update(ctx, cur)
		}
	}
	if apierrors.IsNotFound(err) {
		return b.create(ctx, next)
	}
	if err != nil {
		return nil, fmt.Errorf("updating event %s/%s: %w", prev.GetMetadata().GetNamespace(), prev.GetMetadata().GetName(), err)
	}
	return stored, nil
}

// bump adds one occurrence, at ev's time, to stored.
func bump(stored, ev *corev1.Event) {
	stored.Count++
	stored.LastTimestamp = ev.GetLastTimestamp()
}
