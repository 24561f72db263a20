package shmem

import (
	"context"
	"fmt"
	"slices"
)

// Team is an ordered subset of the PEs of a World (OpenSHMEM teams): team
// PE i is world PE WorldPE(i). Teams are made by splitting another team
// (TeamWorld is every PE); their collectives (Barrier, Sync, Broadcast,
// Reduce, Collect, FCollect, Alltoall) involve only the members and, like
// every collective, must be called in the same order by all of them.
type Team struct {
	w   *World
	pes []int // world PE of each team PE, ascending
	me  int   // this PE's number in the team
	tag uint32

	// Alg selects the algorithm of Broadcast and Reduce (AlgTree by
	// default); every member must use the same.
	Alg Algorithm
}

// Algorithm is how a team's Broadcast and Reduce move data.
type Algorithm uint8

const (
	// AlgTree is a binomial tree: ⌈log2 m⌉ rounds (Reduce: up the tree,
	// then Broadcast down).
	AlgTree Algorithm = iota
	// AlgLinear sends from (Reduce: gathers at) the root to every member
	// in turn: m − 1 messages in one round at the root.
	AlgLinear
)

func (a Algorithm) String() string {
	if a == AlgLinear {
		return "linear"
	}
	return "tree"
}

// TeamWorld is the team of every PE, numbered like the World.
func (w *World) TeamWorld() *Team { return w.newTeam(slices.Clone(w.all)) }

func (w *World) newTeam(pes []int) *Team {
	t := &Team{w: w, pes: pes, me: -1, tag: hashList(pes)}
	if i, ok := slices.BinarySearch(pes, w.me); ok {
		t.me = i
	}
	return t
}

// MyPE is this PE's number in the team (-1 for a nil team).
func (t *Team) MyPE() int {
	if t == nil {
		return -1
	}
	return t.me
}

// NPEs is the number of PEs in the team (0 for a nil team).
func (t *Team) NPEs() int {
	if t == nil {
		return 0
	}
	return len(t.pes)
}

// World is the World the team belongs to.
func (t *Team) World() *World { return t.w }

// WorldPE is the world PE number of team PE pe, or -1 if out of range.
func (t *Team) WorldPE(pe int) int {
	if t == nil || pe < 0 || pe >= len(t.pes) {
		return -1
	}
	return t.pes[pe]
}

// TranslatePE is the number in team dst of this team's PE pe, or -1 when
// that PE is not a member of dst (shmem_team_translate_pe).
func (t *Team) TranslatePE(pe int, dst *Team) int {
	wp := t.WorldPE(pe)
	if wp < 0 || dst == nil {
		return -1
	}
	if i, ok := slices.BinarySearch(dst.pes, wp); ok {
		return i
	}
	return -1
}

// SplitStrided makes the team of parent PEs start, start+stride, …
// (size of them): a collective over the parent team. Members get the new
// team; the other parent PEs get nil.
func (t *Team) SplitStrided(ctx context.Context, start, stride, size int) (*Team, error) {
	if err := t.ready("SplitStrided"); err != nil {
		return nil, err
	}
	m := len(t.pes)
	if size < 1 || stride < 1 || start < 0 || start >= m || (size-1) > (m-1-start)/stride {
		return nil, fmt.Errorf("shmem: SplitStrided(start %d, stride %d, size %d) leaves a team of %d PEs", start, stride, size, m)
	}
	pes := make([]int, size)
	for i := range pes {
		pes[i] = t.pes[start+i*stride]
	}
	if err := t.sync(ctx, kindTeam, hashList(pes)); err != nil {
		return nil, err
	}
	nt := t.w.newTeam(pes)
	if nt.me < 0 {
		return nil, nil
	}
	nt.Alg = t.Alg
	return nt, nil
}

// Split2D arranges the parent's PEs row by row in a grid xrange wide and
// returns this PE's row (x team: consecutive parent PEs) and column (y
// team: parent PEs xrange apart), shmem_team_split_2d. A collective over
// the parent team.
func (t *Team) Split2D(ctx context.Context, xrange int) (x, y *Team, err error) {
	if err := t.ready("Split2D"); err != nil {
		return nil, nil, err
	}
	m := len(t.pes)
	if xrange < 1 {
		return nil, nil, fmt.Errorf("shmem: Split2D: x range %d must be at least 1", xrange)
	}
	xrange = min(xrange, m)
	row, col := t.me/xrange, t.me%xrange
	var xs, ys []int
	for i := row * xrange; i < min(m, (row+1)*xrange); i++ {
		xs = append(xs, t.pes[i])
	}
	for i := col; i < m; i += xrange {
		ys = append(ys, t.pes[i])
	}
	if err := t.sync(ctx, kindTeam, uint32(xrange)); err != nil {
		return nil, nil, err
	}
	x, y = t.w.newTeam(xs), t.w.newTeam(ys)
	x.Alg, y.Alg = t.Alg, t.Alg
	return x, y, nil
}

// ready checks that the World works and this PE is a member.
func (t *Team) ready(op string) error {
	if t == nil {
		return fmt.Errorf("shmem: %s on a nil team", op)
	}
	if err := t.w.ok(); err != nil {
		return err
	}
	if t.me < 0 {
		return fmt.Errorf("shmem: %s: PE %d is not a member of the team", op, t.w.me)
	}
	return nil
}

// Barrier completes this PE's operations (Quiet) and waits until every
// member has called it: then everything the members issued before it is
// visible everywhere.
func (t *Team) Barrier(ctx context.Context) error {
	if err := t.ready("Barrier"); err != nil {
		return err
	}
	if err := t.w.Quiet(); err != nil {
		return err
	}
	return t.sync(ctx, kindBarrier, 0)
}

// Sync waits until every member has called it (shmem_team_sync); unlike
// Barrier it does not complete outstanding operations.
func (t *Team) Sync(ctx context.Context) error {
	if err := t.ready("Sync"); err != nil {
		return err
	}
	return t.sync(ctx, kindSync, 0)
}

// sync is the dissemination rounds over the members under collMu.
func (t *Team) sync(ctx context.Context, kind, extra uint32) error {
	t.w.collMu.Lock()
	defer t.w.collMu.Unlock()
	return t.w.dissemination(ctx, t.pes, tag(kind, t.tag^extra))
}
