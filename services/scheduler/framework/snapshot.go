package framework

// Snapshot is the cluster as one scheduling cycle sees it: a copy of the
// cache's NodeInfos (only those with a known node) that does not change
// while the cycle runs. The cache updates it between cycles, copying only
// the nodes that changed (cache.UpdateSnapshot); nobody else writes it.
type Snapshot struct {
	// NodeInfoMap holds every node by name; NodeInfoList the same nodes in
	// a stable order (the order the search for feasible nodes walks).
	NodeInfoMap  map[string]*NodeInfo
	NodeInfoList []*NodeInfo
	// HavePodsWithAffinityList and HavePodsWithRequiredAntiAffinityList
	// are the nodes of NodeInfoList with pods in their PodsWithAffinity
	// and PodsWithRequiredAntiAffinity lists (InterPodAffinity reads
	// these instead of every node).
	HavePodsWithAffinityList             []*NodeInfo
	HavePodsWithRequiredAntiAffinityList []*NodeInfo
	// AffinityIndex indexes the pods of NodeInfoMap by label and their
	// required anti-affinity terms, for InterPodAffinity (nil: not kept;
	// the plugin then scans every pod). Whoever changes NodeInfoMap keeps
	// it in step (CopyNodeInfo, IndexNodeInfo, UnindexNodeInfo).
	AffinityIndex *AffinityIndex
	// Generation is the cache generation the snapshot reflects.
	Generation int64
}

// NewEmptySnapshot returns a snapshot with no nodes.
func NewEmptySnapshot() *Snapshot {
	return &Snapshot{NodeInfoMap: map[string]*NodeInfo{}, AffinityIndex: NewAffinityIndex()}
}

// NewSnapshot returns a snapshot of nodes, in order (for tests and
// benchmarks; the scheduler's snapshot comes from the cache).
func NewSnapshot(nodes ...*NodeInfo) *Snapshot {
	s := NewEmptySnapshot()
	for _, n := range nodes {
		s.NodeInfoMap[n.Name()] = n
		s.NodeInfoList = append(s.NodeInfoList, n)
		s.IndexNodeInfo(n)
	}
	s.UpdateAffinityLists()
	return s
}

// UpdateAffinityLists recomputes HavePodsWithAffinityList and
// HavePodsWithRequiredAntiAffinityList from NodeInfoList.
func (s *Snapshot) UpdateAffinityLists() {
	clear(s.HavePodsWithAffinityList)
	clear(s.HavePodsWithRequiredAntiAffinityList)
	s.HavePodsWithAffinityList = s.HavePodsWithAffinityList[:0]
	s.HavePodsWithRequiredAntiAffinityList = s.HavePodsWithRequiredAntiAffinityList[:0]
	for _, n := range s.NodeInfoList {
		if len(n.PodsWithAffinity) > 0 {
			s.HavePodsWithAffinityList = append(s.HavePodsWithAffinityList, n)
		}
		if len(n.PodsWithRequiredAntiAffinity) > 0 {
			s.HavePodsWithRequiredAntiAffinityList = append(s.HavePodsWithRequiredAntiAffinityList, n)
		}
	}
}

// List returns the nodes in the snapshot's order.
func (s *Snapshot) List() []*NodeInfo { return s.NodeInfoList }

// Get returns the named node, nil if unknown.
func (s *Snapshot) Get(name string) *NodeInfo { return s.NodeInfoMap[name] }

// NumNodes is the number of nodes.
func (s *Snapshot) NumNodes() int { return len(s.NodeInfoList) }
