package routing

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/icn-hpc/icn/internal/cdg"
	"github.com/icn-hpc/icn/internal/par"
)

// The genetic table algorithm (seed 001 §3.3). A gene is the route of one
// ordered pair of active nodes, chosen among that pair's minimal legal
// routes (the candidates); an individual is a whole table (one gene per
// pair); its fitness is the balance factor, i.e. π_max, since every
// candidate is minimal and π_perfect is the same for all individuals.
// Ties in π_max are broken by the number of channels that carry π_max and
// then by the sum of squared loads, so that the search can make progress
// on a plateau of equal balance factors.
//
// Pairs with a single minimal legal route are not genes: their load is
// fixed. The population starts from the BFS table and random variants of
// it. Each generation keeps the Elite best individuals unchanged and
// fills the rest with children: two parents picked by binary tournament,
// crossed per source (every source's routes come whole from one parent),
// then mutated: a few genes re-picked at random, and a few repair steps
// that take a route through a busiest channel and move it to the
// candidate whose most loaded channel is least loaded. One generation
// costs O(k·|M_a|²) for k individuals, as in the seed.

// Defaults of GeneticOptions.
const (
	DefaultGeneticPopulation  = 32
	DefaultGeneticGenerations = 1000
	DefaultGeneticTimeLimit   = 10 * time.Second
	defaultGeneticElite       = 2
	defaultGeneticCandidates  = 32
	// maxGeneticActive bounds the set size: the candidates of every
	// ordered pair are kept in memory (the seed finds the algorithm too
	// slow above 48 nodes already).
	maxGeneticActive = 1024
	// geneticRepairSteps bounds the repair steps of one mutation.
	geneticRepairSteps = 8
)

// Reasons a genetic run stops (GeneticRun.Stop).
const (
	StopGenerations  = "generations" // the generation limit was reached
	StopOptimal      = "optimal"     // π_max reached its lower bound ⌈Σ lengths / |C(M_{a,t})|⌉
	StopTimeLimit    = "time limit"
	StopCancelled    = "cancelled"
	StopNoAlternates = "no alternatives" // every pair has a single minimal legal route
)

// GeneticOptions tune the genetic algorithm (BuildOptions.Genetic); the
// zero value has the defaults. The table depends only on the set, the
// rule, Seed, Population, Generations, Elite and MaxCandidates (and on
// BuildOptions.Batch and ExactOrder through the BFS table it starts
// from) — not on BuildOptions.Workers — unless the time limit or the
// context stops the run first.
type GeneticOptions struct {
	Seed uint64
	// Population is the number k of individuals (default 32, at least 2).
	Population int
	// Generations bounds the generations (0: the default 1000; −1:
	// none, the best of the initial population is returned).
	Generations int
	// NoGenerationLimit makes Generations 0 mean "no limit" (then only
	// the time limit, the context or the optimum stop the run).
	NoGenerationLimit bool
	// TimeLimit stops the run between generations (default 10 s, the
	// Slurm plugin budget of the seed; negative: none). It counts from
	// the call, BFS table and candidate enumeration included.
	TimeLimit time.Duration
	// Elite is the number of best individuals copied unchanged into the
	// next generation (default 2).
	Elite int
	// MaxCandidates bounds the minimal legal routes kept per pair
	// (default 32, at most 255; the BFS route is always kept).
	MaxCandidates int
}

func (o *GeneticOptions) defaults() error {
	if o.Population == 0 {
		o.Population = DefaultGeneticPopulation
	}
	switch {
	case o.Generations == 0 && !o.NoGenerationLimit:
		o.Generations = DefaultGeneticGenerations
	case o.Generations == -1:
		o.Generations, o.NoGenerationLimit = 0, false
	}
	if o.TimeLimit == 0 {
		o.TimeLimit = DefaultGeneticTimeLimit
	}
	if o.Elite == 0 {
		o.Elite = defaultGeneticElite
	}
	if o.MaxCandidates == 0 {
		o.MaxCandidates = defaultGeneticCandidates
	}
	switch {
	case o.Population < 2 || o.Population > 10000:
		return fmt.Errorf("genetic population %d out of range 2..10000", o.Population)
	case o.Generations < 0:
		return fmt.Errorf("genetic generation limit %d: want ≥ −1", o.Generations)
	case o.Elite < 1 || o.Elite >= o.Population:
		return fmt.Errorf("genetic elite %d: want 1 ≤ elite < population %d", o.Elite, o.Population)
	case o.MaxCandidates < 1 || o.MaxCandidates > 255:
		return fmt.Errorf("candidate routes per pair %d out of range 1..255", o.MaxCandidates)
	}
	return nil
}

// GeneticRun describes a genetic run.
type GeneticRun struct {
	Seed        uint64 `json:"seed"`
	Population  int    `json:"population"`
	Generations int    `json:"generations"` // generations completed
	Stop        string `json:"stop"`        // why it stopped (Stop… constants)
	// BFS is the figure of the BFS table the population starts from.
	BFS Figures `json:"bfs"`
	// PiMaxBound is the lower bound ⌈Σ lengths / |C(M_{a,t})|⌉ of π_max.
	PiMaxBound int `json:"pi_max_bound"`
	// FreePairs counts the pairs with more than one minimal legal route
	// (the genes), Candidates their candidate routes.
	FreePairs  int           `json:"free_pairs"`
	Candidates int           `json:"candidates"`
	Elapsed    time.Duration `json:"-"`
}

// buildGenetic builds a table with the genetic algorithm (Build with
// Algo Genetic), verifies it as Build does and hangs the description of
// the run off it (Table.GeneticRun). Every route is a minimal legal route
// inside the set; the table's π_max is never above the BFS table's. For
// the angara rule (which may deadlock) an individual with a dependency
// cycle counts as worse than any without one, so the result is
// deadlock-free whenever the BFS table is. When ctx ends after the BFS
// table exists, the best table so far is returned.
func (r *Router) buildGenetic(active, transit []int, o GeneticOptions, run tableRun) (*Table, error) {
	start := time.Now()
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if len(active) > maxGeneticActive {
		return nil, fmt.Errorf("the genetic algorithm handles at most %d active nodes (it keeps every pair's candidate routes), got %d", maxGeneticActive, len(active))
	}
	bfs, err := r.buildVerified(active, transit, BFS, tableRun{workers: run.workers, batch: run.batch, exact: run.exact, ctx: run.ctx})
	if err != nil {
		return nil, err
	}
	sp, err := r.geneSpaceOf(bfs, o, run)
	if err != nil {
		return nil, err
	}
	ga := newGeneticState(r, bfs, sp, o, run)
	desc := &GeneticRun{Seed: o.Seed, Population: o.Population, BFS: bfs.Figures, PiMaxBound: int(ga.bound), FreePairs: ga.genes, Candidates: ga.candidates}
	best := ga.evolve(start, desc)
	tb, err := ga.table(best)
	if err != nil {
		return nil, err
	}
	if err := r.verifyBuilt(context.Background(), tb, run.workers); err != nil {
		return nil, err
	}
	if tb.Figures.PiMax > bfs.Figures.PiMax || (bfs.DeadlockFree && !tb.DeadlockFree) {
		return nil, fmt.Errorf("internal error: the genetic table (%v) is worse than the BFS table (%v)", tb.Figures, bfs.Figures)
	}
	desc.Elapsed = time.Since(start)
	tb.GeneticRun = desc
	return tb, nil
}

// ---- the search space: minimal legal routes of every pair ----

// geneSpace holds, for every ordered active pair (table index i), its
// candidates first[i]..first[i+1]: each a table route code (stride bytes)
// and its channels (indices into chans).
type geneSpace struct {
	stride int
	first  []int32
	codes  []byte
	chOff  []int32
	ch     []int32
	chans  []int32 // channel index → topology channel id
	bfsOf  []uint8 // per pair: which candidate is the BFS route
}

func (sp *geneSpace) code(k int) []byte { return sp.codes[k*sp.stride : (k+1)*sp.stride] }

func (sp *geneSpace) channels(k int) []int32 { return sp.ch[sp.chOff[k]:sp.chOff[k+1]] }

// sourceCands are the candidates of one source, destinations in table
// order.
type sourceCands struct {
	count []int32 // per destination (m entries, 0 for the source itself)
	codes []byte
	chLen []int32
	ch    []int32 // topology channel ids
	err   error
}

// geneSpaceOf enumerates the minimal legal routes of every pair of the
// BFS table's set (one search in RG per source, on all cores) and makes
// sure the BFS route is among them.
func (r *Router) geneSpaceOf(bfs *Table, o GeneticOptions, run tableRun) (*geneSpace, error) {
	s := r.getScratch()
	defer r.putScratch(s)
	if err := r.prepareSet(s, bfs.Active, bfs.Transit); err != nil {
		return nil, err
	}
	ls := r.newLocalSet(s, false) // numbered by id: local index = table index
	m := ls.m
	out := make([]sourceCands, m)
	nw := par.Workers(run.workers)
	searches := make([]*candSearch, nw)
	for i := range searches {
		searches[i] = newCandSearch(r, ls, bfs, o.MaxCandidates)
	}
	ctx := run.ctx
	par.For(m, nw, func(wi, si int) {
		if ctx != nil && ctx.Err() != nil {
			return
		}
		out[si] = searches[wi].source(si)
	})
	if ctx != nil && ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return gatherSpace(r, bfs, out)
}

// gatherSpace joins the per-source candidates into one space, numbering
// the channels the candidates use.
func gatherSpace(r *Router, bfs *Table, out []sourceCands) (*geneSpace, error) {
	m := len(bfs.Active)
	sp := &geneSpace{stride: bfs.stride, first: []int32{0}}
	chIdx := make([]int32, len(r.up))
	for i := range chIdx {
		chIdx[i] = -1
	}
	sp.chOff = []int32{0}
	for si := 0; si < m; si++ {
		sc := &out[si]
		if sc.err != nil {
			return nil, sc.err
		}
		k, off := 0, 0
		for dj, n := range sc.count {
			if dj == si {
				continue
			}
			for c := 0; c < int(n); c++ {
				sp.codes = append(sp.codes, sc.codes[k*sp.stride:(k+1)*sp.stride]...)
				for _, ch := range sc.ch[off : off+int(sc.chLen[k])] {
					if chIdx[ch] < 0 {
						chIdx[ch] = int32(len(sp.chans))
						sp.chans = append(sp.chans, ch)
					}
					sp.ch = append(sp.ch, chIdx[ch])
				}
				off += int(sc.chLen[k])
				k++
				sp.chOff = append(sp.chOff, int32(len(sp.ch)))
			}
			sp.first = append(sp.first, int32(len(sp.chOff)-1))
		}
		out[si] = sourceCands{}
	}
	return sp, sp.findBFS(bfs)
}

// findBFS records which candidate of every pair is the BFS route.
func (sp *geneSpace) findBFS(bfs *Table) error {
	n := len(sp.first) - 1
	sp.bfsOf = make([]uint8, n)
	for i := 0; i < n; i++ {
		found := false
		for k := sp.first[i]; k < sp.first[i+1]; k++ {
			if bytes.Equal(sp.code(int(k)), bfs.code(i)) {
				sp.bfsOf[i] = uint8(k - sp.first[i])
				found = true
				break
			}
		}
		if !found {
			src, dst := bfs.Pair(i)
			g := bfs.Graph()
			return fmt.Errorf("internal error: the BFS route %s → %s is not among the minimal legal routes", g.NodeName(src), g.NodeName(dst))
		}
	}
	return nil
}

// candSearch enumerates the minimal legal routes from one source: a
// breadth-first search in RG restricted to the set records, for every
// vertex, its distance and its predecessors one step closer; every path
// back from an end vertex at the pair's minimal distance is a minimal
// legal route.
type candSearch struct {
	r      *Router
	ls     *localSet
	p      *bfsPlan
	bfs    *Table
	maxC   int
	dist   []int32 // per vertex (local node · S + state), −1 unseen
	lcIn   []int32 // per vertex: the local channel entering it
	head   []int32 // per vertex: first predecessor link, −1 none
	next   []int32 // per link
	from   []int32 // per link: predecessor vertex
	queue  []int32
	path   []int32
	encs   []routeEnc
	paths  int
	tmp    Table
	chbuf  []int32
	result *sourceCands
}

func newCandSearch(r *Router, ls *localSet, bfs *Table, maxC int) *candSearch {
	nv := ls.n * r.plan.S
	cs := &candSearch{r: r, ls: ls, p: r.plan, bfs: bfs, maxC: maxC,
		dist: make([]int32, nv), lcIn: make([]int32, nv), head: make([]int32, nv)}
	for i := range cs.dist {
		cs.dist[i], cs.head[i] = -1, -1
	}
	cs.tmp = Table{r: r, stride: bfs.stride, wide: bfs.wide}
	return cs
}

// source returns the candidates of every pair from active node si.
func (cs *candSearch) source(si int) sourceCands {
	res := sourceCands{count: make([]int32, cs.ls.m)}
	cs.result = &res
	cs.search(si)
	S := cs.p.S
	for dj := 0; dj < cs.ls.m && res.err == nil; dj++ {
		if dj == si {
			continue
		}
		best := int32(-1)
		for q := 0; q < S; q++ {
			if d := cs.dist[dj*S+q]; d >= 0 && cs.p.canEnd[q] && (best < 0 || d < best) {
				best = d
			}
		}
		if best < 0 {
			res.err = fmt.Errorf("internal error: no legal route from %s to %s in a table's set", cs.r.t.name(int(cs.ls.node[si])), cs.r.t.name(int(cs.ls.node[dj])))
			break
		}
		cs.pair(si, dj, best)
	}
	for _, v := range cs.queue {
		cs.dist[v], cs.head[v] = -1, -1
	}
	return res
}

// search runs the breadth-first search from si, keeping every
// predecessor one layer up.
func (cs *candSearch) search(si int) {
	p, ls := cs.p, cs.ls
	S := int32(p.S)
	cs.next, cs.from = cs.next[:0], cs.from[:0]
	v0 := int32(si)*S + int32(p.begin)
	cs.queue = append(cs.queue[:0], v0)
	cs.dist[v0], cs.lcIn[v0] = 0, -1
	for h := 0; h < len(cs.queue); h++ {
		u := cs.queue[h]
		li, q := u/S, u%S
		for k := p.tstart[q]; k < p.tstart[q+1]; k++ {
			d := int32(p.tdir[k])
			wl := ls.nb[li*int32(ls.nd)+d]
			if wl < 0 || (p.tcond[k] && ls.extra[cs.lcIn[u]]&(1<<d) == 0) {
				continue
			}
			w := wl*S + int32(p.tto[k])
			switch cs.dist[w] {
			case -1:
				cs.dist[w], cs.lcIn[w] = cs.dist[u]+1, li*int32(ls.nd)+d
				cs.queue = append(cs.queue, w)
			case cs.dist[u] + 1:
			default:
				continue
			}
			cs.next = append(cs.next, cs.head[w])
			cs.from = append(cs.from, u)
			cs.head[w] = int32(len(cs.from) - 1)
		}
	}
}

// pair enumerates the distinct minimal legal routes from si to dj (length
// L), at most maxC of them, the BFS route always among them.
func (cs *candSearch) pair(si, dj int, L int32) {
	S := cs.p.S
	cs.encs = cs.encs[:0]
	cs.paths = 0
	for q := 0; q < S; q++ {
		if v := int32(dj*S + q); cs.dist[v] == L && cs.p.canEnd[q] {
			cs.path = cs.path[:0]
			cs.walk(v)
		}
	}
	i := pairIndex(cs.ls.m, si, dj)
	bfsEnc := cs.decode(cs.bfs.code(i))
	if !slices.Contains(cs.encs, bfsEnc) {
		if len(cs.encs) == cs.maxC {
			cs.encs = cs.encs[:cs.maxC-1]
		}
		cs.encs = append(cs.encs, bfsEnc) // findBFS reports it if it is not minimal
	}
	res := cs.result
	res.count[dj] = int32(len(cs.encs))
	for k := range cs.encs {
		e := cs.encs[k]
		cs.tmp.codes = make([]byte, cs.tmp.stride)
		if err := cs.tmp.store(0, &e); err != nil {
			res.err = err
			return
		}
		res.codes = append(res.codes, cs.tmp.codes...)
		cs.chbuf = cs.tmp.channelsFrom(int(cs.ls.node[si]), cs.chbuf[:0])
		res.chLen = append(res.chLen, int32(len(cs.chbuf)))
		res.ch = append(res.ch, cs.chbuf...)
	}
}

// pathBudget bounds the RG paths walked per candidate kept (several RG
// paths can spell the same route).
const pathBudget = 16

// walk follows the predecessors of vertex v back to the source and
// records each complete path's route.
func (cs *candSearch) walk(v int32) {
	if len(cs.encs) >= cs.maxC || cs.paths >= pathBudget*cs.maxC {
		return
	}
	if cs.head[v] < 0 { // the begin vertex
		cs.paths++
		e := cs.encodePath()
		if !slices.Contains(cs.encs, e) {
			cs.encs = append(cs.encs, e)
		}
		return
	}
	cs.path = append(cs.path, v)
	for l := cs.head[v]; l >= 0; l = cs.next[l] {
		cs.walk(cs.from[l])
	}
	cs.path = cs.path[:len(cs.path)-1]
}

// encodePath returns the canonical route code of the current path (its
// vertices after the begin vertex, last first).
func (cs *candSearch) encodePath() routeEnc {
	p := cs.p
	var e routeEnc
	for _, v := range cs.path {
		q := int(v) % p.S
		d := p.in[q]
		switch p.skind[q] {
		case sFS:
			e.fs = int(d) + 1
		case sLS:
			e.ls = int(d) + 1
		default:
			e.cnt[p.rank[d]]++
		}
	}
	e.canonical(cs.r.a)
	return e
}

// decode turns a table route code back into its route encoding.
func (cs *candSearch) decode(c []byte) routeEnc {
	e := routeEnc{fs: int(c[0]), ls: int(c[1])}
	for k := 0; k < cs.r.t.nd; k++ {
		e.cnt[k] = cs.bfs.count(c, k)
	}
	return e
}

// channelsFrom appends the channels of the route stored at index 0 of a
// one-route scratch table, walked from node src.
func (tb *Table) channelsFrom(src int, buf []int32) []int32 {
	t := tb.r.t
	v := src
	var dirs [64]Dir
	for _, d := range tb.AppendDirs(0, dirs[:0]) {
		buf = append(buf, t.chAt(v, d))
		v = int(t.nbAt(v, d))
	}
	return buf
}

// ---- the evolution ----

// gaKey is the fitness of an individual, smaller is better: a deadlock
// (angara only), then π_max (the balance factor), then the number of
// channels at π_max and the sum of squared loads as tie-breaks.
type gaKey struct {
	dead  bool
	pimax int32
	atMax int32
	sq    int64
}

func (a gaKey) cmp(b gaKey) int {
	switch {
	case a.dead != b.dead:
		if a.dead {
			return 1
		}
		return -1
	case a.pimax != b.pimax:
		return int(a.pimax - b.pimax)
	case a.atMax != b.atMax:
		return int(a.atMax - b.atMax)
	case a.sq < b.sq:
		return -1
	case a.sq > b.sq:
		return 1
	}
	return 0
}

// individual is a table: the candidate chosen for every gene (free pair).
type individual struct {
	g   []uint8
	key gaKey
}

// geneticState is one run: the genes and what every evaluation needs.
type geneticState struct {
	r   *Router
	bfs *Table
	sp  *geneSpace
	o   GeneticOptions
	run tableRun // the context, workers and progress of the run
	// genes: pairs with more than one candidate, in table order
	genes      int
	genePair   []int32
	geneFirst  []int32 // first candidate of the gene
	geneN      []uint8
	srcGene    []int32 // source index → its first gene (m+1 entries)
	candidates int
	base       []int32 // per channel index: load of the fixed pairs
	// users of channel c: candidates (gene, choice) whose route uses it
	userOff  []int32
	userGene []int32
	userK    []uint8
	bound    int32
	// deadlock check (angara, when the BFS table is deadlock-free)
	checkDead bool
	fixedDeps [][2]int32
	chDir     []Dir
}

// gaWorker is the scratch space of one goroutine.
type gaWorker struct {
	loads []int32
	_     [64]byte // per worker: keeps what workers write off each other's cache lines
}

func newGeneticState(r *Router, bfs *Table, sp *geneSpace, o GeneticOptions, run tableRun) *geneticState {
	ga := &geneticState{r: r, bfs: bfs, sp: sp, o: o, run: run}
	m := len(bfs.Active)
	nch := len(sp.chans)
	ga.base = make([]int32, nch)
	ga.chDir = make([]Dir, nch)
	for i, c := range sp.chans {
		ga.chDir[i] = r.t.chDir[c]
	}
	ga.checkDead = r.rule.Kind == Angara && bfs.DeadlockFree
	ga.srcGene = make([]int32, m+1)
	for i := 0; i < bfs.NumRoutes(); i++ {
		if i%max(m-1, 1) == 0 {
			ga.srcGene[i/(m-1)] = int32(ga.genes)
		}
		lo, hi := sp.first[i], sp.first[i+1]
		if hi-lo == 1 {
			chs := sp.channels(int(lo))
			for _, c := range chs {
				ga.base[c]++
			}
			if ga.checkDead {
				for k := 0; k+1 < len(chs); k++ {
					ga.fixedDeps = append(ga.fixedDeps, [2]int32{chs[k], chs[k+1]})
				}
			}
			continue
		}
		ga.genePair = append(ga.genePair, int32(i))
		ga.geneFirst = append(ga.geneFirst, lo)
		ga.geneN = append(ga.geneN, uint8(hi-lo))
		ga.candidates += int(hi - lo)
		ga.genes++
	}
	ga.srcGene[m] = int32(ga.genes)
	ga.indexUsers(nch)
	if bfs.Channels > 0 {
		ga.bound = int32((bfs.SumLength + bfs.Channels - 1) / bfs.Channels)
	}
	return ga
}

// indexUsers lists, per channel, the gene candidates that use it.
func (ga *geneticState) indexUsers(nch int) {
	sp := ga.sp
	ga.userOff = make([]int32, nch+1)
	for x := 0; x < ga.genes; x++ {
		for k := 0; k < int(ga.geneN[x]); k++ {
			for _, c := range sp.channels(int(ga.geneFirst[x]) + k) {
				ga.userOff[c+1]++
			}
		}
	}
	for c := 0; c < nch; c++ {
		ga.userOff[c+1] += ga.userOff[c]
	}
	fill := slices.Clone(ga.userOff[:nch])
	ga.userGene = make([]int32, ga.userOff[nch])
	ga.userK = make([]uint8, ga.userOff[nch])
	for x := 0; x < ga.genes; x++ {
		for k := 0; k < int(ga.geneN[x]); k++ {
			for _, c := range sp.channels(int(ga.geneFirst[x]) + k) {
				ga.userGene[fill[c]], ga.userK[fill[c]] = int32(x), uint8(k)
				fill[c]++
			}
		}
	}
}

func (ga *geneticState) cand(x int, k uint8) []int32 {
	return ga.sp.channels(int(ga.geneFirst[x]) + int(k))
}

// loadsOf computes the channel loads of individual g.
func (ga *geneticState) loadsOf(loads []int32, g []uint8) {
	copy(loads, ga.base)
	for x, k := range g {
		for _, c := range ga.cand(x, k) {
			loads[c]++
		}
	}
}

// keyOf is the fitness of individual g with loads.
func (ga *geneticState) keyOf(loads []int32, g []uint8) gaKey {
	var key gaKey
	for _, l := range loads {
		switch {
		case l > key.pimax:
			key.pimax, key.atMax = l, 1
		case l == key.pimax:
			key.atMax++
		}
		key.sq += int64(l) * int64(l)
	}
	if ga.checkDead {
		key.dead = ga.deadlocks(g)
	}
	return key
}

// deadlocks reports whether the channel dependencies of g close a cycle
// with a turn.
func (ga *geneticState) deadlocks(g []uint8) bool {
	cg := cdg.New(len(ga.sp.chans))
	add := func(a, b int32) {
		tag := cdg.Turn
		if ga.chDir[a] == ga.chDir[b] {
			tag = cdg.Straight
		}
		cg.Add(a, b, tag)
	}
	for _, d := range ga.fixedDeps {
		add(d[0], d[1])
	}
	for x, k := range g {
		chs := ga.cand(x, k)
		for i := 0; i+1 < len(chs); i++ {
			add(chs[i], chs[i+1])
		}
	}
	return cg.Deadlock(true) != nil
}

// setGene gives gene x candidate k, updating the loads.
func (ga *geneticState) setGene(loads []int32, g []uint8, x int, k uint8) {
	for _, c := range ga.cand(x, g[x]) {
		loads[c]--
	}
	g[x] = k
	for _, c := range ga.cand(x, k) {
		loads[c]++
	}
}

// busiest returns a channel of largest load, chosen at random among
// those.
func busiest(loads []int32, rng *rand.Rand) int {
	best, ties := -1, 0
	for c, l := range loads {
		switch {
		case best < 0 || l > loads[best]:
			best, ties = c, 1
		case l == loads[best]:
			ties++
			if rng.IntN(ties) == 0 {
				best = c
			}
		}
	}
	return best
}

// userOf returns a gene whose chosen route uses channel c, at random, or
// −1 when only fixed routes use it.
func (ga *geneticState) userOf(rng *rand.Rand, g []uint8, c int) int {
	x, n := -1, 0
	for u := ga.userOff[c]; u < ga.userOff[c+1]; u++ {
		if g[ga.userGene[u]] == ga.userK[u] {
			n++
			if rng.IntN(n) == 0 {
				x = int(ga.userGene[u])
			}
		}
	}
	return x
}

// repair moves gene x to the candidate whose most loaded channel is
// least loaded (then the least total load; ties at random).
func (ga *geneticState) repair(loads []int32, rng *rand.Rand, g []uint8, x int) {
	for _, c := range ga.cand(x, g[x]) {
		loads[c]--
	}
	best, bestMax, bestSum, ties := uint8(0), int32(-1), int32(0), 0
	for k := uint8(0); k < ga.geneN[x]; k++ {
		var mx, sum int32
		for _, c := range ga.cand(x, k) {
			mx = max(mx, loads[c])
			sum += loads[c]
		}
		switch {
		case bestMax < 0 || mx < bestMax || (mx == bestMax && sum < bestSum):
			best, bestMax, bestSum, ties = k, mx, sum, 1
		case mx == bestMax && sum == bestSum:
			ties++
			if rng.IntN(ties) == 0 {
				best = k
			}
		}
	}
	g[x] = best
	for _, c := range ga.cand(x, best) {
		loads[c]++
	}
}

// mutate re-picks up to two genes at random, then repairs up to
// geneticRepairSteps routes through a busiest channel.
func (ga *geneticState) mutate(loads []int32, rng *rand.Rand, g []uint8) {
	for n := rng.IntN(3); n > 0; n-- {
		x := rng.IntN(ga.genes)
		ga.setGene(loads, g, x, uint8(rng.IntN(int(ga.geneN[x]))))
	}
	for n := 1 + rng.IntN(geneticRepairSteps); n > 0; n-- {
		x := ga.userOf(rng, g, busiest(loads, rng))
		if x < 0 {
			break
		}
		ga.repair(loads, rng, g, x)
	}
}

// child makes one child: two parents by binary tournament (the
// population is sorted, best first), crossed per source, then mutated.
func (ga *geneticState) child(w *gaWorker, rng *rand.Rand, pop []individual, out *individual) {
	k := len(pop)
	a := &pop[min(rng.IntN(k), rng.IntN(k))]
	b := &pop[min(rng.IntN(k), rng.IntN(k))]
	for s := 0; s+1 < len(ga.srcGene); s++ {
		lo, hi := ga.srcGene[s], ga.srcGene[s+1]
		from := a
		if rng.IntN(2) == 1 {
			from = b
		}
		copy(out.g[lo:hi], from.g[lo:hi])
	}
	ga.loadsOf(w.loads, out.g)
	ga.mutate(w.loads, rng, out.g)
	out.key = ga.keyOf(w.loads, out.g)
}

// rngFor is the generator of individual i of generation gen (0: the
// initial population): a function of the seed and the indices only, so
// the run does not depend on the number of workers.
func (ga *geneticState) rngFor(gen, i int) *rand.Rand {
	return rand.New(rand.NewPCG(ga.o.Seed, uint64(gen)<<32|uint64(i)))
}

func (ga *geneticState) newPopulation() []individual {
	pop := make([]individual, ga.o.Population)
	for i := range pop {
		pop[i].g = make([]uint8, ga.genes)
	}
	return pop
}

func sortPopulation(pop []individual) {
	slices.SortStableFunc(pop, func(a, b individual) int { return a.key.cmp(b.key) })
}

// initial is the first population: the BFS table, then variants of it in
// which individual i re-picks each gene at random with probability
// i/(k−1) (the last one is entirely random).
func (ga *geneticState) initial(ws []gaWorker) []individual {
	pop := ga.newPopulation()
	for x := range pop[0].g {
		pop[0].g[x] = ga.sp.bfsOf[ga.genePair[x]]
	}
	k := len(pop)
	par.For(k, len(ws), func(wi, i int) {
		g := pop[i].g
		if i > 0 {
			copy(g, pop[0].g) // (individual 0 is the BFS table; others read it)
		}
		rng := ga.rngFor(0, i)
		p := float64(i) / float64(k-1)
		for x := range g {
			if i > 0 && rng.Float64() < p {
				g[x] = uint8(rng.IntN(int(ga.geneN[x])))
			}
		}
		ga.loadsOf(ws[wi].loads, g)
		pop[i].key = ga.keyOf(ws[wi].loads, g)
	})
	sortPopulation(pop)
	return pop
}

// stopReason says why the run stops before generation gen, or "".
func (ga *geneticState) stopReason(gen int, start time.Time, best gaKey) string {
	o := ga.o
	switch {
	case ga.genes == 0:
		return StopNoAlternates
	case !best.dead && best.pimax <= ga.bound:
		return StopOptimal
	case gen >= o.Generations && (o.Generations > 0 || !o.NoGenerationLimit):
		return StopGenerations
	case ga.cancelled():
		return StopCancelled
	case o.TimeLimit > 0 && time.Since(start) >= o.TimeLimit:
		return StopTimeLimit
	}
	return ""
}

// cancelled reports whether the run's context has ended.
func (ga *geneticState) cancelled() bool {
	return ga.run.ctx != nil && ga.run.ctx.Err() != nil
}

// evolve runs the generations and returns the best individual.
func (ga *geneticState) evolve(start time.Time, run *GeneticRun) individual {
	o := ga.o
	ws := make([]gaWorker, min(par.Workers(ga.run.workers), o.Population))
	for i := range ws {
		ws[i].loads = make([]int32, len(ga.sp.chans))
	}
	pop := ga.initial(ws)
	next := ga.newPopulation()
	for gen := 0; ; gen++ {
		if run.Stop = ga.stopReason(gen, start, pop[0].key); run.Stop != "" {
			break
		}
		for i := 0; i < o.Elite; i++ {
			copy(next[i].g, pop[i].g)
			next[i].key = pop[i].key
		}
		par.For(o.Population-o.Elite, len(ws), func(wi, j int) {
			if !ga.cancelled() {
				ga.child(&ws[wi], ga.rngFor(gen+1, j), pop, &next[o.Elite+j])
			}
		})
		if ga.cancelled() {
			run.Stop = StopCancelled // the unfinished generation is dropped
			break
		}
		pop, next = next, pop
		sortPopulation(pop)
		run.Generations = gen + 1
		if ga.run.progress != nil {
			ga.run.progress(gen+1, o.Generations)
		}
	}
	return pop[0]
}

// stats are the figures of a table with the given π_max.
func (ga *geneticState) stats(pimax int32) Figures {
	st := Figures{Diameter: ga.bfs.Figures.Diameter, PiMax: int(pimax)}
	st.PiPerfect, st.BalanceFactor = piFigures(ga.bfs.SumLength, ga.bfs.Channels, int(pimax))
	return st
}

// table turns an individual into a table (verified by the caller).
func (ga *geneticState) table(best individual) (*Table, error) {
	tb := *ga.bfs
	tb.Algo = Genetic
	tb.Cycle = nil
	tb.codes = slices.Clone(ga.bfs.codes)
	for x, k := range best.g {
		copy(tb.code(int(ga.genePair[x])), ga.sp.code(int(ga.geneFirst[x])+int(k)))
	}
	loads := make([]int32, len(ga.sp.chans))
	ga.loadsOf(loads, best.g)
	tb.loads = make([]int32, len(ga.r.up))
	pimax := int32(0)
	for i, c := range ga.sp.chans {
		tb.loads[c] = loads[i]
		pimax = max(pimax, loads[i])
	}
	if pimax != best.key.pimax {
		return nil, fmt.Errorf("internal error: the best genetic table has π_max %d, its fitness says %d", pimax, best.key.pimax)
	}
	tb.Figures = ga.stats(pimax)
	return &tb, nil
}
