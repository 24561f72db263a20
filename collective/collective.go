package collective

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Kind is a topology family of the cost models.
type Kind int

const (
	Ring      Kind = iota // p processors on a ring
	Torus                 // √p × √p two-dimensional torus
	Hypercube             // p = 2^d processors
)

func (k Kind) String() string { return [...]string{"ring", "torus", "hypercube"}[k] }

// Topo is a network the models apply to. Processors are numbered like the
// nodes of the topology spec: around the ring; x + q·y on the q×q torus
// (rows are fixed y); by address bits on the hypercube.
type Topo struct {
	Kind Kind
	P    int // processors
	Q    int // torus side √p
	D    int // hypercube dimension log p
	Spec string
}

// MaxProcessors bounds the models (and their message plans).
const MaxProcessors = 1 << 16

// ParseModelTopo parses the network of the cost models, a Topo: ring:P,
// torus:QxQ or hypercube:D. It accepts only these families, without
// options (topology.Parse builds the graphs of any network).
func ParseModelTopo(spec string) (Topo, error) {
	fam, arg, ok := strings.Cut(spec, ":")
	if !ok {
		return Topo{}, fmt.Errorf("topology %q: want ring:P, torus:QxQ or hypercube:D", spec)
	}
	if _, opts, ok := strings.Cut(arg, ":"); ok {
		return Topo{}, fmt.Errorf("topology %q: the models take no options (%q): ring:P, torus:QxQ (every dimension a ring) or hypercube:D", spec, opts)
	}
	t := Topo{Spec: spec}
	num := func(s, what string, lo int) (int, error) {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < lo || v > MaxProcessors {
			return 0, fmt.Errorf("topology %q: %s %q must be a whole number in %d..%d", spec, what, s, lo, MaxProcessors)
		}
		return v, nil
	}
	var err error
	switch fam {
	case "ring":
		t.Kind = Ring
		if t.P, err = num(arg, "size", 2); err != nil {
			return t, err
		}
	case "torus":
		t.Kind = Torus
		parts := strings.Split(arg, "x")
		if len(parts) != 2 {
			return t, fmt.Errorf("topology %q: the models cover square 2D tori QxQ", spec)
		}
		a, err := num(parts[0], "side", 2)
		if err != nil {
			return t, err
		}
		b, err := num(parts[1], "side", 2)
		if err != nil {
			return t, err
		}
		if a != b {
			return t, fmt.Errorf("topology %q: the models cover square tori (√p × √p), got %dx%d", spec, a, b)
		}
		if a*a > MaxProcessors {
			return t, fmt.Errorf("topology %q: more than %d processors", spec, MaxProcessors)
		}
		t.Q, t.P = a, a*a
	case "hypercube":
		t.Kind = Hypercube
		d, err := strconv.Atoi(strings.TrimSpace(arg))
		if err != nil || d < 1 || d > 16 {
			return t, fmt.Errorf("topology %q: dimension %q must be a whole number in 1..16", spec, arg)
		}
		t.D, t.P = d, 1<<d
	default:
		return t, fmt.Errorf("topology %q: the cost models cover ring:P, torus:QxQ and hypercube:D", spec)
	}
	return t, nil
}

// Mode is the switching the model assumes.
type Mode string

const (
	SF Mode = "sf" // store-and-forward: t = ts + (m·tw + th)·l
	CT Mode = "ct" // cut-through: t = ts + m·tw + th·l
)

// ParseMode accepts sf, ct, store-and-forward, cut-through.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(s) {
	case "sf", "saf", "store-and-forward":
		return SF, nil
	case "ct", "cut-through", "vct", "wormhole":
		return CT, nil
	}
	return "", fmt.Errorf("unknown mode %q (want sf or ct)", s)
}

// Ops lists the collective operations.
var Ops = []string{"bcast", "allgather", "reduce", "scan", "scatter", "gather", "alltoall", "shift"}

// Params are the model parameters: start-up ts, per-hop header time th,
// per-word time tw, message length M words, shift distance Shift.
type Params struct {
	Ts, Tw, Th float64
	M          int
	Shift      int
}

// Check validates the parameters.
func (p Params) Check() error {
	for _, x := range []struct {
		n string
		v float64
	}{{"ts", p.Ts}, {"tw", p.Tw}, {"th", p.Th}} {
		if math.IsNaN(x.v) || math.IsInf(x.v, 0) || x.v < 0 {
			return fmt.Errorf("--%s %g: want a finite time ≥ 0", x.n, x.v)
		}
	}
	if p.M < 1 || p.M > 1<<30 {
		return fmt.Errorf("--m %d: want a message of 1..%d words", p.M, 1<<30)
	}
	return nil
}

// PointToPoint is the time of one message over l hops (seed §3.2).
func PointToPoint(mode Mode, p Params, l int) float64 {
	m := float64(p.M)
	if mode == SF {
		return p.Ts + (m*p.Tw+p.Th)*float64(l)
	}
	return p.Ts + m*p.Tw + p.Th*float64(l)
}

// Result is the modelled time of one operation.
type Result struct {
	Op      string  `json:"op"`
	Topo    string  `json:"topo"`
	Mode    Mode    `json:"mode"`
	P       int     `json:"p"`
	Time    float64 `json:"time"`
	Formula string  `json:"formula"`
	Steps   int     `json:"steps"` // communication steps of the algorithm
}

func log2(p int) int { return bits.Len(uint(p)) - 1 }

func pow2(p int) bool { return p > 0 && p&(p-1) == 0 }

// Cost models operation op on t under mode with parameters p. The formulas
// are those of seed 002 §3.3 (Grama, Gupta, Karypis, Kumar) with the
// per-hop header term th kept everywhere (the seed drops it in the
// store-and-forward forms, which assume long messages; with th = 0 they
// coincide); see docs/sim.md for each one.
func Cost(t Topo, op string, mode Mode, p Params) (Result, error) {
	if err := p.Check(); err != nil {
		return Result{}, err
	}
	r := Result{Op: op, Topo: t.Spec, Mode: mode, P: t.P}
	var c stepCost
	var err error
	switch t.Kind {
	case Ring:
		c, err = ringCost(t, op, mode, p)
	case Torus:
		c, err = torusCost(t, op, mode, p)
	case Hypercube:
		c, err = cubeCost(t, op, mode, p)
	}
	if err != nil {
		return r, err
	}
	r.Steps, r.Time, r.Formula = c.steps, c.time, c.formula
	return r, nil
}

// stepCost is a cost formula evaluated: steps, time and the formula.
type stepCost struct {
	steps   int
	time    float64
	formula string
}

// ringCost evaluates the ring formulas of seed 002 §3.
func ringCost(t Topo, op string, mode Mode, p Params) (stepCost, error) {
	ts, tw, th, m := p.Ts, p.Tw, p.Th, float64(p.M)
	P := float64(t.P)
	hop := ts + m*tw + th // one neighbour message
	switch op {
	case "bcast":
		if mode == CT && pow2(t.P) {
			return stepCost{log2(t.P), (ts+m*tw)*float64(log2(t.P)) + th*(P-1), "(ts + m·tw)·log p + th·(p − 1)"}, nil
		}
		k := t.P / 2
		return stepCost{k, hop * float64(k), "(ts + m·tw + th)·⌊p/2⌋"}, nil
	case "allgather", "reduce", "scan", "scatter", "gather":
		return stepCost{t.P - 1, hop * (P - 1), "(ts + m·tw + th)·(p − 1)"}, nil
	case "alltoall":
		return stepCost{t.P - 1, (ts+th)*(P-1) + 0.5*m*tw*P*(P-1), "(ts + th)·(p − 1) + ½·m·tw·p·(p − 1)"}, nil
	case "shift":
		k := shiftSteps(p.Shift, t.P)
		return stepCost{k, hop * float64(k), "(ts + m·tw + th)·min(q mod p, p − q mod p)"}, nil
	}
	return stepCost{}, unknownOp(op)
}

// torusCost evaluates the 2D torus formulas of seed 002 §3 (rows, then
// columns).
func torusCost(t Topo, op string, mode Mode, p Params) (stepCost, error) {
	ts, tw, th, m := p.Ts, p.Tw, p.Th, float64(p.M)
	P, Q := float64(t.P), float64(t.Q)
	hop := ts + m*tw + th // one neighbour message
	switch op {
	case "bcast":
		if mode == CT && pow2(t.Q) {
			return stepCost{log2(t.P), (ts+m*tw)*float64(log2(t.P)) + 2*th*(Q-1), "(ts + m·tw)·log p + 2·th·(√p − 1)"}, nil
		}
		k := t.Q / 2
		return stepCost{2 * k, 2 * hop * float64(k), "2·(ts + m·tw + th)·⌊√p/2⌋"}, nil
	case "allgather", "scatter", "gather":
		return stepCost{2 * (t.Q - 1), 2*(ts+th)*(Q-1) + m*tw*(P-1), "2·(ts + th)·(√p − 1) + m·tw·(p − 1)"}, nil
	case "reduce", "scan":
		return stepCost{2 * (t.Q - 1), 2 * hop * (Q - 1), "2·(ts + m·tw + th)·(√p − 1)"}, nil
	case "alltoall":
		return stepCost{2 * (t.Q - 1), 2*(ts+th)*(Q-1) + m*tw*P*(Q-1), "(2·ts + 2·th + m·tw·p)·(√p − 1)"}, nil
	case "shift":
		k := torusShiftSteps(p.Shift, t.Q)
		return stepCost{k, hop * float64(k), "(ts + m·tw + th)·(row + wrap + column steps) ≤ (ts + m·tw + th)·(2⌊√p/2⌋ + 1)"}, nil
	}
	return stepCost{}, unknownOp(op)
}

// cubeCost evaluates the hypercube formulas of seed 002 §3.
func cubeCost(t Topo, op string, mode Mode, p Params) (stepCost, error) {
	ts, tw, th, m := p.Ts, p.Tw, p.Th, float64(p.M)
	P, D := float64(t.P), float64(t.D)
	hop := ts + m*tw + th // one neighbour message
	switch op {
	case "bcast", "reduce", "scan":
		return stepCost{t.D, hop * D, "(ts + m·tw + th)·log p"}, nil
	case "allgather", "scatter", "gather":
		return stepCost{t.D, (ts+th)*D + m*tw*(P-1), "(ts + th)·log p + m·tw·(p − 1)"}, nil
	case "alltoall":
		if mode == CT {
			return stepCost{t.P - 1, (ts+m*tw)*(P-1) + 0.5*th*P*D, "(ts + m·tw)·(p − 1) + ½·th·p·log p"}, nil
		}
		return stepCost{t.D, (ts + 0.5*m*P*tw + th) * D, "(ts + ½·m·p·tw + th)·log p"}, nil
	case "shift":
		return cubeShiftCost(t, mode, p), nil
	}
	return stepCost{}, unknownOp(op)
}

// cubeShiftCost is the circular shift by q on a hypercube: one message
// over log p − γ(q) hops with cut-through, else one stage per set bit of q.
func cubeShiftCost(t Topo, mode Mode, p Params) stepCost {
	ts, tw, th, m := p.Ts, p.Tw, p.Th, float64(p.M)
	q := ((p.Shift % t.P) + t.P) % t.P
	if q == 0 {
		return stepCost{0, 0, "0 (shift by a multiple of p)"}
	}
	if mode == CT {
		l := t.D - bits.TrailingZeros(uint(q))
		return stepCost{1, ts + m*tw + th*float64(l), "ts + m·tw + th·(log p − γ(q))"}
	}
	var time float64
	stages := 0
	for i := t.D - 1; i >= 0; i-- {
		if q&(1<<i) != 0 {
			h := 2
			if i == 0 {
				h = 1
			}
			time += ts + (m*tw+th)*float64(h)
			stages++
		}
	}
	return stepCost{stages, time, "Σ over set bits i of q: ts + (m·tw + th)·(i = 0 ? 1 : 2) ≤ (ts + 2·(m·tw + th))·log p"}
}

func unknownOp(op string) error {
	return fmt.Errorf("unknown operation %q (want %s)", op, strings.Join(Ops, ", "))
}

// shiftSteps is the number of neighbour steps of a q-shift on a p-ring.
func shiftSteps(q, p int) int {
	k := ((q % p) + p) % p
	return min(k, p-k)
}

// torusShiftSteps is row + wrap-compensation + column steps of a shift by
// s on a q×q torus (row-major numbering).
func torusShiftSteps(s, q int) int {
	p := q * q
	s = ((s % p) + p) % p
	a, b := s%q, s/q
	k := min(a, q-a) + min(b, q-b)
	if a > 0 {
		k++
	}
	return k
}

// PEModel is seed 002's cost of a sequence of operations among p fully
// connected processing elements (every PE one hop from every other, th
// = 0) with one-way latency ts and time per byte tw, for messages of m
// bytes: on a hypercube when p is a power of two (the binomial tree's
// rounds), else on a ring, with cut-through switching. It returns the
// total time, the network and formulas it used ("hypercube:3: bcast
// …"), and false when p < 2, a parameter is not positive, or an
// operation has no model there.
func PEModel(p int, ops []string, ts, tw float64, m int) (float64, string, bool) {
	if p < 2 || ts <= 0 || tw <= 0 || len(ops) == 0 {
		return 0, "", false
	}
	spec := fmt.Sprintf("ring:%d", p)
	if pow2(p) {
		spec = fmt.Sprintf("hypercube:%d", bits.Len(uint(p))-1)
	}
	topo, err := ParseModelTopo(spec)
	if err != nil {
		return 0, "", false
	}
	total, formulas := 0.0, make([]string, 0, len(ops))
	for _, op := range ops {
		res, err := Cost(topo, op, CT, Params{Ts: ts, Tw: tw, M: max(1, m)})
		if err != nil {
			return 0, "", false
		}
		total += res.Time
		formulas = append(formulas, op+" "+res.Formula)
	}
	return total, spec + ": " + strings.Join(formulas, " + "), true
}
