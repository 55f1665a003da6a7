// Package allocator hands out the items of a shared range, such as a
// Service's cluster IP from --service-cluster-ip-range or its node ports
// from --service-node-port-range, never twice: each allocated item is a
// key of its own in etcd, created only if absent (an etcd transaction),
// so concurrent creates on one apiserver or several cannot both win, and
// a restart finds every allocation where it was. The key's value names
// the owner (a Service's uid), so that a release frees only its own, and
// Repair frees what no owner holds any longer (a create that allocated
// and then failed to store, a process killed between the two).
package allocator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Range is the set of items a Pool allocates from: Size items, the i-th
// named Item(i); Index is its inverse (false for a name outside).
type Range interface {
	Size() int
	Item(i int) string
	Index(item string) (int, bool)
	String() string
}

// ErrFull: every item of the range is allocated.
var ErrFull = errors.New("range is full")

// ErrAllocated: the item asked for is allocated to another owner.
var ErrAllocated = errors.New("provided value is already allocated")

// ErrNotInRange: the item asked for is not in the range.
type ErrNotInRange struct{ Item, Range string }

func (e *ErrNotInRange) Error() string {
	return fmt.Sprintf("%s is not in the valid range %s", e.Item, e.Range)
}

// Pool allocates the items of a Range, stored under a key prefix in etcd.
type Pool struct {
	kv     clientv3.KV
	prefix string // "/registry/ranges/serviceips/"
	r      Range
	// reserved items are never handed out by Allocate (a Service's .1 is
	// the kubernetes Service's), but may be asked for by AllocateItem.
	reserved map[int]bool

	mu   sync.Mutex
	used map[int]bool // this process's view of what is allocated
}

// NewPool returns a pool of r under prefix (which must end with "/").
// Reserved items are left to AllocateItem.
func NewPool(kv clientv3.KV, prefix string, r Range, reserved ...int) *Pool {
	p := &Pool{kv: kv, prefix: prefix, r: r, reserved: map[int]bool{}, used: map[int]bool{}}
	for _, i := range reserved {
		p.reserved[i] = true
	}
	return p
}

// Range is the pool's range.
func (p *Pool) Range() Range { return p.r }

// Allocate allocates a free item to owner, chosen at random, and returns
// it. It reads etcd again before it says ErrFull.
func (p *Pool) Allocate(ctx context.Context, owner string) (string, error) {
	for refreshed := false; ; refreshed = true {
		item, err := p.allocateKnownFree(ctx, owner)
		if !errors.Is(err, ErrFull) || refreshed {
			return item, err
		}
		if _, err := p.Allocated(ctx); err != nil { // refreshes the view
			return "", err
		}
	}
}

// allocateKnownFree tries the items this process believes free, from a
// random offset; an item another process took meanwhile is marked used
// and the next one tried.
func (p *Pool) allocateKnownFree(ctx context.Context, owner string) (string, error) {
	n := p.r.Size()
	start := rand.IntN(n)
	for k := range n {
		i := (start + k) % n
		p.mu.Lock()
		skip := p.used[i] || p.reserved[i]
		p.mu.Unlock()
		if skip {
			continue
		}
		ok, err := p.create(ctx, i, owner)
		if err != nil {
			return "", err
		}
		if ok {
			return p.r.Item(i), nil
		}
	}
	return "", ErrFull
}

// AllocateItem allocates item to owner. Asking again for an item owner
// already holds succeeds.
func (p *Pool) AllocateItem(ctx context.Context, item, owner string) error {
	i, ok := p.r.Index(item)
	if !ok {
		return &ErrNotInRange{Item: item, Range: p.r.String()}
	}
	created, err := p.create(ctx, i, owner)
	if err != nil || created {
		return err
	}
	holder, err := p.owner(ctx, i)
	if err != nil {
		return err
	}
	if holder == owner {
		return nil
	}
	return ErrAllocated
}

// create stores item i for owner if no one holds it.
func (p *Pool) create(ctx context.Context, i int, owner string) (bool, error) {
	key := p.key(i)
	resp, err := p.kv.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, owner)).
		Commit()
	if err != nil {
		return false, fmt.Errorf("allocating %s: %w", p.r.Item(i), err)
	}
	p.mu.Lock()
	p.used[i] = true // ours now, or someone else's
	p.mu.Unlock()
	return resp.Succeeded, nil
}

func (p *Pool) owner(ctx context.Context, i int) (string, error) {
	resp, err := p.kv.Get(ctx, p.key(i))
	if err != nil {
		return "", err
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	return string(resp.Kvs[0].Value), nil
}

// Release frees item if owner holds it; an item held by another owner,
// or by no one, is left as it is.
func (p *Pool) Release(ctx context.Context, item, owner string) error {
	i, ok := p.r.Index(item)
	if !ok {
		return nil
	}
	key := p.key(i)
	resp, err := p.kv.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(key), "=", owner)).
		Then(clientv3.OpDelete(key)).
		Commit()
	if err != nil {
		return fmt.Errorf("releasing %s: %w", item, err)
	}
	if resp.Succeeded {
		p.mu.Lock()
		delete(p.used, i)
		p.mu.Unlock()
	}
	return nil
}

// Allocated returns every allocated item and its owner, as etcd has them.
func (p *Pool) Allocated(ctx context.Context) (map[string]string, error) {
	resp, err := p.kv.Get(ctx, p.prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", p.prefix, err)
	}
	out := make(map[string]string, len(resp.Kvs))
	used := make(map[int]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		item := strings.TrimPrefix(string(kv.Key), p.prefix)
		out[item] = string(kv.Value)
		if i, ok := p.r.Index(item); ok {
			used[i] = true
		}
	}
	p.mu.Lock()
	p.used = used
	p.mu.Unlock()
	return out, nil
}

func (p *Pool) key(i int) string { return p.prefix + p.r.Item(i) }

// Repairer frees the allocations of a pool that no owner holds any
// longer, and records those an owner holds but the pool lacks. An item
// is freed only when it was found unheld by two passes in a row: a
// create allocates before it stores its object, so an allocation may be
// unheld for a moment without being leaked.
type Repairer struct {
	pool    *Pool
	suspect map[string]string // item -> owner found unheld by the last pass
}

// NewRepairer returns a repairer of pool.
func NewRepairer(pool *Pool) *Repairer {
	return &Repairer{pool: pool, suspect: map[string]string{}}
}

// Report is what one repair pass did.
type Report struct {
	Freed, Recorded []string
	// Conflicts are items held by two owners (or out of the range): each
	// is left to its first owner, and named so that it can be logged.
	Conflicts []string
}

// Repair runs one pass: held maps each item owners hold (their objects'
// view, read after the pool's allocations) to its owner.
func (r *Repairer) Repair(ctx context.Context, allocated map[string]string, held map[string]string) (Report, error) {
	var rep Report
	suspect := map[string]string{}
	for item, owner := range allocated {
		if held[item] == owner {
			continue
		}
		if r.suspect[item] == owner {
			if err := r.pool.Release(ctx, item, owner); err != nil {
				return rep, err
			}
			rep.Freed = append(rep.Freed, item)
			continue
		}
		suspect[item] = owner
	}
	r.suspect = suspect
	for item, owner := range held {
		if holder, ok := allocated[item]; ok {
			if holder != owner {
				rep.Conflicts = append(rep.Conflicts, item)
			}
			continue
		}
		switch err := r.pool.AllocateItem(ctx, item, owner); {
		case err == nil:
			rep.Recorded = append(rep.Recorded, item)
		case errors.Is(err, ErrAllocated):
			rep.Conflicts = append(rep.Conflicts, item)
		case errors.As(err, new(*ErrNotInRange)):
			rep.Conflicts = append(rep.Conflicts, item)
		default:
			return rep, err
		}
	}
	return rep, nil
}

// IPRange is the addresses of an IPv4 prefix but its first (the network)
// and its last (the broadcast address).
type IPRange struct {
	prefix netip.Prefix
	base   uint32
	size   int
}

// ParseIPRange parses a CIDR such as 10.96.0.0/16: IPv4, from /12 (as
// Kubernetes bounds a service range: about a million addresses) to /30.
func ParseIPRange(cidr string) (*IPRange, error) {
	pfx, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", cidr, err)
	}
	if !pfx.Addr().Is4() {
		return nil, fmt.Errorf("%q: only IPv4 service ranges are supported", cidr)
	}
	pfx = pfx.Masked()
	bits := 32 - pfx.Bits()
	if bits < 2 || bits > 20 {
		return nil, fmt.Errorf("%q: a service range must be between /12 and /30", cidr)
	}
	a := pfx.Addr().As4()
	base := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	return &IPRange{prefix: pfx, base: base + 1, size: 1<<bits - 2}, nil
}

func (r *IPRange) Size() int      { return r.size }
func (r *IPRange) String() string { return r.prefix.String() }
func (r *IPRange) Item(i int) string {
	v := r.base + uint32(i)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String()
}
func (r *IPRange) Index(item string) (int, bool) {
	a, err := netip.ParseAddr(item)
	if err != nil || !a.Is4() || !r.prefix.Contains(a) {
		return 0, false
	}
	b := a.As4()
	i := int(uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3])) - int(r.base)
	return i, i >= 0 && i < r.size
}

// PortRange is the ports from Base to Base+Size-1.
type PortRange struct{ Base, Max int }

// ParsePortRange parses "30000-32767" (or a single port).
func ParsePortRange(s string) (*PortRange, error) {
	lo, hi, found := strings.Cut(s, "-")
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b := a
	var err2 error
	if found {
		b, err2 = strconv.Atoi(strings.TrimSpace(hi))
	}
	if err1 != nil || err2 != nil || a < 1 || b > 65535 || b < a {
		return nil, fmt.Errorf("%q: want a port range such as 30000-32767", s)
	}
	return &PortRange{Base: a, Max: b}, nil
}

func (r *PortRange) Size() int         { return r.Max - r.Base + 1 }
func (r *PortRange) String() string    { return fmt.Sprintf("%d-%d", r.Base, r.Max) }
func (r *PortRange) Item(i int) string { return strconv.Itoa(r.Base + i) }
func (r *PortRange) Index(item string) (int, bool) {
	n, err := strconv.Atoi(item)
	if err != nil || n < r.Base || n > r.Max {
		return 0, false
	}
	return n - r.Base, true
}
