package informer

import (
	"slices"
	"strings"
	"sync"

	"skiff.dev/internal/object"
	corev1 "skiff.dev/proto/core/v1"
)

// Names of the indexes every informer's store keeps.
const (
	IndexNamespace = "namespace" // metadata.namespace
	IndexOwnerUID  = "owner"     // the uid of each ownerReference
	IndexLabel     = "label"     // "key=value" for each label
)

// IndexNodeName is the name of PodNodeName's index.
const IndexNodeName = "nodeName"

// IndexFunc returns the index values of an object.
type IndexFunc[T object.Object] func(T) []string

// PodNodeName indexes pods by spec.nodeName ("" for unscheduled pods).
func PodNodeName(p *corev1.Pod) []string { return []string{p.GetSpec().GetNodeName()} }

func namespaceIndex[T object.Object](obj T) []string {
	return []string{obj.GetMetadata().GetNamespace()}
}

func ownerIndex[T object.Object](obj T) []string {
	refs := obj.GetMetadata().GetOwnerReferences()
	if len(refs) == 0 {
		return nil
	}
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.GetUid()
	}
	return out
}

func labelIndex[T object.Object](obj T) []string {
	ls := obj.GetMetadata().GetLabels()
	if len(ls) == 0 {
		return nil
	}
	out := make([]string, 0, len(ls))
	for k, v := range ls {
		out = append(out, k+"="+v)
	}
	return out
}

// Key is an object's store key: "namespace/name", or "name" for
// cluster-scoped objects.
func Key(obj object.Object) string {
	m := obj.GetMetadata()
	return KeyOf(m.GetNamespace(), m.GetName())
}

// KeyOf builds a store key from its parts.
func KeyOf(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// Store is a thread-safe map of objects by key with secondary indexes.
// Readers get the stored objects themselves, which must not be modified.
type Store[T object.Object] struct {
	mu       sync.RWMutex
	items    map[string]T
	indexers map[string]IndexFunc[T]
	indices  map[string]map[string]map[string]T // index -> value -> key -> object
}

func newStore[T object.Object]() *Store[T] {
	s := &Store[T]{
		items:    map[string]T{},
		indexers: map[string]IndexFunc[T]{},
		indices:  map[string]map[string]map[string]T{},
	}
	s.addIndex(IndexNamespace, namespaceIndex[T])
	s.addIndex(IndexOwnerUID, ownerIndex[T])
	s.addIndex(IndexLabel, labelIndex[T])
	return s
}

// addIndex adds an index and indexes what the store already holds.
func (s *Store[T]) addIndex(name string, fn IndexFunc[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.indexers[name] = fn
	idx := map[string]map[string]T{}
	s.indices[name] = idx
	for key, obj := range s.items {
		for _, v := range fn(obj) {
			addTo(idx, v, key, obj)
		}
	}
}

func (s *Store[T]) hasIndex(name string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.indexers[name]
	return ok
}

func addTo[T any](idx map[string]map[string]T, value, key string, obj T) {
	objs := idx[value]
	if objs == nil {
		objs = map[string]T{}
		idx[value] = objs
	}
	objs[key] = obj
}

// Get returns the object with the given key.
func (s *Store[T]) Get(key string) (T, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	obj, ok := s.items[key]
	return obj, ok
}

// GetByName returns the object namespace/name ("" namespace for cluster-scoped kinds).
func (s *Store[T]) GetByName(namespace, name string) (T, bool) {
	return s.Get(KeyOf(namespace, name))
}

// Len is the number of objects held.
func (s *Store[T]) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.items)
}

// List returns every object, sorted by key.
func (s *Store[T]) List() []T {
	s.mu.RLock()
	objs := entries(s.items)
	s.mu.RUnlock()
	return sortedByKey(objs)
}

// ByIndex returns the objects whose index function returned value, sorted by key.
// It panics on an index that does not exist: that is a programming error.
func (s *Store[T]) ByIndex(index, value string) []T {
	s.mu.RLock()
	objs := entries(s.index(index)[value])
	s.mu.RUnlock()
	return sortedByKey(objs)
}

// EachByIndex calls fn with each object whose index function returned
// value, in no particular order, holding the store's read lock: fn must
// be quick and must not call the store. It is ByIndex without the copy
// and the sort, for a controller that counts thousands of pods per sync.
func (s *Store[T]) EachByIndex(index, value string, fn func(T)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, obj := range s.index(index)[value] {
		fn(obj)
	}
}

// index returns an index's map; the caller holds the lock. It panics on
// an index that does not exist: that is a programming error.
func (s *Store[T]) index(name string) map[string]map[string]T {
	idx, ok := s.indices[name]
	if !ok {
		panic("informer: no index " + name)
	}
	return idx
}

// ByNamespace returns the objects of one namespace.
func (s *Store[T]) ByNamespace(namespace string) []T { return s.ByIndex(IndexNamespace, namespace) }

// ByOwner returns the objects with an ownerReference to uid.
func (s *Store[T]) ByOwner(uid string) []T { return s.ByIndex(IndexOwnerUID, uid) }

// keyed is an object with its key, to sort outside the store's lock.
type keyed[T any] struct {
	key string
	obj T
}

// entries copies m's objects with their keys; the caller holds the lock.
func entries[T any](m map[string]T) []keyed[T] {
	out := make([]keyed[T], 0, len(m))
	for k, obj := range m {
		out = append(out, keyed[T]{k, obj})
	}
	return out
}

// sortedByKey returns the objects sorted by their keys.
func sortedByKey[T any](kv []keyed[T]) []T {
	slices.SortFunc(kv, func(a, b keyed[T]) int { return strings.Compare(a.key, b.key) })
	out := make([]T, len(kv))
	for i, e := range kv {
		out[i] = e.obj
	}
	return out
}

// put stores obj and returns what it replaced.
func (s *Store[T]) put(obj T) (old T, existed bool) {
	key := Key(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	old, existed = s.items[key]
	if existed {
		s.unindex(key, old)
	}
	s.items[key] = obj
	for name, fn := range s.indexers {
		idx := s.indices[name]
		for _, v := range fn(obj) {
			addTo(idx, v, key, obj)
		}
	}
	return old, existed
}

// remove deletes the object with key and returns it.
func (s *Store[T]) remove(key string) (old T, existed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, existed = s.items[key]
	if existed {
		s.unindex(key, old)
		delete(s.items, key)
	}
	return old, existed
}

func (s *Store[T]) unindex(key string, obj T) {
	for name, fn := range s.indexers {
		idx := s.indices[name]
		for _, v := range fn(obj) {
			if objs := idx[v]; objs != nil {
				delete(objs, key)
				if len(objs) == 0 {
					delete(idx, v)
				}
			}
		}
	}
}

// keys returns a snapshot of every key.
func (s *Store[T]) keys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.items))
	for k := range s.items {
		out = append(out, k)
	}
	return out
}
