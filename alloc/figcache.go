package alloc

import (
	"encoding/binary"
	"github.com/icn-hpc/icn/routing"
	"sync"
)

// figureCache keeps, across decisions, the routing-table figures of
// translation classes of candidate sets: with a translation-invariant
// router the sets of one class (one job size, one shape: see
// decision.nameClasses) have isomorphic tables, so a class met again is
// ranked without building its table. verified records that a table of
// the class passed verification; a class that wins without it has its
// table built and verified then. The cache is emptied with the
// reachability cache (another router, graph or failures) and when it
// holds maxFigures classes.
type figureCache struct {
	mu  sync.Mutex
	out map[string]figureEntry
	key []byte
	// hits counts classes ranked from the cache; late counts those
	// whose table was built and verified only when they won.
	hits, late int
}

type figureEntry struct {
	fig      routing.Figures
	verified bool
}

const maxFigures = 1 << 16

func (c *figureCache) reset() {
	c.mu.Lock()
	c.out = nil
	c.mu.Unlock()
}

// name is the cache key of class shape for jobs of m nodes (valid until
// the next call).
func (c *figureCache) name(m int, shape string) []byte {
	c.key = append(binary.AppendUvarint(c.key[:0], uint64(m)), shape...)
	return c.key
}

// has reports whether the class's figures are known, without counting a
// hit.
func (c *figureCache) has(m int, shape string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.out[string(c.name(m, shape))]
	return ok
}

func (c *figureCache) get(m int, shape string) (figureEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.out[string(c.name(m, shape))]
	if ok {
		c.hits++
	}
	return e, ok
}

// put records a class's figures; verified only ever turns on.
func (c *figureCache) put(m int, shape string, fig routing.Figures, verified bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out == nil || len(c.out) >= maxFigures {
		c.out = map[string]figureEntry{}
	}
	k := c.name(m, shape)
	e, ok := c.out[string(k)]
	c.out[string(k)] = figureEntry{fig: fig, verified: verified || ok && e.verified}
}

// verifiedLate counts a class whose table was verified only when it won.
func (c *figureCache) verifiedLate() {
	c.mu.Lock()
	c.late++
	c.mu.Unlock()
}
