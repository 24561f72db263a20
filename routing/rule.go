package routing

import (
	"fmt"
	"sort"
	"strings"
)

// Kind is a family of routing rules.
type Kind uint8

const (
	// DOR is direction-order routing: a route takes its directions in
	// non-decreasing order.
	DOR Kind = iota
	// Dirbit is DOR plus direction bits (IBM Blue Gene): a route never
	// moves in both directions of one dimension.
	Dirbit
	// AngaraMinus (R_A−) is Dirbit plus one First Step in a positive
	// direction and one Last Step in a negative direction that are exempt
	// from the direction bits but still obey the direction order.
	// Deadlock-free.
	AngaraMinus
	// Angara (R_A) is Dirbit plus unrestricted FS/LS steps, as the Angara
	// router allows in hardware. It may deadlock.
	Angara
	// AngaraStar (R_A*) is R_A− plus those order-violating FS/LS
	// transitions that, added one by one to the channel dependency graph,
	// close no cycle containing a turn. Deadlock-free.
	AngaraStar
)

var kindNames = [...]string{"dor", "dirbit", "angara-", "angara", "angara*"}

// String returns the canonical rule name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind%d", int(k))
}

// HasFSLS reports whether the rule allows First Step / Last Step moves.
func (k Kind) HasFSLS() bool { return k >= AngaraMinus }

// Rule is a routing rule: a family and a direction order.
type Rule struct {
	Kind Kind
	// Order is the direction order; nil means DefaultOrder of the torus.
	Order Order
}

// RuleNames lists the accepted rule names.
func RuleNames() []string { return append([]string(nil), kindNames[:]...) }

// ParseRule parses a rule name: dor, dirbit, angara-, angara, angara*
// (also R_A−, R_A, R_A*, angara-minus, angara-star). The direction order
// is the default; set Rule.Order for another one.
func ParseRule(s string) (Rule, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.ReplaceAll(t, "−", "-")
	t = strings.ReplaceAll(t, "_", "")
	switch t {
	case "dor", "do":
		return Rule{Kind: DOR}, nil
	case "dirbit", "bluegene", "bg":
		return Rule{Kind: Dirbit}, nil
	case "angara-", "ra-", "angara-minus", "angaraminus":
		return Rule{Kind: AngaraMinus}, nil
	case "angara", "ra":
		return Rule{Kind: Angara}, nil
	case "angara*", "ra*", "angara-star", "angarastar":
		return Rule{Kind: AngaraStar}, nil
	}
	return Rule{}, fmt.Errorf("unknown routing rule %q (want dor, dirbit, angara-, angara or angara*)", s)
}

// String returns the rule name, followed by the order in brackets when it
// is not the default.
func (r Rule) String() string {
	if r.Order == nil || isDefault(r.Order) {
		return r.Kind.String()
	}
	return r.Kind.String() + "[" + r.Order.String() + "]"
}

// OrderFor returns the rule's direction order for an n-dimensional torus.
func (r Rule) OrderFor(n int) Order {
	if r.Order == nil {
		return DefaultOrder(n)
	}
	return r.Order
}

func isDefault(o Order) bool {
	n := len(o) / 2
	for i, d := range DefaultOrder(n) {
		if o[i] != d {
			return false
		}
	}
	return true
}

// ---- the rule automaton ----
//
// A rule is compiled into a small nondeterministic automaton over
// directions whose states are the history a router keeps about a packet.
// The routing graph RG is the product of the torus with this automaton
// (see RoutingGraph).

type stateKind uint8

const (
	sBegin stateKind = iota
	sFS
	sDirbit
	sLS
	sLast // DOR: last direction taken
	sEnd
)

type automaton struct {
	kind    Kind
	n, nd   int
	order   Order
	rank    []int8
	nstates int
	begin   int
	end     int
	skind   []stateKind
	in      []int8 // direction of the step that enters the state, -1 for begin/end
	canEnd  []bool
	set     []int32 // sDirbit: the dirbit set code (base 3 per dimension: 0 unused, 1 +, 2 −)
	// transitions of state q: tstart[q] .. tstart[q+1]
	tstart []int32
	tdir   []Dir
	tto    []int32
	tcond  []bool // allowed only where R_A* accepted the order-violating dependency
	pow3   []int32
	// dominators of state q: domStart[q] .. domStart[q+1] in dom. State p
	// dominates q when, at the same node and entered by the same
	// direction, every continuation of q is open to p too (a dirbit set
	// is dominated by its subsets with the same highest direction and by
	// FS of that direction).
	domStart []int32
	dom      []int32
	// tskip[k]: transition k is dominated by a sibling (same state and
	// direction, a dominating target, no stricter condition), so searches
	// for shortest routes or reachability may ignore it.
	tskip []bool
	// topo lists the states so that every transition goes forward or is a
	// self-loop; self[q] is the direction of q's self-loop (repeating the
	// last direction), or -1.
	topo []int32
	self []int8
}

func pow3(n int) int {
	p := 1
	for i := 0; i < n; i++ {
		p *= 3
	}
	return p
}

// setDigit returns the state of dimension dim in dirbit set code c:
// 0 unused, 1 positive, 2 negative.
func (a *automaton) setDigit(c int32, dim int) int32 { return c / a.pow3[dim] % 3 }

// setMax returns the highest-ranked direction of dirbit set code c.
func (a *automaton) setMax(c int32) Dir {
	best, br := Dir(0), int8(-1)
	for dim := 0; dim < a.n; dim++ {
		var d Dir
		switch a.setDigit(c, dim) {
		case 0:
			continue
		case 1:
			d = Plus(dim)
		case 2:
			d = Minus(dim)
		}
		if a.rank[d] > br {
			best, br = d, a.rank[d]
		}
	}
	return best
}

// setAdd returns the code of c ∪ {d}, or -1 if the direction bits forbid d.
func (a *automaton) setAdd(c int32, d Dir) int32 {
	want := int32(1)
	if d.Neg() {
		want = 2
	}
	switch a.setDigit(c, d.Dim()) {
	case 0:
		return c + want*a.pow3[d.Dim()]
	case want:
		return c
	}
	return -1
}

// transition is one automaton transition while the automaton is built.
type transition struct {
	d    Dir
	to   int32
	cond bool
}

// compile builds the automaton of a rule: its states and transitions,
// the dominators of every state, a topological order and the packed
// transition tables.
func compile(kind Kind, order Order, n int) *automaton {
	a := &automaton{kind: kind, n: n, nd: 2 * n, order: order, rank: order.ranks()}
	a.pow3 = make([]int32, n+1)
	for i := range a.pow3 {
		a.pow3[i] = int32(pow3(i))
	}
	var trans [][]transition
	if kind == DOR {
		trans = a.dorStates()
	} else {
		trans = a.dirbitStates()
	}
	a.nstates = len(a.skind)
	a.findDominators()
	a.sortStates(trans)
	a.packTransitions(trans)
	return a
}

// addState appends a state and returns its number.
func (a *automaton) addState(trans *[][]transition, k stateKind, in int8, canEnd bool, set int32) int {
	a.skind = append(a.skind, k)
	a.in = append(a.in, in)
	a.canEnd = append(a.canEnd, canEnd)
	a.set = append(a.set, set)
	*trans = append(*trans, nil)
	return len(a.skind) - 1
}

// dorStates builds the DOR automaton: begin, one state per last
// direction, end.
func (a *automaton) dorStates() [][]transition {
	var trans [][]transition
	nd := a.nd
	a.begin = a.addState(&trans, sBegin, -1, false, 0)
	for d := 0; d < nd; d++ {
		a.addState(&trans, sLast, int8(d), true, 0)
	}
	a.end = a.addState(&trans, sEnd, -1, false, 0)
	last := func(d Dir) int32 { return int32(1 + int(d)) }
	for d := Dir(0); int(d) < nd; d++ {
		trans[a.begin] = append(trans[a.begin], transition{d, last(d), false})
		for e := Dir(0); int(e) < nd; e++ {
			if a.rank[e] >= a.rank[d] {
				trans[last(d)] = append(trans[last(d)], transition{e, last(e), false})
			}
		}
	}
	return trans
}

// dirbitStates builds the automaton of dirbit and the Angara rules:
// begin, FS states, one state per dirbit set, LS states, end.
func (a *automaton) dirbitStates() [][]transition {
	var trans [][]transition
	n, nd, kind := a.n, a.nd, a.kind
	fsls := kind.HasFSLS()
	a.begin = a.addState(&trans, sBegin, -1, false, 0)
	fsBase := int32(len(a.skind))
	if fsls {
		for j := 0; j < n; j++ {
			a.addState(&trans, sFS, int8(Plus(j)), true, 0)
		}
	}
	setBase := int32(len(a.skind)) - 1 // state of set code c is setBase + c
	p := pow3(n)
	for c := 1; c < p; c++ {
		a.addState(&trans, sDirbit, 0, true, int32(c))
	}
	for c := int32(1); c < int32(p); c++ {
		a.in[setBase+c] = int8(a.setMax(c))
	}
	lsBase := int32(len(a.skind))
	if fsls {
		for j := 0; j < n; j++ {
			a.addState(&trans, sLS, int8(Minus(j)), true, 0)
		}
	}
	a.end = a.addState(&trans, sEnd, -1, false, 0)
	for d := Dir(0); int(d) < nd; d++ {
		trans[a.begin] = append(trans[a.begin], transition{d, setBase + a.setAdd(0, d), false})
		if fsls && !d.Neg() {
			trans[a.begin] = append(trans[a.begin], transition{d, fsBase + int32(d.Dim()), false})
		}
	}
	if fsls {
		for j := 0; j < n; j++ {
			q := fsBase + int32(j)
			for d := Dir(0); int(d) < nd; d++ {
				if ok, cond := a.boundary(Plus(j), d); ok {
					trans[q] = append(trans[q], transition{d, setBase + a.setAdd(0, d), cond})
					if d.Neg() {
						trans[q] = append(trans[q], transition{d, lsBase + int32(d.Dim()), cond})
					}
				}
			}
		}
	}
	for c := int32(1); c < int32(p); c++ {
		q := setBase + c
		last := Dir(a.in[q])
		for d := Dir(0); int(d) < nd; d++ {
			if a.rank[d] >= a.rank[last] {
				if t := a.setAdd(c, d); t >= 0 {
					trans[q] = append(trans[q], transition{d, setBase + t, false})
				}
			}
			if fsls && d.Neg() {
				if ok, cond := a.boundary(last, d); ok {
					trans[q] = append(trans[q], transition{d, lsBase + int32(d.Dim()), cond})
				}
			}
		}
	}
	return trans
}

// boundary reports whether an FS/LS transition from direction from to d
// exists under the rule, and whether it is conditional: order-violating
// transitions are static for R_A, conditional for R_A*, absent for R_A−.
func (a *automaton) boundary(from, d Dir) (ok, cond bool) {
	if a.rank[d] >= a.rank[from] || a.kind == Angara {
		return true, false
	}
	if a.kind == AngaraStar {
		return true, true
	}
	return false, false
}

// findDominators lists, for every dirbit state, the states that dominate
// it: its subsets with the same highest direction and FS of that
// direction.
func (a *automaton) findDominators() {
	a.domStart = make([]int32, a.nstates+1)
	for q := 0; q < a.nstates; q++ {
		if a.skind[q] == sDirbit {
			c := a.set[q]
			top := Dir(a.in[q])
			for p := 0; p < a.nstates; p++ {
				switch {
				case p == q:
				case a.skind[p] == sFS && Dir(a.in[p]) == top:
					a.dom = append(a.dom, int32(p))
				case a.skind[p] == sDirbit && Dir(a.in[p]) == top && a.subset(a.set[p], c):
					a.dom = append(a.dom, int32(p))
				}
			}
		}
		a.domStart[q+1] = int32(len(a.dom))
	}
}

// sortStates finds every state's self-loop and a topological order:
// begin, FS, dirbit sets by size (or DOR states by rank), LS, end;
// transitions only go forward apart from self-loops.
func (a *automaton) sortStates(trans [][]transition) {
	a.self = make([]int8, a.nstates)
	key := make([]int, a.nstates)
	for q := 0; q < a.nstates; q++ {
		a.self[q] = -1
		for _, t := range trans[q] {
			if int(t.to) == q {
				a.self[q] = int8(t.d)
			}
		}
		switch a.skind[q] {
		case sBegin:
			key[q] = 0
		case sFS:
			key[q] = 1
		case sDirbit:
			size := 0
			for dim := 0; dim < a.n; dim++ {
				if a.setDigit(a.set[q], dim) != 0 {
					size++
				}
			}
			key[q] = 2 + size
		case sLast:
			key[q] = 2 + int(a.rank[a.in[q]])
		case sLS:
			key[q] = 100
		case sEnd:
			key[q] = 101
		}
		a.topo = append(a.topo, int32(q))
	}
	sort.SliceStable(a.topo, func(i, j int) bool { return key[a.topo[i]] < key[a.topo[j]] })
}

// packTransitions stores the transitions in flat tables and marks those
// dominated by a sibling (same direction, a dominating target, no
// stricter condition).
func (a *automaton) packTransitions(trans [][]transition) {
	a.tstart = make([]int32, a.nstates+1)
	for q, ts := range trans {
		a.tstart[q+1] = a.tstart[q] + int32(len(ts))
		for i, t := range ts {
			a.tdir = append(a.tdir, t.d)
			a.tto = append(a.tto, t.to)
			a.tcond = append(a.tcond, t.cond)
			skip := false
			for j, u := range ts {
				if j != i && u.d == t.d && u.to != t.to && (!u.cond || t.cond) && a.dominates(int(u.to), int(t.to)) {
					skip = true
				}
			}
			a.tskip = append(a.tskip, skip)
		}
	}
}

// dominates reports whether state p dominates state q (same node, same
// entering direction): p is among q's dominators, or q is an LS state
// (which can only end) and p a dirbit set entered the same way.
func (a *automaton) dominates(p, q int) bool {
	if a.in[p] != a.in[q] || a.in[p] < 0 {
		return false
	}
	for _, x := range a.dom[a.domStart[q]:a.domStart[q+1]] {
		if int(x) == p {
			return true
		}
	}
	return a.skind[q] == sLS && a.skind[p] == sDirbit
}

// subset reports whether dirbit set b ⊆ c.
func (a *automaton) subset(b, c int32) bool {
	for dim := 0; dim < a.n; dim++ {
		if x := a.setDigit(b, dim); x != 0 && x != a.setDigit(c, dim) {
			return false
		}
	}
	return true
}

// stateName names automaton state q for display ("begin", "FS+X",
// "{+X,-Y}", "LS-Z", "last+Y", "end").
func (a *automaton) stateName(q int) string {
	switch a.skind[q] {
	case sBegin:
		return "begin"
	case sEnd:
		return "end"
	case sFS:
		return "FS" + Dir(a.in[q]).String()
	case sLS:
		return "LS" + Dir(a.in[q]).String()
	case sLast:
		return "last" + Dir(a.in[q]).String()
	}
	var parts []string
	for _, d := range a.order {
		if t := a.setDigit(a.set[q], d.Dim()); (t == 1 && !d.Neg()) || (t == 2 && d.Neg()) {
			parts = append(parts, d.String())
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}
