package httpapi

import (
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// A List's JSON is written from the objects' encodings the endpoint
// answered with (server.Methods.CallList: the watch cache's, shared and
// never changed) instead of the list decoded as a whole: each object's
// JSON is kept in itemJSON, keyed by its type and its encoding, and a
// list is its head's JSON with its items' spliced in, the very bytes
// encodeList makes of the decoded list. An object that changes has a new
// encoding, hence a new key: a cached JSON is never stale, only unused
// until it is evicted.

// itemJSONBudget bounds the bytes itemJSON keeps (keys, JSON and a
// little for each entry).
const itemJSONBudget = 64 << 20

var itemJSON = newJSONCache(itemJSONBudget)

// listJSON is encodeList of list with items (each an item's encoding)
// as its items: list holds the rest (apiVersion, kind, metadata).
func listJSON(list proto.Message, items [][]byte) ([]byte, error) {
	return itemJSON.listJSON(list, items)
}

// jsonCache keeps objects' JSON by their type and encoding, within a
// budget of bytes: past it, entries not used since the last eviction go
// first (a second chance), then any, down to three quarters of it.
type jsonCache struct {
	budget int

	mu    sync.RWMutex
	types map[protoreflect.FullName]map[string]*cachedJSON
	size  int // bytes of every entry (entrySize)

	hits, misses atomic.Uint64
}

type cachedJSON struct {
	json []byte
	used atomic.Bool // looked up since the last eviction
}

// entryOverhead is what an entry costs besides its key's and JSON's
// bytes: its map slot, string and slice headers, the cachedJSON.
const entryOverhead = 96

func entrySize(key, json []byte) int { return len(key) + len(json) + entryOverhead }

func newJSONCache(budget int) *jsonCache {
	return &jsonCache{budget: budget, types: map[protoreflect.FullName]map[string]*cachedJSON{}}
}

// listJSON: see the package's listJSON.
func (c *jsonCache) listJSON(list proto.Message, items [][]byte) ([]byte, error) {
	m := list.ProtoReflect()
	fds := m.Descriptor().Fields()
	fd := fds.ByName("items")
	if fd == nil || !fd.IsList() || fd.Message() == nil || fds.Get(fds.Len()-1) != fd || m.Has(fd) {
		// Not the shape spliced below (items last of the list's
		// fields, whose JSON is in declaration order): decode.
		return decodedListJSON(list, items)
	}
	head := encodeJSON(list) // "items" left out: there are none
	if len(head) < 2 || head[len(head)-1] != '}' {
		return decodedListJSON(list, items)
	}
	elem := m.NewField(fd).List().NewElement().Message().Type()
	jsons, err := c.itemsJSON(elem, items)
	if err != nil {
		return nil, err
	}
	n := len(head) + len(`,"items":[]`) + len(jsons)
	for _, j := range jsons {
		n += len(j)
	}
	b := make([]byte, 0, n)
	b = append(b, head[:len(head)-1]...)
	if len(head) > 2 {
		b = append(b, ',')
	}
	b = append(b, `"items":[`...)
	for i, j := range jsons {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, j...)
	}
	return append(b, "]}"...), nil
}

// decodedListJSON is encodeList of list with items decoded into it.
func decodedListJSON(list proto.Message, items [][]byte) ([]byte, error) {
	m := list.ProtoReflect()
	fd := m.Descriptor().Fields().ByName("items")
	if fd == nil {
		return encodeList(list, 0), nil
	}
	l := m.Mutable(fd).List()
	for _, b := range items {
		e := l.NewElement()
		if err := proto.Unmarshal(b, e.Message().Interface()); err != nil {
			return nil, err
		}
		l.Append(e)
	}
	return encodeList(list, l.Len()), nil
}

// itemsJSON is each item's JSON, from the cache or made (and kept).
func (c *jsonCache) itemsJSON(mt protoreflect.MessageType, items [][]byte) ([][]byte, error) {
	typ := mt.Descriptor().FullName()
	jsons := make([][]byte, len(items))
	missed := 0
	c.mu.RLock()
	byEnc := c.types[typ]
	for i, b := range items {
		if e, ok := byEnc[string(b)]; ok {
			jsons[i] = e.json
			if !e.used.Load() {
				e.used.Store(true)
			}
		} else {
			missed++
		}
	}
	c.mu.RUnlock()
	c.hits.Add(uint64(len(items) - missed))
	if missed == 0 {
		return jsons, nil
	}
	c.misses.Add(uint64(missed))
	made := make([]int, 0, missed)
	for i, b := range items {
		if jsons[i] != nil {
			continue
		}
		msg := mt.New().Interface()
		if err := proto.Unmarshal(b, msg); err != nil {
			return nil, err
		}
		jsons[i] = encodeJSON(msg)
		made = append(made, i)
	}
	c.add(typ, items, jsons, made)
	return jsons, nil
}

// add keeps the JSON made for items[i], i in made, then evicts down to
// the budget if it is past it.
func (c *jsonCache) add(typ protoreflect.FullName, items, jsons [][]byte, made []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	byEnc := c.types[typ]
	if byEnc == nil {
		byEnc = map[string]*cachedJSON{}
		c.types[typ] = byEnc
	}
	for _, i := range made {
		size := entrySize(items[i], jsons[i])
		if size > c.budget/8 {
			continue // an object that would take much of the cache
		}
		if _, ok := byEnc[string(items[i])]; ok {
			continue // made by a list at the same time
		}
		e := &cachedJSON{json: jsons[i]}
		e.used.Store(true)
		byEnc[string(items[i])] = e
		c.size += size
	}
	if c.size > c.budget {
		c.evict(c.budget - c.budget/4)
	}
}

// evict drops entries until the cache's size is at most low: first those
// not used since the last eviction (clearing the mark of those it
// passes), then any.
func (c *jsonCache) evict(low int) {
	for pass := 0; pass < 2; pass++ {
		for typ, byEnc := range c.types {
			for k, e := range byEnc {
				if c.size <= low {
					return
				}
				if pass == 0 && e.used.Load() {
					e.used.Store(false)
					continue
				}
				delete(byEnc, k)
				c.size -= len(k) + len(e.json) + entryOverhead
			}
			if len(byEnc) == 0 {
				delete(c.types, typ)
			}
		}
	}
}
