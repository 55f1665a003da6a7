package admission

import (
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	"skiff.dev/internal/informer"
	"skiff.dev/internal/quantity"
	"skiff.dev/internal/quota"
	corev1 "skiff.dev/proto/core/v1"
)

// ResourceQuotaName is the plugin's flag name.
const ResourceQuotaName = "ResourceQuota"

// quotaLockStripes is the number of namespace locks (namespaces share a
// stripe by hash; a stripe is held only while charging a quota).
const quotaLockStripes = 64

// quotaAttempts bounds the compare-and-swap retries on one quota.
const quotaAttempts = 8

// resourceQuota charges every create that a ResourceQuota of its namespace
// covers against that quota's status.used, before the object is stored,
// and refuses it when a limit would be exceeded. The charge is a
// compare-and-swap on the quota's resourceVersion, under a per-namespace
// lock, so parallel creates never exceed a quota. A charge whose object
// then fails to be stored is given back by the resourcequota controller,
// which recomputes status.used from the objects that exist.
//
// A quota whose status.used does not report a resource yet (just created:
// the controller has not computed it) refuses what it covers until it does,
// as Kubernetes does.
type resourceQuota struct {
	quotas *perNamespace[*corev1.ResourceQuota, *corev1.ResourceQuotaList]
	client *client.Resource[*corev1.ResourceQuota, *corev1.ResourceQuotaList]
	seed   maphash.Seed
	locks  [quotaLockStripes]sync.Mutex

	mu sync.Mutex
	// latest is the newest copy of each quota this plugin wrote or read
	// live; the informer may not have it yet. Keys are namespace/name.
	latest map[string]*corev1.ResourceQuota
}

func newResourceQuota(d *Deps) (any, error) {
	q := &resourceQuota{
		quotas: newPerNamespace(d, ResourceQuotaName, client.ResourceQuotas(d.Loopback)),
		client: client.ResourceQuotas(d.Loopback),
		seed:   maphash.MakeSeed(),
		latest: map[string]*corev1.ResourceQuota{},
	}
	q.quotas.informer.AddHandler(informer.Handler[*corev1.ResourceQuota]{OnDelete: func(rq *corev1.ResourceQuota) {
		q.mu.Lock()
		delete(q.latest, informer.Key(rq))
		q.mu.Unlock()
	}})
	return q, nil
}

func (q *resourceQuota) Validate(ctx context.Context, a *Attributes) error {
	if a.Operation != Create || a.Subresource != "" || !a.Kind.Namespaced || a.Namespace == "" {
		return nil
	}
	quotas, err := q.quotas.get(ctx, a.Namespace)
	if err != nil || len(quotas) == 0 {
		return err
	}
	usage := quota.Usage(a.Group(), a.Resource(), a.Object)
	var covering []*corev1.ResourceQuota
	for _, rq := range quotas {
		if quota.Covered(rq.GetSpec().GetHard(), usage) == nil || !quota.Matches(rq.GetSpec(), a.Group(), a.Resource(), a.Object) {
			continue
		}
		if pod, ok := a.Object.(*corev1.Pod); ok {
			if missing := quota.MissingRequests(rq.GetSpec().GetHard(), pod); len(missing) > 0 {
				return a.Forbidden("failed quota: %s: must specify %s", rq.GetMetadata().GetName(), strings.Join(missing, "; "))
			}
		}
		covering = append(covering, rq)
	}
	if len(covering) == 0 {
		return nil
	}
	lock := &q.locks[maphash.String(q.seed, a.Namespace)%quotaLockStripes]
	lock.Lock()
	defer lock.Unlock()
	// Check every quota first, so that a create refused by the second does
	// not charge the first.
	for _, rq := range covering {
		if _, err := q.verify(ctx, a, q.current(rq), usage); err != nil {
			return err
		}
	}
	if a.DryRun {
		return nil // checked, not charged
	}
	for _, rq := range covering {
		if err := q.charge(ctx, a, rq, usage); err != nil {
			return err
		}
	}
	return nil
}

// current is the newest copy known of a quota: the one given (listed), the
// informer's, or the one this plugin last wrote or read, whichever has the
// highest resourceVersion.
func (q *resourceQuota) current(listed *corev1.ResourceQuota) *corev1.ResourceQuota {
	key := informer.Key(listed)
	best := listed
	if inf, ok := q.quotas.informer.Store().Get(key); ok && rvOf(inf) > rvOf(best) {
		best = inf
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if mine := q.latest[key]; mine != nil {
		if rvOf(mine) > rvOf(best) {
			return mine
		}
		delete(q.latest, key) // the informer caught up
	}
	return best
}

func (q *resourceQuota) remember(rq *corev1.ResourceQuota) {
	q.mu.Lock()
	q.latest[informer.Key(rq)] = rq
	q.mu.Unlock()
}

func rvOf(rq *corev1.ResourceQuota) int64 {
	n, _ := strconv.ParseInt(rq.GetMetadata().GetResourceVersion(), 10, 64)
	return n
}

// verify checks that rq can take usage. A refusal is confirmed against a
// live read first (the copy may be stale); it returns the copy it judged
// by, nil when the quota is gone.
func (q *resourceQuota) verify(ctx context.Context, a *Attributes, rq *corev1.ResourceQuota, usage map[string]quantity.Quantity) (*corev1.ResourceQuota, error) {
	if q.check(a, rq, usage) == nil {
		return rq, nil
	}
	fresh, err := q.read(ctx, rq)
	if fresh == nil || err != nil {
		return nil, err
	}
	return fresh, q.check(a, fresh, usage)
}

// read gets a quota from the API and remembers it; nil when it is gone.
func (q *resourceQuota) read(ctx context.Context, rq *corev1.ResourceQuota) (*corev1.ResourceQuota, error) {
	m := rq.GetMetadata()
	fresh, err := q.client.Get(ctx, m.GetNamespace(), m.GetName())
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, apierrors.NewInternal(fmt.Errorf("ResourceQuota: reading quota %s/%s: %w", m.GetNamespace(), m.GetName(), err))
	}
	q.remember(fresh)
	return fresh, nil
}

// check refuses a charge that rq cannot take.
func (q *resourceQuota) check(a *Attributes, rq *corev1.ResourceQuota, usage map[string]quantity.Quantity) error {
	hard, used := rq.GetSpec().GetHard(), rq.GetStatus().GetUsed()
	over, unknown := quota.Exceeded(hard, used, usage)
	name := rq.GetMetadata().GetName()
	if len(unknown) > 0 {
		return a.Forbidden("status unknown for quota: %s, resources: %s (the resourcequota controller of skiff-controller-manager has not computed its usage yet)", name, strings.Join(unknown, ","))
	}
	if len(over) > 0 {
		return a.Forbidden("exceeded quota: %s, requested: %s, used: %s, limited: %s", name,
			quota.Format(over, func(k string) string { q := usage[k]; return q.String() }),
			quota.Format(over, func(k string) string { return used[k] }),
			quota.Format(over, func(k string) string { return hard[k] }))
	}
	return nil
}

// charge adds usage to one quota's status.used with a compare-and-swap,
// reading the quota again after a conflict (the controller wrote it).
func (q *resourceQuota) charge(ctx context.Context, a *Attributes, listed *corev1.ResourceQuota, usage map[string]quantity.Quantity) error {
	rq := q.current(listed)
	for attempt := 0; ; attempt++ {
		var err error
		if rq, err = q.verify(ctx, a, rq, usage); rq == nil || err != nil {
			return err // refused, or the quota is gone: nothing to charge
		}
		next := proto.Clone(rq).(*corev1.ResourceQuota)
		if next.Status == nil {
			next.Status = &corev1.ResourceQuotaStatus{}
		}
		next.Status.Used = quota.Add(rq.GetSpec().GetHard(), rq.GetStatus().GetUsed(), usage)
		if next.Status.Hard == nil {
			next.Status.Hard = maps.Clone(rq.GetSpec().GetHard())
		}
		updated, err := q.client.UpdateStatus(ctx, next)
		if err == nil {
			q.remember(updated)
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return apierrors.NewInternal(fmt.Errorf("ResourceQuota: charging quota %s/%s: %w", a.Namespace, rq.GetMetadata().GetName(), err))
		}
		if attempt == quotaAttempts {
			return apierrors.NewConflict("resourcequotas", rq.GetMetadata().GetName(), fmt.Sprintf("the quota kept changing while charging it (%d attempts): retry", quotaAttempts))
		}
		if rq, err = q.read(ctx, rq); rq == nil || err != nil {
			return err
		}
	}
}
