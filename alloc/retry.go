package alloc

import "github.com/icn-hpc/icn/internal/bitset"

// retryMemo lets a decision that repeats a failed one examine only the
// placements the state changes since could affect. A placement's outcome
// (its set, whether the set is reachable, what it reduces to) depends only
// on which nodes of its rectangle are available, on the network and on
// the request. When a decision found no reachable set at all, every
// placement was asked the full question and failed; at a later decision
// with the same request, a rectangle none of whose nodes changed
// availability fails again, so only rectangles holding a changed node
// need examining, and the candidates (hence the choice) are the same as a
// full enumeration's. A cluster replay asks this often: the head job is
// tried again each time nodes are freed.
//
// Only Fast requests use it (their Found counts only the placements
// examined). The memo is emptied when the router, the graph or its
// failures change.
type retryMemo struct {
	failed  map[retryKey]bitset.Set // availability at the last failed decision
	changed *grid                   // for the current decision: changed (or failed) nodes
	marks   []int32
}

// retryKey is what, besides the state, decides a placement's outcome.
type retryKey struct {
	m, t int
	algo Algo
}

// maxRetryMemo bounds the number of requests remembered.
const maxRetryMemo = 256

func keyOf(req Request) retryKey { return retryKey{req.Nodes, req.Transit, req.Algo} }

func (r *retryMemo) reset() { r.failed = nil }

// since returns, when the request failed before, a grid counting in each
// rectangle the nodes whose availability changed since (failed nodes
// count too, which only makes more placements examined); nil otherwise.
func (r *retryMemo) since(s *State, req Request) *grid {
	if !req.Fast || req.CountOnly {
		return nil
	}
	snap, ok := r.failed[keyOf(req)]
	if !ok {
		return nil
	}
	if len(r.marks) != s.N() {
		r.marks = make([]int32, s.N())
	}
	for v := range r.marks {
		r.marks[v] = 0
		if s.Available(v) != snap.Has(v) {
			r.marks[v] = 1
		}
	}
	// A state whose unavailable nodes are the changed (and failed) ones.
	ch := &State{g: s.g, dims: s.dims, wrap: s.wrap, owner: r.marks}
	if r.changed == nil || len(r.changed.dims) != len(s.dims) {
		r.changed = newGrid(ch)
	} else {
		r.changed.fill(ch)
	}
	return r.changed
}

// fail records that the request found no reachable set on state s.
func (r *retryMemo) fail(s *State, req Request) {
	if !req.Fast || req.CountOnly {
		return
	}
	if r.failed == nil || len(r.failed) >= maxRetryMemo {
		r.failed = map[retryKey]bitset.Set{}
	}
	snap := bitset.New(s.N())
	for v := 0; v < s.N(); v++ {
		if s.Available(v) {
			snap.Add(v)
		}
	}
	r.failed[keyOf(req)] = snap
}
