package alloc

import "slices"

// Chunk sizes of a candArena: large enough that a decision allocates few
// chunks, small enough that an idle selector holds little.
const (
	arenaCandidates = 256
	arenaInts       = 4096
)

// candArena hands out one worker's candidates and their corner
// coordinates from chunks that a Selector keeps across decisions: a
// decision records thousands of candidates of which it keeps one, so
// they are not allocated one by one. reset makes every chunk reusable;
// the chosen candidate leaves the arena by detach before that.
type candArena struct {
	cands [][]candidate
	ints  [][]int
	ci    int // chunk of cands being filled
	ii    int // chunk of ints being filled
}

// reset makes the arena's chunks free for the next decision.
func (a *candArena) reset() {
	for i := range a.cands {
		a.cands[i] = a.cands[i][:0]
	}
	for i := range a.ints {
		a.ints[i] = a.ints[i][:0]
	}
	a.ci, a.ii = 0, 0
}

// candidate returns a zeroed candidate.
func (a *candArena) candidate() *candidate {
	for a.ci < len(a.cands) && len(a.cands[a.ci]) == cap(a.cands[a.ci]) {
		a.ci++
	}
	if a.ci == len(a.cands) {
		a.cands = append(a.cands, make([]candidate, 0, arenaCandidates))
	}
	ch := a.cands[a.ci]
	ch = append(ch, candidate{})
	a.cands[a.ci] = ch
	return &ch[len(ch)-1]
}

// clone returns a copy of x (with no room to grow).
func (a *candArena) clone(x []int) []int {
	if len(x) > arenaInts {
		return slices.Clip(slices.Clone(x))
	}
	for a.ii < len(a.ints) && cap(a.ints[a.ii])-len(a.ints[a.ii]) < len(x) {
		a.ii++
	}
	if a.ii == len(a.ints) {
		a.ints = append(a.ints, make([]int, 0, arenaInts))
	}
	ch := a.ints[a.ii]
	at := len(ch)
	ch = append(ch, x...)
	a.ints[a.ii] = ch
	return ch[at:len(ch):len(ch)]
}

// detach returns a copy of the chosen candidate that owns its slices, so
// that it survives the arena's next reset (its node lists are listed).
func detach(c *Candidate) *Candidate {
	out := *c
	out.Active, out.Transit = slices.Clone(c.Active), slices.Clone(c.Transit)
	out.Rect = Rect{Start: slices.Clone(c.Rect.Start), Size: slices.Clone(c.Rect.Size)}
	return &out
}
