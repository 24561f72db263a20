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

// patternFunc builds a traffic pattern over a network's terminals
// (trafficPattern.pattern); subset says the terminals are only some of
// the nodes (a routing table's active ones), which the permutations of
// node addresses and coordinates cannot use.
type patternFunc func(cfg *Config, terms []int32, g *topology.Graph, subset bool) (*pattern, error)

// permFunc returns the destination function of a permutation pattern.
type permFunc func(cfg *Config, terms []int32, g *topology.Graph, subset bool) (func(s int) int, error)

// buildPattern resolves the traffic pattern tr (nil: the configuration
// names none that is registered) over the terminals of a network.
func buildPattern(tr *trafficPattern, cfg *Config, terms []int32, g *topology.Graph, subset bool) (*pattern, error) {
	if len(terms) == 0 {
		return nil, fmt.Errorf("the network has no terminals")
	}
	if tr == nil {
		return nil, unknownTraffic(cfg.Traffic)
	}
	return tr.pattern(cfg, terms, g, subset)
}

// uniformPattern sends every packet to a uniformly random other terminal.
func uniformPattern(_ *Config, terms []int32, _ *topology.Graph, _ bool) (*pattern, error) {
	return &pattern{n: len(terms)}, nil
}

// hotspotPattern sends cfg.HotspotFrac of the packets to the hotspot
// terminals, the rest uniformly.
func hotspotPattern(cfg *Config, terms []int32, g *topology.Graph, _ bool) (*pattern, error) {
	p := &pattern{n: len(terms)}
	if err := p.setHotspots(cfg, terms, g); err != nil {
		return nil, err
	}
	return p, nil
}

// tracePattern is the pattern of replayed traces: no synthetic
// destinations, but a trace to replay.
func tracePattern(cfg *Config, terms []int32, _ *topology.Graph, _ bool) (*pattern, error) {
	if cfg.Trace == nil {
		return nil, fmt.Errorf("traffic trace needs a trace file (--trace)")
	}
	return &pattern{n: len(terms)}, nil
}

// permutation makes the pattern of a permutation: every source sends to
// the one destination f gives it.
func permutation(f permFunc) patternFunc {
	return func(cfg *Config, terms []int32, g *topology.Graph, subset bool) (*pattern, error) {
		d, err := f(cfg, terms, g, subset)
		if err != nil {
			return nil, err
		}
		p := &pattern{n: len(terms), perm: make([]int32, len(terms))}
		for s := range p.perm {
			p.perm[s] = int32(d(s))
		}
		return p, nil
	}
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

// bitPermutation is the permutation of a terminal's b-bit address that
// perm returns for n = 2^b terminals.
func bitPermutation(perm func(b, n int) (func(s int) int, error)) permFunc {
	return func(cfg *Config, terms []int32, _ *topology.Graph, subset bool) (func(s int) int, error) {
		b, err := addressBits(cfg.Traffic, len(terms), subset)
		if err != nil {
			return nil, err
		}
		return perm(b, len(terms))
	}
}

// transposeBits swaps the halves of a b-bit address (b even).
func transposeBits(b, n int) (func(s int) int, error) {
	if b%2 != 0 {
		return nil, fmt.Errorf("traffic transpose needs an even number of address bits (4, 16, 64, … terminals), the network has %d terminals", n)
	}
	h := b / 2
	lo := 1<<h - 1
	return func(s int) int { return (s>>h)&lo | (s&lo)<<h }, nil
}

// complementBits complements a b-bit address.
func complementBits(_, n int) (func(s int) int, error) {
	return func(s int) int { return ^s & (n - 1) }, nil
}

// reverseBits reverses a b-bit address.
func reverseBits(b, _ int) (func(s int) int, error) {
	return func(s int) int { return int(bits.Reverse(uint(s)) >> (bits.UintSize - b)) }, nil
}

// shuffleBits rotates a b-bit address left by one.
func shuffleBits(b, n int) (func(s int) int, error) {
	return func(s int) int {
		if b == 0 {
			return s
		}
		return (s<<1 | s>>(b-1)) & (n - 1)
	}, nil
}

// tornadoShift is tornado's shift along a dimension of size k: ⌈k/2⌉-1.
func tornadoShift(k int) int { return (k+1)/2 - 1 }

// neighborShift is neighbor's shift along any dimension: 1.
func neighborShift(int) int { return 1 }

// shiftPermutation sends every terminal shift(k) steps along every
// dimension of size k, or along the terminal index when the network has
// no coordinates; it needs every node to be a terminal.
func shiftPermutation(shift func(k int) int) permFunc {
	return func(cfg *Config, terms []int32, g *topology.Graph, subset bool) (func(s int) int, error) {
		if subset {
			return nil, fmt.Errorf("traffic %s needs every node to be a terminal; the routing table makes only %d nodes active", cfg.Traffic, len(terms))
		}
		return shiftAlong(shift, terms, g), nil
	}
}

// shiftAlong is the destination function of shiftPermutation.
func shiftAlong(shift func(k int) int, terms []int32, g *topology.Graph) func(s int) int {
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

// randomPermutation is randperm's destination function: one random cycle
// through all terminals, seeded by the configuration.
func randomPermutation(cfg *Config, terms []int32, _ *topology.Graph, _ bool) (func(s int) int, error) {
	return randomCycle(cfg.Seed, len(terms)), nil
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
