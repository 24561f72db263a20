package sim

import (
	"bufio"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/icn-hpc/icn/topology"
)

// TrafficPatterns lists the synthetic patterns (plus "trace").
var TrafficPatterns = []string{"uniform", "transpose", "bitcomp", "bitrev", "shuffle", "tornado", "neighbor", "hotspot", "randperm", "trace"}

// pattern chooses destinations (terminal indices).
type pattern struct {
	kind    int
	perm    []int32 // fixed destination per source (permutations)
	hot     []int32 // hotspot terminals
	hotFrac float64
	n       int
}

const (
	patUniform = iota
	patPerm
	patHotspot
	patTrace
)

// dest draws the destination of a packet from source s.
func (p *pattern) dest(s int, rng *rand.Rand) int {
	switch p.kind {
	case patPerm:
		return int(p.perm[s])
	case patHotspot:
		if rng.Float64() < p.hotFrac {
			return int(p.hot[rng.IntN(len(p.hot))])
		}
	}
	if p.n == 1 {
		return s
	}
	d := rng.IntN(p.n - 1)
	if d >= s {
		d++
	}
	return d
}

// buildPattern prepares a traffic pattern over the terminals of a network.
// coords gives a terminal's coordinates (nil if the network has none);
// full says whether the terminals are all nodes of a coordinate network in
// id order, which the bit permutations require.
func buildPattern(cfg *Config, terms []int32, g *topology.Graph, subset bool) (*pattern, error) {
	n := len(terms)
	p := &pattern{n: n}
	if n == 0 {
		return nil, fmt.Errorf("the network has no terminals")
	}
	switch cfg.Traffic {
	case "uniform":
		p.kind = patUniform
	case "hotspot":
		if err := p.setHotspots(cfg, terms, g); err != nil {
			return nil, err
		}
	case "trace":
		if cfg.Trace == nil {
			return nil, fmt.Errorf("traffic trace needs a trace file (--trace)")
		}
		p.kind = patTrace
	default:
		f, err := permutationOf(cfg, terms, g, subset)
		if err != nil {
			return nil, err
		}
		p.kind = patPerm
		p.perm = make([]int32, n)
		for s := range p.perm {
			p.perm[s] = int32(f(s))
		}
	}
	return p, nil
}

// permutationOf returns the destination function of a permutation pattern:
// a bit permutation of the terminal index, a shift along every dimension
// (tornado, neighbor) or a random single cycle (randperm).
func permutationOf(cfg *Config, terms []int32, g *topology.Graph, subset bool) (func(s int) int, error) {
	n := len(terms)
	switch cfg.Traffic {
	case "transpose", "bitcomp", "bitrev", "shuffle":
		return bitPermutation(cfg.Traffic, n, subset)
	case "tornado", "neighbor":
		if subset {
			return nil, fmt.Errorf("traffic %s needs every node to be a terminal; the routing table makes only %d nodes active", cfg.Traffic, n)
		}
		return shiftPermutation(cfg.Traffic, terms, g), nil
	case "randperm":
		return randomCycle(cfg.Seed, n), nil
	}
	return nil, fmt.Errorf("unknown traffic %q (want %s)", cfg.Traffic, strings.Join(TrafficPatterns, ", "))
}

// addressBits is log2 of the terminal count n for the bit-permutation
// patterns, which need every node to be a terminal and n a power of two.
func addressBits(name string, n int, subset bool) (int, error) {
	if subset {
		return 0, fmt.Errorf("traffic %s needs every node to be a terminal; the routing table makes only %d nodes active", name, n)
	}
	if n&(n-1) != 0 {
		return 0, fmt.Errorf("traffic %s needs a power-of-two number of terminals, the network has %d", name, n)
	}
	return bits.TrailingZeros(uint(n)), nil
}

// bitPermutation maps a terminal's b-bit address: transpose swaps its
// halves, bitcomp complements it, bitrev reverses it, shuffle rotates it
// left by one.
func bitPermutation(name string, n int, subset bool) (func(s int) int, error) {
	b, err := addressBits(name, n, subset)
	if err != nil {
		return nil, err
	}
	switch name {
	case "transpose":
		if b%2 != 0 {
			return nil, fmt.Errorf("traffic transpose needs an even number of address bits (4, 16, 64, … terminals), the network has %d terminals", n)
		}
		h := b / 2
		lo := 1<<h - 1
		return func(s int) int { return (s>>h)&lo | (s&lo)<<h }, nil
	case "bitcomp":
		return func(s int) int { return ^s & (n - 1) }, nil
	case "bitrev":
		return func(s int) int { return int(bits.Reverse(uint(s)) >> (bits.UintSize - b)) }, nil
	}
	return func(s int) int { // shuffle
		if b == 0 {
			return s
		}
		return (s<<1 | s>>(b-1)) & (n - 1)
	}, nil
}

// shiftPermutation sends every terminal ⌈k/2⌉-1 steps (tornado) or one step
// (neighbor) along every dimension of size k, or along the terminal index
// when the network has no coordinates.
func shiftPermutation(name string, terms []int32, g *topology.Graph) func(s int) int {
	shift := func(k int) int { // tornado: ⌈k/2⌉-1 hops; neighbor: 1
		if name == "neighbor" {
			return 1
		}
		return (k+1)/2 - 1
	}
	n := len(terms)
	if !g.HasCoords() {
		return func(s int) int { return (s + shift(n)) % n }
	}
	dims := g.Dims()
	// Terminals sharing coordinates (end nodes of one switch) are
	// matched by their rank under the switch.
	byKey := map[string][]int{}
	for t, v := range terms {
		k := topology.CoordString(g.Coord(int(v)))
		byKey[k] = append(byKey[k], t)
	}
	c := make([]int, len(dims))
	return func(s int) int {
		v := int(terms[s])
		k := topology.CoordString(g.Coord(v))
		rank := 0
		for i, t := range byKey[k] {
			if t == s {
				rank = i
			}
		}
		for i, d := range dims {
			c[i] = (g.CoordAt(v, i) + shift(d)) % d
		}
		peers := byKey[topology.CoordString(c)]
		if rank < len(peers) {
			return peers[rank]
		}
		return s
	}
}

// randomCycle is Sattolo's algorithm: one cycle through all n terminals,
// so nobody sends to itself.
func randomCycle(seed uint64, n int) func(s int) int {
	rng := rand.New(rand.NewPCG(seed, 0x7065726d))
	a := make([]int, n)
	for i := range a {
		a[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := rng.IntN(i)
		a[i], a[j] = a[j], a[i]
	}
	return func(s int) int { return a[s] }
}

// setHotspots makes p the hotspot pattern: cfg.HotspotFrac of the packets
// go to the hotspot terminals.
func (p *pattern) setHotspots(cfg *Config, terms []int32, g *topology.Graph) error {
	p.kind = patHotspot
	p.hotFrac = cfg.HotspotFrac
	if len(cfg.Hotspots) == 0 {
		return fmt.Errorf("traffic hotspot needs hotspot nodes (--hotspot)")
	}
	idx := map[int32]int{}
	for t, v := range terms {
		idx[v] = t
	}
	for _, v := range cfg.Hotspots {
		t, ok := idx[int32(v)]
		if !ok {
			return fmt.Errorf("hotspot %s is not a terminal of the network", g.NodeName(v))
		}
		p.hot = append(p.hot, int32(t))
	}
	return nil
}

// TraceRecord is one message of a trace: at Cycle, Src sends Size flits to
// Dst. Src and Dst are node names (or node ids) resolved against the
// network when the simulation is built.
type TraceRecord struct {
	Cycle    int64
	Src, Dst string
	Size     int
}

// Trace is a list of messages.
type Trace struct {
	Records []TraceRecord
}

// Limits of trace files.
const (
	maxTraceRecords = 1 << 24
	maxTraceCycle   = 1 << 29
)

// ParseTrace reads a trace: one message per line, "cycle src dst size"
// separated by spaces, tabs or commas; '#' starts a comment; blank lines
// are skipped. src and dst are node names (e.g. 1.2 or h7) or node ids.
func ParseTrace(r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	t := &Trace{}
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		f := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' || r == '\r' })
		if len(f) == 0 {
			continue
		}
		if len(f) != 4 {
			return nil, fmt.Errorf("trace line %d: want 4 fields (cycle src dst size), got %d", line, len(f))
		}
		cyc, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || cyc < 0 || cyc > maxTraceCycle {
			return nil, fmt.Errorf("trace line %d: cycle %q is not a whole number in 0..%d", line, f[0], int64(maxTraceCycle))
		}
		size, err := strconv.Atoi(f[3])
		if err != nil || size < 1 || size > MaxPacketFlits {
			return nil, fmt.Errorf("trace line %d: size %q is not a whole number of flits in 1..%d", line, f[3], MaxPacketFlits)
		}
		if len(t.Records) >= maxTraceRecords {
			return nil, fmt.Errorf("trace has more than %d messages", maxTraceRecords)
		}
		t.Records = append(t.Records, TraceRecord{Cycle: cyc, Src: f[1], Dst: f[2], Size: size})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace line %d: %v", line+1, err)
	}
	if len(t.Records) == 0 {
		return nil, fmt.Errorf("trace has no messages")
	}
	return t, nil
}

// traceMsg is a resolved trace message (terminal indices).
type traceMsg struct {
	cycle    int64
	src, dst int32
	size     int32
}

// bind resolves the trace against the terminals of a network and sorts it
// by cycle (stable, so equal cycles keep file order).
func (t *Trace) bind(g *topology.Graph, termOf []int32) ([]traceMsg, error) {
	resolve := func(s string) (int32, error) {
		v := g.NodeByName(s)
		if v < 0 {
			id, err := strconv.Atoi(s)
			if err != nil || id < 0 || id >= g.NumNodes() {
				return 0, fmt.Errorf("unknown node %q", s)
			}
			v = id
		}
		if termOf[v] < 0 {
			return 0, fmt.Errorf("node %s is not a terminal (it cannot send or receive)", g.NodeName(v))
		}
		return termOf[v], nil
	}
	out := make([]traceMsg, len(t.Records))
	for i, r := range t.Records {
		s, err := resolve(r.Src)
		if err != nil {
			return nil, fmt.Errorf("trace message %d: source: %v", i+1, err)
		}
		d, err := resolve(r.Dst)
		if err != nil {
			return nil, fmt.Errorf("trace message %d: destination: %v", i+1, err)
		}
		out[i] = traceMsg{cycle: r.Cycle, src: s, dst: d, size: int32(r.Size)}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].cycle < out[j].cycle })
	return out, nil
}
