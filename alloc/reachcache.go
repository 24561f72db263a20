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
// its failures change.
type reachCache struct {
	mu      sync.RWMutex
	answers map[string]bool
	bytes   int // key bytes held
	rt      Router
	g       *topology.Graph
	faults  uint64
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
	same = c.answers != nil && c.g == g && c.faults == faults && comparableRouter(rt) &&
		comparableRouter(c.rt) && c.rt == rt
	if !same || c.bytes >= reachCacheBytes {
		c.answers, c.bytes = map[string]bool{}, 0
	}
	c.rt, c.g, c.faults = rt, g, faults
	return same
}

func comparableRouter(rt Router) bool {
	return rt != nil && reflect.ValueOf(rt).Comparable()
}

// reachable answers whether the set list returns is reachable: from the
// cache when one of its keys (each naming the set exactly) is there, else
// by ask (the router's answer); the answer is then kept under every key.
func (c *reachCache) reachable(ask func(active, transit []int) (bool, error), list func() (active, transit []int), keys ...[]byte) (bool, error) {
	c.mu.RLock()
	ok, hit := false, false
	for _, k := range keys {
		if ok, hit = c.answers[string(k)]; hit {
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
	if hit && len(keys) == 1 {
		return ok, nil
	}
	c.mu.Lock()
	for _, k := range keys {
		if _, in := c.answers[string(k)]; !in && c.bytes < reachCacheBytes {
			c.answers[string(k)] = ok
			c.bytes += len(k)
		}
	}
	c.mu.Unlock()
	return ok, nil
}
