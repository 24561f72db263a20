package sim

import (
	"fmt"
	"strings"
)

// DeadlockError reports packets that can never move again: a set of
// virtual channels whose front flits all wait, directly or through the
// channels they wait for, on each other.
type DeadlockError struct {
	Cycle    int64    // cycle at which the deadlock was detected
	Since    int64    // cycle since which the channels have not moved
	Blocked  int      // virtual channels in the deadlocked set
	Channels []string // one dependency cycle inside the set: "channel VC v" names
}

func (e *DeadlockError) Error() string {
	if len(e.Channels) == 0 {
		return fmt.Sprintf("deadlock: no flit has moved since cycle %d (detected at cycle %d) although flits are in the network", e.Since, e.Cycle)
	}
	return fmt.Sprintf("deadlock detected at cycle %d: %d virtual channels blocked since cycle %d, waiting in a cycle %s",
		e.Cycle, e.Blocked, e.Since, strings.Join(e.Channels, " → "))
}

// checkDeadlock looks for a set of stalled virtual channels closed under
// "waits for": every channel of the set waits only on channels of the set
// (for a head still choosing among options, all of its options are
// blocked by the set). Such a set can never drain.
func (c *Core) checkDeadlock() {
	t := c.now
	stalled, oldest := c.stalledVCs()
	if len(stalled) == 0 {
		return
	}
	in, targets := c.blockedSet(stalled)
	if len(in) == 0 {
		if c.inFlight() > 0 && t-c.lastMoveCycle > 4*c.dlWindow {
			c.deadlock = &DeadlockError{Cycle: t, Since: c.lastMoveCycle}
		}
		return
	}
	path := waitCycle(in, targets)
	names := make([]string, len(path))
	for i, iv := range path {
		names[i] = fmt.Sprintf("%s VC %d", c.portName(int(iv)/c.V), int(iv)%c.V)
	}
	c.deadlock = &DeadlockError{Cycle: t, Since: oldest, Blocked: len(in), Channels: names}
}

// stalledVCs lists the input VCs holding flits that have not moved for the
// deadlock window, and the oldest cycle one of them last moved.
func (c *Core) stalledVCs() (stalled []int32, oldest int64) {
	t := c.now
	oldest = t
	for iv := range c.bLen {
		if c.bLen[iv] > 0 && t-c.ivLast[iv] >= c.dlWindow {
			stalled = append(stalled, int32(iv))
			oldest = min(oldest, c.ivLast[iv])
		}
	}
	return stalled, oldest
}

// inFlight is the number of flits injected and not yet ejected.
func (c *Core) inFlight() int64 {
	var n int64
	for i := range c.workers {
		n += c.workers[i].st.injFlits - c.workers[i].st.ejFlits
	}
	return n
}

// blockedSet is the largest subset of the stalled VCs each of which waits
// only for members of the subset (a VC that may proceed leaves it, and
// so, in turn, do the VCs that wait for it), with every VC's wait targets.
func (c *Core) blockedSet(stalled []int32) (in map[int32]bool, targets map[int32][]int32) {
	in = make(map[int32]bool, len(stalled))
	for _, iv := range stalled {
		in[iv] = true
	}
	w := &c.workers[0]
	targets = make(map[int32][]int32, len(stalled))
	for _, iv := range stalled {
		tg, free := c.waitsFor(w, int(iv))
		if free {
			delete(in, iv)
			continue
		}
		targets[iv] = tg
	}
	for changed := true; changed; {
		changed = false
		for iv := range in {
			for _, x := range targets[iv] {
				if !in[x] {
					delete(in, iv)
					changed = true
					break
				}
			}
		}
	}
	return in, targets
}

// waitCycle walks one cycle of waits inside the blocked set, from its
// smallest member, always to the smallest blocked target.
func waitCycle(in map[int32]bool, targets map[int32][]int32) []int32 {
	start := int32(-1)
	for iv := range in {
		if start < 0 || iv < start {
			start = iv
		}
	}
	seen := map[int32]int{}
	var path []int32
	for x := start; ; {
		if k, ok := seen[x]; ok {
			return path[k:]
		}
		seen[x] = len(path)
		path = append(path, x)
		next := int32(-1)
		for _, y := range targets[x] {
			if in[y] && (next < 0 || y < next) {
				next = y
			}
		}
		x = next
	}
}

// waitsFor returns the input VCs the front flit of iv waits for; free is
// true if it is not blocked by any channel (it may move once arbitration
// or a pipeline lets it).
func (c *Core) waitsFor(w *worker, iv int) (targets []int32, free bool) {
	n := c.n
	V := c.V
	f := &c.buf[iv*c.B+int(c.bHead[iv])]
	r := int(n.gpNode[iv/V])
	if ovc := int(c.ivOut[iv]); ovc >= 0 {
		og := ovc / V
		if n.gpChan[og] < 0 || c.credit[ovc] >= 1 {
			return nil, true
		}
		return []int32{n.gpPeer[og]*int32(V) + int32(ovc%V)}, false
	}
	if f.seq != 0 {
		return nil, true
	}
	g := *f
	for _, cd := range c.route(w, r, &g) {
		for v := int(cd.lo); v < int(cd.hi); v++ {
			ovc := int(cd.gp)*V + v
			switch {
			case c.owner[ovc] >= 0:
				targets = append(targets, c.owner[ovc])
			case n.gpChan[cd.gp] < 0 || c.creditOK(ovc, &g, cd.enter):
				return nil, true
			default:
				targets = append(targets, n.gpPeer[cd.gp]*int32(V)+int32(v))
			}
		}
	}
	if len(targets) == 0 {
		return nil, true
	}
	return targets, false
}

// ConservationError reports flits or packets lost, duplicated or
// misdelivered.
type ConservationError struct{ Msg string }

func (e *ConservationError) Error() string { return "conservation violated: " + e.Msg }

// CheckConservation verifies that every flit injected is either ejected or
// still in a buffer or on a link, that every packet created is delivered,
// queued, being injected or has its tail in the network, and that no flit
// arrived out of order or at the wrong node.
func (c *Core) CheckConservation() error {
	var inj, ej, gen, deliv int64
	for i := range c.workers {
		st := &c.workers[i].st
		if len(st.errs) > 0 {
			return &ConservationError{Msg: st.errs[0]}
		}
		inj += st.injFlits
		ej += st.ejFlits
		gen += st.genPkts
		deliv += st.delivPkts
	}
	var inNet, tails int64
	B := int32(c.B)
	for iv := range c.bLen {
		l := c.bLen[iv]
		inNet += int64(l)
		for k := int32(0); k < l; k++ {
			pos := c.bHead[iv] + k
			if pos >= B {
				pos -= B
			}
			f := &c.buf[int32(iv)*B+pos]
			if f.seq == f.size-1 {
				tails++
			}
		}
	}
	for i, o := range c.lnk {
		if o&1 != 0 {
			inNet++
			if f := &c.link[i]; f.seq == f.size-1 {
				tails++
			}
		}
	}
	if inj-ej != inNet {
		return &ConservationError{Msg: fmt.Sprintf("%d flits injected, %d ejected, but %d in the network (expected %d)", inj, ej, inNet, inj-ej)}
	}
	var queued, injecting int64
	for i := range c.terms {
		tm := &c.terms[i]
		queued += int64(tm.ql)
		for _, s := range tm.inj {
			if s.active {
				injecting++
			}
		}
	}
	if gen != deliv+queued+injecting+tails {
		return &ConservationError{Msg: fmt.Sprintf("%d packets created but %d delivered + %d queued + %d being injected + %d in the network", gen, deliv, queued, injecting, tails)}
	}
	return nil
}
