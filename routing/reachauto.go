package routing

import (
	"encoding/binary"
	"slices"
)

// reachAuto is the rule automaton as reachability follows it
// (propagate, sweep, pairReach, LegalPath): per state, the transitions
// that are not dominated, not the self-loop, and for angara* not
// conditional when no order-violating dependency was accepted
// (moves[moveStart[q]:moveStart[q+1]]), with the states that accept the
// same continuations merged.
//
// Two states are merged when they agree on whether a route may end
// there, on their self-loop direction, on their moves (direction,
// condition and merged target) and, when a move is conditional, on the
// direction that enters them (R_A*'s accepted turns depend on it). A
// walk of one is then a walk of the other, so a node is reached in a
// merged state exactly when it is reached in one of its states: the
// answers are those of the automaton, with fewer vertices to visit
// (under angara*: 37 states instead of 90 on a fault-free 4D torus, 70
// instead of 254 on a 5D one, 135 instead of 742 on Tofu-D's mixed 6D
// one).
type reachAuto struct {
	nstates   int
	begin     int32
	topo      []int32 // every move goes forward in this order
	self      []int8  // self-loop direction, or -1
	canEnd    []bool
	in        []int8 // the direction entering the state (for conditional moves)
	moveStart []int32
	moves     []move
	// simW words per state: sim[q·simW : (q+1)·simW] has bit p set when
	// state p ≠ q simulates q (see simulate); hasSim[q] when any does.
	simW   int
	sim    []uint64
	hasSim []bool
}

// mergeStates builds reachability's automaton from a's states and their
// moves (start, moves as reachAuto holds them), merging equivalent
// states by partition refinement.
func mergeStates(a *automaton, start []int32, moves []move) reachAuto {
	S := a.nstates
	class := make([]int32, S)
	next := make([]int32, S)
	classes := 1
	ids := map[string]int32{}
	var key []byte
	for {
		clear(ids)
		for q := range S {
			key = key[:0]
			key = binary.AppendVarint(key, int64(class[q]))
			key = binary.AppendVarint(key, int64(a.self[q]))
			in := int8(-1)
			ms := moves[start[q]:start[q+1]]
			for _, mv := range ms {
				if mv.cond {
					in = a.in[q]
				}
			}
			key = binary.AppendVarint(key, int64(in))
			if a.canEnd[q] {
				key = append(key, 1)
			} else {
				key = append(key, 0)
			}
			// The moves in direction order: a state has at most one
			// move per direction.
			sorted := slices.Clone(ms)
			slices.SortFunc(sorted, func(x, y move) int { return int(x.dir) - int(y.dir) })
			for _, mv := range sorted {
				c := byte(0)
				if mv.cond {
					c = 1
				}
				key = append(key, byte(mv.dir), c)
				key = binary.AppendVarint(key, int64(class[mv.to]))
			}
			id, ok := ids[string(key)]
			if !ok {
				id = int32(len(ids))
				ids[string(key)] = id
			}
			next[q] = id
		}
		class, next = next, class
		if len(ids) == classes {
			break
		}
		classes = len(ids)
	}
	ra := reachAuto{
		nstates:   classes,
		begin:     class[a.begin],
		self:      make([]int8, classes),
		canEnd:    make([]bool, classes),
		in:        make([]int8, classes),
		moveStart: make([]int32, classes+1),
	}
	// One representative per class: its moves are every member's, up to
	// the targets' classes.
	rep := make([]int, classes)
	for i := range rep {
		rep[i] = -1
	}
	// A move from a class goes to a class whose last member in a.topo
	// comes later than the first class's last member, so the classes
	// in the order of their last members are in topological order.
	last := make([]int, classes)
	for i, q := range a.topo {
		c := class[q]
		last[c] = i
		if rep[c] < 0 {
			rep[c] = int(q)
		}
	}
	ra.topo = make([]int32, classes)
	for c := range ra.topo {
		ra.topo[c] = int32(c)
	}
	slices.SortFunc(ra.topo, func(x, y int32) int { return last[x] - last[y] })
	for c := range classes {
		q := rep[c]
		ra.self[c], ra.canEnd[c], ra.in[c] = a.self[q], a.canEnd[q], a.in[q]
		ra.moveStart[c] = int32(len(ra.moves))
		for _, mv := range moves[start[q]:start[q+1]] {
			mv.to = class[mv.to]
			ra.moves = append(ra.moves, mv)
		}
	}
	ra.moveStart[classes] = int32(len(ra.moves))
	ra.simulate()
	return ra
}

// simulate finds which states simulate which (ra.sim): p simulates q
// when a route may end in p wherever it may end in q, and every step q
// can take (its self-loop, its moves) p can take too, in the same
// direction and under no stricter condition, to a state that simulates
// the one q reaches. Then every walk the set's routing graph holds from
// (v, q) it holds from (v, p) as well (a move's condition depends only
// on its node, its direction and the direction entering the state), and
// ends its route wherever that one does: a search that has reached
// (v, p) needs not visit (v, q). It is the greatest such relation, found
// by removing pairs until every pair left is matched.
func (ra *reachAuto) simulate() {
	S := ra.nstates
	steps := make([][]move, S) // the self-loop as a move, then the moves
	for q := range S {
		if sd := ra.self[q]; sd >= 0 {
			steps[q] = append(steps[q], move{dir: Dir(sd), to: int32(q)})
		}
		steps[q] = append(steps[q], ra.moves[ra.moveStart[q]:ra.moveStart[q+1]]...)
	}
	rel := make([]bool, S*S) // rel[p·S+q]: p simulates q
	for p := range S {
		for q := range S {
			rel[p*S+q] = !ra.canEnd[q] || ra.canEnd[p]
		}
	}
	matched := func(p, q int, e move) bool {
		for _, f := range steps[p] {
			if f.dir == e.dir && (!f.cond || e.cond && ra.in[p] == ra.in[q]) && rel[int(f.to)*S+int(e.to)] {
				return true
			}
		}
		return false
	}
	for changed := true; changed; {
		changed = false
		for p := range S {
			for q := range S {
				if p == q || !rel[p*S+q] {
					continue
				}
				for _, e := range steps[q] {
					if !matched(p, q, e) {
						rel[p*S+q], changed = false, true
						break
					}
				}
			}
		}
	}
	ra.simW = (S + 63) / 64
	ra.sim = make([]uint64, S*ra.simW)
	ra.hasSim = make([]bool, S)
	for q := range S {
		for p := range S {
			if p != q && rel[p*S+q] {
				ra.sim[q*ra.simW+p/64] |= 1 << (p % 64)
				ra.hasSim[q] = true
			}
		}
	}
}
