package cdg

import "sort"

// Tag classifies a dependency edge.
type Tag uint8

const (
	// Turn is a dependency between channels of different directions/rings.
	Turn Tag = iota
	// Straight is a dependency along one ring (same dimension and sign);
	// bubble flow control makes cycles of such edges alone harmless.
	Straight
)

// Graph is a dependency graph on vertices 0..n-1. Add edges, then query.
// Duplicate edges are allowed and collapsed when the graph is frozen.
type Graph struct {
	n      int
	from   []int32
	to     []int32
	tag    []Tag
	frozen bool
	start  []int32 // CSR
	adj    []int32
	adjTag []Tag
}

// New returns an empty graph on n vertices.
func New(n int) *Graph { return &Graph{n: n} }

// N returns the number of vertices.
func (g *Graph) N() int { return g.n }

// Add records the dependency a -> b.
func (g *Graph) Add(a, b int32, t Tag) {
	g.from = append(g.from, a)
	g.to = append(g.to, b)
	g.tag = append(g.tag, t)
	g.frozen = false
}

// Edges returns the number of distinct edges.
func (g *Graph) Edges() int { g.freeze(); return len(g.adj) }

func (g *Graph) freeze() {
	if g.frozen {
		return
	}
	idx := make([]int, len(g.from))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(x, y int) bool {
		i, j := idx[x], idx[y]
		if g.from[i] != g.from[j] {
			return g.from[i] < g.from[j]
		}
		if g.to[i] != g.to[j] {
			return g.to[i] < g.to[j]
		}
		return g.tag[i] < g.tag[j] // Turn (0) first: a turn wins over a straight duplicate
	})
	g.start = make([]int32, g.n+1)
	g.adj = g.adj[:0]
	g.adjTag = g.adjTag[:0]
	for k, i := range idx {
		if k > 0 {
			p := idx[k-1]
			if g.from[p] == g.from[i] && g.to[p] == g.to[i] {
				continue
			}
		}
		g.adj = append(g.adj, g.to[i])
		g.adjTag = append(g.adjTag, g.tag[i])
		g.start[g.from[i]+1]++
	}
	for v := 0; v < g.n; v++ {
		g.start[v+1] += g.start[v]
	}
	g.frozen = true
}

// SCC returns the strongly connected component of every vertex (Tarjan,
// iterative) and the number of components.
func (g *Graph) SCC() (comp []int32, ncomp int) {
	g.freeze()
	n := g.n
	comp = make([]int32, n)
	index := make([]int32, n)
	low := make([]int32, n)
	for i := range index {
		index[i] = -1
		comp[i] = -1
	}
	onStack := make([]bool, n)
	var stack []int32
	type frame struct{ v, e int32 }
	var call []frame
	var counter int32
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		call = append(call, frame{int32(root), g.start[root]})
		index[root], low[root] = counter, counter
		counter++
		stack = append(stack, int32(root))
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			v := f.v
			if f.e < g.start[v+1] {
				w := g.adj[f.e]
				f.e++
				if index[w] < 0 {
					index[w], low[w] = counter, counter
					counter++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, g.start[w]})
				} else if onStack[w] && index[w] < low[v] {
					low[v] = index[w]
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				u := call[len(call)-1].v
				if low[v] < low[u] {
					low[u] = low[v]
				}
			}
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = int32(ncomp)
					if w == v {
						break
					}
				}
				ncomp++
			}
		}
	}
	return comp, ncomp
}

// Deadlock reports a dependency cycle that is not tolerated, or nil.
// With bubble true, cycles consisting only of Straight edges are tolerated
// (a cycle is reported only if it contains a Turn edge); otherwise any cycle
// counts. The returned cycle lists vertices v0, v1, ..., vk with edges
// v0->v1->...->vk->v0.
func (g *Graph) Deadlock(bubble bool) []int32 {
	comp, _ := g.SCC()
	for v := 0; v < g.n; v++ {
		for e := g.start[v]; e < g.start[v+1]; e++ {
			w := g.adj[e]
			if comp[w] != comp[v] {
				continue
			}
			if bubble && g.adjTag[e] == Straight {
				continue
			}
			if int32(v) == w {
				return []int32{w}
			}
			// Cycle: edge v->w, then a path w ~> v inside the component.
			path := g.pathWithin(w, int32(v), comp)
			return path
		}
	}
	return nil
}

// pathWithin returns a shortest path from a to b using only vertices of a's
// component (BFS), as the vertex list a..b.
func (g *Graph) pathWithin(a, b int32, comp []int32) []int32 {
	c := comp[a]
	prev := map[int32]int32{a: -1}
	queue := []int32{a}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		if v == b {
			break
		}
		for e := g.start[v]; e < g.start[v+1]; e++ {
			w := g.adj[e]
			if comp[w] != c {
				continue
			}
			if _, seen := prev[w]; !seen {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	var rev []int32
	for v := b; v != -1; v = prev[v] {
		rev = append(rev, v)
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// Acyclic reports whether the graph has no cycle at all.
func (g *Graph) Acyclic() bool { return g.Deadlock(false) == nil }

// Reaches reports whether b is reachable from a (a == b counts as reachable
// only through a non-empty path if strict is true).
func (g *Graph) Reaches(a, b int32) bool {
	g.freeze()
	seen := make(map[int32]bool)
	stack := []int32{a}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for e := g.start[v]; e < g.start[v+1]; e++ {
			w := g.adj[e]
			if w == b {
				return true
			}
			if !seen[w] {
				seen[w] = true
				stack = append(stack, w)
			}
		}
	}
	return false
}
