package alloc

import (
	"encoding/binary"
	"hash/maphash"
	"reflect"
	"sync"

	"github.com/icn-hpc/icn/topology"
)

// reachCacheBytes bounds the key bytes of the answers a Selector keeps
// between decisions (keys of large sets are long); the cache stops
// growing when the bound is reached and is emptied at the next decision.
const reachCacheBytes = 8 << 20

// reachCache keeps the router's reachability answers between decisions.
// An answer depends only on the router, the network with its failures and
// the node lists asked about, not on which other nodes are busy, so
// successive decisions on one machine (a cluster replay) ask many of the
// same questions. The cache is emptied whenever the router, the graph or
// its failures change. Keys are kept in one byte slab and found by
// their hash (entries with the same hash are chained and compared in
// full), so holding them allocates nothing per key and gives the garbage
// collector no pointers to scan.
type reachCache struct {
	mu      sync.RWMutex
	index   hashIndex // key hash → 1 + first entry with that hash
	entries []reachEntry
	slab    []byte // the keys, one after the other
	rt      Router
	g       *topology.Graph
	faults  uint64
}

// reachEntry is one cached answer: its key is slab[off:off+n].
type reachEntry struct {
	off, n uint32
	next   uint32 // 1 + next entry with the same hash, 0 at the end
	ok     bool
}

var keySeed = maphash.MakeSeed()

// lookup finds key's answer (under at least the read lock).
func (c *reachCache) lookup(h uint64, key []byte) (ok, hit bool) {
	for i := c.index.get(h); i != 0; {
		e := &c.entries[i-1]
		if string(c.slab[e.off:e.off+e.n]) == string(key) {
			return e.ok, true
		}
		i = e.next
	}
	return false, false
}

// store keeps key's answer unless the key is there or the slab is full
// (under the write lock).
func (c *reachCache) store(h uint64, key []byte, ok bool) {
	if _, in := c.lookup(h, key); in || len(c.slab) >= reachCacheBytes {
		return
	}
	c.entries = append(c.entries, reachEntry{off: uint32(len(c.slab)), n: uint32(len(key)), next: c.index.get(h), ok: ok})
	c.slab = append(c.slab, key...)
	c.index.set(h, uint32(len(c.entries)))
}

var faultSeed = maphash.MakeSeed()

// faultPrint fingerprints the failed links and nodes of the state's graph.
func (sel *Selector) faultPrint(s *State) uint64 {
	var h maphash.Hash
	h.SetSeed(faultSeed)
	var b [8]byte
	for v, f := range sel.faultDirs {
		if f != 0 || s.g.NodeFailed(v) {
			binary.LittleEndian.PutUint32(b[:4], uint32(v))
			binary.LittleEndian.PutUint16(b[4:6], f)
			b[6] = 0
			if s.g.NodeFailed(v) {
				b[6] = 1
			}
			h.Write(b[:7])
		}
	}
	return h.Sum64()
}

// reset empties the cache unless it was filled for the same router, graph
// and failures (a router whose value cannot be compared is never trusted
// across decisions), and reports whether they are the same.
func (c *reachCache) reset(rt Router, g *topology.Graph, faults uint64) (same bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	same = c.g != nil && c.g == g && c.faults == faults && comparableRouter(rt) &&
		comparableRouter(c.rt) && c.rt == rt
	if !same || len(c.slab) >= reachCacheBytes {
		c.index.clear()
		c.entries, c.slab = c.entries[:0], c.slab[:0]
	}
	c.rt, c.g, c.faults = rt, g, faults
	return same
}

// forget empties the cache, as if it had kept nothing (tests).
func (c *reachCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.index.clear()
	c.entries, c.slab = c.entries[:0], c.slab[:0]
}

func comparableRouter(rt Router) bool {
	return rt != nil && reflect.ValueOf(rt).Comparable()
}

// reachable answers whether the set list returns is reachable: from the
// cache when one of its keys (each naming the set exactly) is there, else
// by ask (the router's answer). The keys are tried in order, and the
// answer is then kept under those tried before the one found (every key
// on a miss).
func (c *reachCache) reachable(ask func(active, transit []int) (bool, error), list func() (active, transit []int), keys ...[]byte) (bool, error) {
	var hashes [4]uint64
	hs := hashes[:0]
	for _, k := range keys {
		hs = append(hs, maphash.Bytes(keySeed, k))
	}
	ok, hit, at := false, false, len(keys)
	c.mu.RLock()
	for i, k := range keys {
		if ok, hit = c.lookup(hs[i], k); hit {
			at = i
			break
		}
	}
	c.mu.RUnlock()
	if !hit {
		var err error
		if ok, err = ask(list()); err != nil {
			return false, err
		}
	}
	if at == 0 {
		return ok, nil
	}
	c.mu.Lock()
	for i, k := range keys[:at] {
		c.store(hs[i], k, ok)
	}
	c.mu.Unlock()
	return ok, nil
}

// hashIndex maps 64-bit key hashes to entry numbers (≠ 0) by open
// addressing with linear probing, in one array of slots: a lookup reads
// one slot (one cache line) where a map reads its control word and then
// its slot.
type hashIndex struct {
	slots []hashSlot // len a power of two, at most half full
	used  int
}

type hashSlot struct {
	h uint64
	e uint32 // 0: empty
}

// get returns the entry stored for h, or 0.
func (x *hashIndex) get(h uint64) uint32 {
	if len(x.slots) == 0 {
		return 0
	}
	mask := uint64(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.e == 0 || s.h == h {
			return s.e
		}
	}
}

// set stores entry e (≠ 0) for h.
func (x *hashIndex) set(h uint64, e uint32) {
	if 2*(x.used+1) > len(x.slots) {
		x.grow()
	}
	mask := uint64(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.e == 0 {
			x.used++
			*s = hashSlot{h, e}
			return
		}
		if s.h == h {
			s.e = e
			return
		}
	}
}

// grow doubles the slots (1 024 at first) and stores the entries again.
func (x *hashIndex) grow() {
	old := x.slots
	x.slots, x.used = make([]hashSlot, max(1024, 2*len(old))), 0
	for _, s := range old {
		if s.e != 0 {
			x.set(s.h, s.e)
		}
	}
}

// clear forgets every entry, keeping the slots.
func (x *hashIndex) clear() {
	clear(x.slots)
	x.used = 0
}
