package collective

import (
	"fmt"
	"math/bits"
)

// Msg is one message of a plan: Src sends Size words to Dst once the
// messages in Deps have been delivered.
type Msg struct {
	Src, Dst int
	Size     int
	Deps     []int
	Step     int
}

type send struct{ src, dst, size int }

// MaxPlanMessages bounds the size of a plan.
const MaxPlanMessages = 1 << 22

// Plan returns the messages of the algorithm the model of op assumes,
// step by step: a processor starts its messages of a step once every
// message it sent or received in its previous step has been delivered
// (the synchronous-step reading of the seed's algorithms; a processor may
// send on several links at once).
func Plan(t Topo, op string, mode Mode, p Params) ([]Msg, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	var steps [][]send
	var err error
	switch t.Kind {
	case Ring:
		steps, err = ringPlan(t.P, op, mode, p)
	case Torus:
		steps, err = torusPlan(t.Q, op, mode, p)
	case Hypercube:
		steps, err = cubePlan(t.D, op, mode, p)
	}
	if err != nil {
		return nil, err
	}
	total := 0
	for _, s := range steps {
		total += len(s)
	}
	if total > MaxPlanMessages {
		return nil, fmt.Errorf("plan of %d messages is too large", total)
	}
	return linkSteps(t.P, steps), nil
}

// linkSteps turns steps into messages with dependencies: a processor's
// messages of a step wait for every message it received since it last
// sent, and for the messages it sent then (which waited for everything
// before), so each send follows all of the processor's earlier traffic.
func linkSteps(P int, steps [][]send) []Msg {
	pending := make([][]int, P) // received since the last send
	lastSent := make([][]int, P)
	var out []Msg
	for k, st := range steps {
		first := len(out)
		for _, s := range st {
			deps := append(append([]int(nil), lastSent[s.src]...), pending[s.src]...)
			out = append(out, Msg{Src: s.src, Dst: s.dst, Size: s.size, Deps: deps, Step: k + 1})
		}
		sent := map[int][]int{}
		for i := first; i < len(out); i++ {
			sent[out[i].Src] = append(sent[out[i].Src], i)
		}
		for v, ms := range sent {
			lastSent[v] = ms
			pending[v] = nil
		}
		for i := first; i < len(out); i++ {
			if d := out[i].Dst; d != out[i].Src {
				pending[d] = append(pending[d], i)
			}
		}
	}
	return out
}

func ringPlan(P int, op string, mode Mode, p Params) ([][]send, error) {
	m := p.M
	next := func(i, d int) int { return ((i+d)%P + P) % P }
	var steps [][]send
	switch op {
	case "bcast":
		if mode == CT && pow2(P) {
			for d := P / 2; d >= 1; d /= 2 {
				var st []send
				for x := 0; x < P; x += 2 * d {
					st = append(st, send{x, x + d, m})
				}
				steps = append(steps, st)
			}
			return steps, nil
		}
		right, left := P/2, (P-1)/2
		for i := 1; i <= max(right, left); i++ {
			var st []send
			if i <= right {
				st = append(st, send{i - 1, i, m})
			}
			if i <= left {
				st = append(st, send{next(0, -(i - 1)), next(0, -i), m})
			}
			steps = append(steps, st)
		}
	case "allgather", "reduce", "scan":
		for k := 1; k < P; k++ {
			var st []send
			for i := 0; i < P; i++ {
				st = append(st, send{i, next(i, 1), m})
			}
			steps = append(steps, st)
		}
	case "scatter":
		steps = pipeScatter(P, m, func(j int) int { return j })
	case "gather":
		steps = pipeGather(P, m, func(j int) int { return j })
	case "alltoall":
		for k := 1; k < P; k++ {
			var st []send
			for i := 0; i < P; i++ {
				st = append(st, send{i, next(i, 1), m * (P - k)})
			}
			steps = append(steps, st)
		}
	case "shift":
		q := ((p.Shift % P) + P) % P
		dir, k := 1, q
		if q > P-q {
			dir, k = -1, P-q
		}
		for s := 0; s < k; s++ {
			var st []send
			for i := 0; i < P; i++ {
				st = append(st, send{i, next(i, dir), m})
			}
			steps = append(steps, st)
		}
	default:
		return nil, unknownOp(op)
	}
	return steps, nil
}

// pipeScatter scatters from position 0 along a line of P positions
// (node(j) gives the processor): in step s the source sends the block of
// the farthest position still missing and every position 1..s-1 forwards
// what it received in the step before.
func pipeScatter(P, size int, node func(int) int) [][]send {
	var steps [][]send
	for s := 1; s < P; s++ {
		st := []send{{node(0), node(1), size}}
		for j := 1; j < s; j++ {
			st = append(st, send{node(j), node(j + 1), size})
		}
		steps = append(steps, st)
	}
	return steps
}

// pipeGather is pipeScatter reversed in time and direction.
func pipeGather(P, size int, node func(int) int) [][]send {
	var steps [][]send
	for s := 1; s < P; s++ {
		var st []send
		for j := 0; j < P-s; j++ {
			st = append(st, send{node(j + 1), node(j), size})
		}
		steps = append(steps, st)
	}
	return steps
}

// merge runs the step lists of independent groups side by side.
func merge(groups [][][]send) [][]send {
	var out [][]send
	for _, g := range groups {
		for k, st := range g {
			for len(out) <= k {
				out = append(out, nil)
			}
			out[k] = append(out[k], st...)
		}
	}
	return out
}

func torusPlan(Q int, op string, mode Mode, p Params) ([][]send, error) {
	m := p.M
	t := torusLines{Q: Q, mode: mode, shift: p.Shift}
	rows, cols := t.rows(), t.cols()
	switch op {
	case "bcast":
		return t.rowsThenCols("bcast", rows[:1], m, "bcast", cols, m)
	case "allgather":
		return t.rowsThenCols("allgather", rows, m, "allgather", cols, Q*m)
	case "reduce", "scan":
		return t.rowsThenCols(op, rows, m, op, cols, m)
	case "scatter":
		return t.rowsThenCols("scatter", rows[:1], Q*m, "scatter", cols, m)
	case "gather":
		return t.rowsThenCols("gather", cols, m, "gather", rows[:1], Q*m)
	case "alltoall":
		return t.rowsThenCols("alltoall", rows, Q*m, "alltoall", cols, Q*m)
	case "shift":
		return t.shiftPlan(p.Shift, m)
	}
	return nil, unknownOp(op)
}

// torusLines runs ring algorithms along the rows and columns of a Q×Q
// torus.
type torusLines struct {
	Q     int
	mode  Mode
	shift int
}

// id numbers node (x, y), coordinates taken modulo Q.
func (t torusLines) id(x, y int) int {
	Q := t.Q
	return ((x%Q+Q)%Q + Q*((y%Q+Q)%Q))
}

// rows maps position j of row y to its node, for every y.
func (t torusLines) rows() []func(int) int {
	rows := make([]func(int) int, t.Q)
	for y := range rows {
		rows[y] = func(j int) int { return t.id(j, y) }
	}
	return rows
}

// cols maps position j of column x to its node, for every x.
func (t torusLines) cols() []func(int) int {
	cols := make([]func(int) int, t.Q)
	for x := range cols {
		cols[x] = func(j int) int { return t.id(x, j) }
	}
	return cols
}

// lineSteps applies a ring plan of Q positions along every row (or
// column) given by lines, all lines at once.
func (t torusLines) lineSteps(lines []func(int) int, op string, size int) ([][]send, error) {
	var groups [][][]send
	for _, ln := range lines {
		rp, err := ringPlan(t.Q, op, t.mode, Params{M: size, Shift: t.shift})
		if err != nil {
			return nil, err
		}
		for _, st := range rp {
			for i := range st {
				st[i].src, st[i].dst = ln(st[i].src), ln(st[i].dst)
			}
		}
		groups = append(groups, rp)
	}
	return merge(groups), nil
}

// rowsThenCols runs op1 with size s1 along lines1, then op2 with size s2
// along lines2: the two phases of a 2D torus collective.
func (t torusLines) rowsThenCols(op1 string, lines1 []func(int) int, s1 int, op2 string, lines2 []func(int) int, s2 int) ([][]send, error) {
	a, err := t.lineSteps(lines1, op1, s1)
	if err != nil {
		return nil, err
	}
	b, err := t.lineSteps(lines2, op2, s2)
	if err != nil {
		return nil, err
	}
	return append(a, b...), nil
}

// shiftPlan shifts by s = a + Q·b: every row shifts by a, the a nodes
// that wrapped past the row's end move one row on, then every column
// shifts by b.
func (t torusLines) shiftPlan(shift, m int) ([][]send, error) {
	Q, P := t.Q, t.Q*t.Q
	s := ((shift % P) + P) % P
	a, b := s%Q, s/Q
	var steps [][]send
	ra, err := ringPlanShift(Q, a, m)
	if err != nil {
		return nil, err
	}
	for _, st := range ra {
		var all []send
		for y := 0; y < Q; y++ {
			for _, x := range st {
				all = append(all, send{t.id(x.src, y), t.id(x.dst, y), m})
			}
		}
		steps = append(steps, all)
	}
	if a > 0 {
		var comp []send
		for y := 0; y < Q; y++ {
			for x := 0; x < a; x++ {
				comp = append(comp, send{t.id(x, y), t.id(x, y+1), m})
			}
		}
		steps = append(steps, comp)
	}
	cb, err := ringPlanShift(Q, b, m)
	if err != nil {
		return nil, err
	}
	for _, st := range cb {
		var all []send
		for x := 0; x < Q; x++ {
			for _, e := range st {
				all = append(all, send{t.id(x, e.src), t.id(x, e.dst), m})
			}
		}
		steps = append(steps, all)
	}
	return steps, nil
}

func ringPlanShift(P, q, m int) ([][]send, error) {
	return ringPlan(P, "shift", CT, Params{M: m, Shift: q})
}

func cubePlan(D int, op string, mode Mode, p Params) ([][]send, error) {
	m := p.M
	P := 1 << D
	switch op {
	case "bcast":
		return cubeBcast(D, m), nil
	case "allgather":
		return cubeExchanges(D, func(i int) int { return m << i }), nil
	case "reduce", "scan":
		return cubeExchanges(D, func(int) int { return m }), nil
	case "scatter":
		return cubeScatter(D, m), nil
	case "gather":
		return cubeGather(D, m), nil
	case "alltoall":
		if mode == CT {
			return cubeAlltoallDirect(D, m), nil
		}
		return cubeExchanges(D, func(int) int { return m * P / 2 }), nil
	case "shift":
		return cubeShift(D, p.Shift, mode, m), nil
	}
	return nil, unknownOp(op)
}

// cubeExchanges is D steps; in step i every node swaps size(i) words with
// its neighbour across dimension i.
func cubeExchanges(D int, size func(i int) int) [][]send {
	P := 1 << D
	var steps [][]send
	for i := 0; i < D; i++ {
		var st []send
		for x := 0; x < P; x++ {
			st = append(st, send{x, x ^ 1<<i, size(i)})
		}
		steps = append(steps, st)
	}
	return steps
}

// cubeBcast is the binomial tree: in step i the 2^i nodes that have the
// message send it across dimension i.
func cubeBcast(D, m int) [][]send {
	var steps [][]send
	for i := 0; i < D; i++ {
		var st []send
		for x := 0; x < 1<<i; x++ {
			st = append(st, send{x, x | 1<<i, m})
		}
		steps = append(steps, st)
	}
	return steps
}

// cubeScatter halves the data in each step: step j sends P/2^j blocks
// across the highest remaining dimension.
func cubeScatter(D, m int) [][]send {
	P := 1 << D
	var steps [][]send
	for j := 1; j <= D; j++ {
		d := P >> j
		var st []send
		for x := 0; x < P; x += 2 * d {
			st = append(st, send{x, x + d, d * m})
		}
		steps = append(steps, st)
	}
	return steps
}

// cubeGather is the scatter reversed: step j collects 2^(j-1) blocks
// across dimension j-1.
func cubeGather(D, m int) [][]send {
	P := 1 << D
	var steps [][]send
	for j := 1; j <= D; j++ {
		d := 1 << (j - 1)
		var st []send
		for x := d; x < P; x += 2 * d {
			st = append(st, send{x, x - d, d * m})
		}
		steps = append(steps, st)
	}
	return steps
}

// cubeAlltoallDirect is the cut-through personalised exchange: in step j
// every node x sends its block to x XOR j.
func cubeAlltoallDirect(D, m int) [][]send {
	P := 1 << D
	var steps [][]send
	for j := 1; j < P; j++ {
		var st []send
		for x := 0; x < P; x++ {
			st = append(st, send{x, x ^ j, m})
		}
		steps = append(steps, st)
	}
	return steps
}

// cubeShift shifts by q: one direct step with cut-through, otherwise one
// step per set bit of q along the Gray-code ring.
func cubeShift(D, shift int, mode Mode, m int) [][]send {
	P := 1 << D
	q := ((shift % P) + P) % P
	if q == 0 {
		return nil
	}
	if mode == CT {
		var st []send
		for x := 0; x < P; x++ {
			st = append(st, send{x, (x + q) % P, m})
		}
		return [][]send{st}
	}
	gray := func(k int) int { return k ^ k>>1 }
	var steps [][]send
	for i := D - 1; i >= 0; i-- {
		if q&(1<<i) == 0 {
			continue
		}
		var st []send
		for k := 0; k < P; k++ {
			st = append(st, send{gray(k), gray((k + 1<<i) % P), m})
		}
		steps = append(steps, st)
	}
	return steps
}

// Hops returns the number of links of the longest message of a plan when
// messages follow shortest paths (used to sanity-check plans).
func Hops(t Topo, a, b int) int {
	switch t.Kind {
	case Ring:
		d := ((b-a)%t.P + t.P) % t.P
		return min(d, t.P-d)
	case Torus:
		ax, ay, bx, by := a%t.Q, a/t.Q, b%t.Q, b/t.Q
		dx := ((bx-ax)%t.Q + t.Q) % t.Q
		dy := ((by-ay)%t.Q + t.Q) % t.Q
		return min(dx, t.Q-dx) + min(dy, t.Q-dy)
	}
	return bits.OnesCount(uint(a ^ b))
}
