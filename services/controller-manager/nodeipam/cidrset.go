package nodeipam

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
)

// MaxSubnetBits bounds how many subnets a cluster CIDR is cut into:
// 2^16, as Kubernetes' cidrset does (a /8 in /24s, a /16 in /32s).
const MaxSubnetBits = 16

// ErrCIDRRangeFull is AllocateNext's error when every subnet is taken.
var ErrCIDRRangeFull = errors.New("no free subnet left in the cluster CIDR")

// CIDRSet hands out the subnets of one size ("node CIDRs") of a cluster
// CIDR, after Kubernetes' pkg/controller/nodeipam/ipam/cidrset. It is pure
// and not safe for concurrent use.
type CIDRSet struct {
	cluster  netip.Prefix
	maskSize int
	shift    uint // address bits below a subnet: bits - maskSize
	used     []bool
	nUsed    int
	// next is where the search for a free subnet starts: one past the
	// last allocation, so that a subnet just released is the last to be
	// handed out again (its routes and addresses may linger elsewhere).
	next int
}

// NewCIDRSet cuts cluster into subnets of maskSize bits.
func NewCIDRSet(cluster netip.Prefix, maskSize int) (*CIDRSet, error) {
	if !cluster.IsValid() {
		return nil, errors.New("invalid cluster CIDR")
	}
	cluster = cluster.Masked()
	bits := cluster.Addr().BitLen()
	switch {
	case maskSize < cluster.Bits() || maskSize > bits:
		return nil, fmt.Errorf("node CIDR mask size %d must lie between the cluster CIDR's %d and %d", maskSize, cluster.Bits(), bits)
	case maskSize-cluster.Bits() > MaxSubnetBits:
		return nil, fmt.Errorf("node CIDR mask size %d is too big for cluster CIDR %s: at most %d subnets (mask size at most %d)",
			maskSize, cluster, 1<<MaxSubnetBits, cluster.Bits()+MaxSubnetBits)
	}
	return &CIDRSet{
		cluster:  cluster,
		maskSize: maskSize,
		shift:    uint(bits - maskSize),
		used:     make([]bool, 1<<(maskSize-cluster.Bits())),
	}, nil
}

// Cluster is the cluster CIDR.
func (s *CIDRSet) Cluster() netip.Prefix { return s.cluster }

// MaskSize is the size of each subnet's mask.
func (s *CIDRSet) MaskSize() int { return s.maskSize }

// Total is the number of subnets.
func (s *CIDRSet) Total() int { return len(s.used) }

// Used is the number of subnets taken.
func (s *CIDRSet) Used() int { return s.nUsed }

// AllocateNext takes the next free subnet, or fails with ErrCIDRRangeFull.
func (s *CIDRSet) AllocateNext() (netip.Prefix, error) {
	n := len(s.used)
	for i := range n {
		idx := (s.next + i) % n
		if !s.used[idx] {
			s.used[idx] = true
			s.nUsed++
			s.next = (idx + 1) % n
			return s.subnet(idx), nil
		}
	}
	return netip.Prefix{}, ErrCIDRRangeFull
}

// Occupy marks every subnet overlapping p as taken (p may be a subnet, a
// part of one or several). p must lie inside the cluster CIDR.
func (s *CIDRSet) Occupy(p netip.Prefix) error {
	begin, end, err := s.indices(p)
	if err != nil {
		return err
	}
	for i := begin; i <= end; i++ {
		if !s.used[i] {
			s.used[i] = true
			s.nUsed++
		}
	}
	return nil
}

// Release frees every subnet overlapping p.
func (s *CIDRSet) Release(p netip.Prefix) error {
	begin, end, err := s.indices(p)
	if err != nil {
		return err
	}
	for i := begin; i <= end; i++ {
		if s.used[i] {
			s.used[i] = false
			s.nUsed--
		}
	}
	return nil
}

// InUse reports whether any subnet overlapping p is taken.
func (s *CIDRSet) InUse(p netip.Prefix) (bool, error) {
	begin, end, err := s.indices(p)
	if err != nil {
		return false, err
	}
	for i := begin; i <= end; i++ {
		if s.used[i] {
			return true, nil
		}
	}
	return false, nil
}

// Contains reports whether p lies inside the cluster CIDR.
func (s *CIDRSet) Contains(p netip.Prefix) bool {
	return p.IsValid() && p.Addr().BitLen() == s.cluster.Addr().BitLen() &&
		p.Bits() >= s.cluster.Bits() && s.cluster.Contains(p.Addr())
}

// indices are the first and last subnets overlapping p.
func (s *CIDRSet) indices(p netip.Prefix) (begin, end int, err error) {
	if !s.Contains(p) {
		return 0, 0, fmt.Errorf("%s is outside the cluster CIDR %s", p, s.cluster)
	}
	p = p.Masked()
	base := addrInt(s.cluster.Addr())
	first := new(big.Int).Sub(addrInt(p.Addr()), base)
	bits := uint(p.Addr().BitLen() - p.Bits()) // host bits of p
	last := new(big.Int).Add(first, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), bits), big.NewInt(1)))
	return int(first.Rsh(first, s.shift).Int64()), int(last.Rsh(last, s.shift).Int64()), nil
}

// subnet is the idx-th subnet.
func (s *CIDRSet) subnet(idx int) netip.Prefix {
	off := new(big.Int).Lsh(big.NewInt(int64(idx)), s.shift)
	a := intAddr(off.Add(off, addrInt(s.cluster.Addr())), s.cluster.Addr().Is4())
	return netip.PrefixFrom(a, s.maskSize)
}

func addrInt(a netip.Addr) *big.Int { return new(big.Int).SetBytes(a.AsSlice()) }

func intAddr(i *big.Int, is4 bool) netip.Addr {
	if is4 {
		var b [4]byte
		i.FillBytes(b[:])
		return netip.AddrFrom4(b)
	}
	var b [16]byte
	i.FillBytes(b[:])
	return netip.AddrFrom16(b)
}
