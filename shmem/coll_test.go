package shmem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// teamsOf returns the teams a test runs collectives over: the world, the
// even PEs (a strided split) and this PE's row of a 2-wide grid.
func teamsOf(ctx context.Context, w *World) ([]*Team, error) {
	world := w.TeamWorld()
	n := w.NPEs()
	even, err := world.SplitStrided(ctx, 0, 2, (n+1)/2)
	if err != nil {
		return nil, err
	}
	if (even != nil) != (w.MyPE()%2 == 0) {
		return nil, fmt.Errorf("PE %d: membership of the even team wrong", w.MyPE())
	}
	x, y, err := world.Split2D(ctx, 2)
	if err != nil {
		return nil, err
	}
	if err := checkTeam(world, x, 2, 1); err != nil {
		return nil, err
	}
	if err := checkTeam(world, y, 2, 2); err != nil {
		return nil, err
	}
	teams := []*Team{world, x}
	if even != nil {
		if err := checkTeam(world, even, 2, 2); err != nil {
			return nil, err
		}
		teams = append(teams, even)
	}
	return teams, nil
}

// checkTeam compares a team made from parent with the sequential answer:
// member i of the team is parent PE base+i·step, where base is this PE's
// row start (x teams of width xw, step 1) or column (y teams, step xw).
func checkTeam(parent, t *Team, xw, kind int) error {
	me := parent.MyPE()
	var want []int
	switch kind {
	case 1: // row
		for i := me / xw * xw; i < min(parent.NPEs(), (me/xw+1)*xw); i++ {
			want = append(want, i)
		}
	case 2: // column (or every second PE from 0)
		for i := me % xw; i < parent.NPEs(); i += xw {
			want = append(want, i)
		}
	}
	got := make([]int, t.NPEs())
	for i := range got {
		got[i] = t.TranslatePE(i, parent)
		if back := parent.TranslatePE(got[i], t); back != i {
			return fmt.Errorf("PE %d: translation of team PE %d is not reversible (%d)", me, i, back)
		}
	}
	if !slices.Equal(got, want) || t.WorldPE(t.MyPE()) != parent.WorldPE(me) {
		return fmt.Errorf("PE %d: team %v, want %v", me, got, want)
	}
	return nil
}

func TestTeamsAndCollectives(t *testing.T) {
	forJobs(t, func(w *World) error {
		ctx := context.Background()
		teams, err := teamsOf(ctx, w)
		if err != nil {
			return err
		}
		n := w.NPEs()
		const k = 5
		src, err := NewCoarray[int64](w, k*n)
		if err != nil {
			return err
		}
		dst, err := NewCoarray[int64](w, k*n)
		if err != nil {
			return err
		}
		fsrc, err := NewCoarray[float64](w, k)
		if err != nil {
			return err
		}
		fdst, err := NewCoarray[float64](w, k)
		if err != nil {
			return err
		}
		// every team's collectives run one after the other on all PEs: a PE
		// outside a team skips it (teams only involve their members)
		for ti := 0; ti < 3; ti++ {
			var tm *Team
			if ti < len(teams) {
				tm = teams[ti]
			}
			if ti == 2 && w.MyPE()%2 != 0 {
				continue
			}
			for _, alg := range []Algorithm{AlgTree, AlgLinear} {
				tm.Alg = alg
				if err := collectives(ctx, tm, src, dst, fsrc, fdst, k); err != nil {
					return fmt.Errorf("team %d (%v) %s: %w", ti, tm.pes, alg, err)
				}
			}
		}
		return w.BarrierAll()
	})
}

// collectives checks every collective on team tm against its sequential
// answer computed from pattern.
func collectives(ctx context.Context, tm *Team, src, dst *Coarray[int64], fsrc, fdst *Coarray[float64], k int) error {
	me, m := tm.MyPE(), tm.NPEs()
	val := func(p, r, j int) int64 { return pattern(p, r, j) % 1000 }
	fill := func(r int) {
		loc := src.Local()
		for j := range loc {
			loc[j] = val(me, r, j)
		}
		for j := range fsrc.Local() {
			fsrc.Local()[j] = float64(val(me, r, j)%7) + 0.5
		}
	}
	for root := 0; root < m; root++ {
		fill(root)
		if err := Broadcast(ctx, tm, dst, src, k, root); err != nil {
			return err
		}
		for j := 0; j < k; j++ {
			if got := dst.Local()[j]; got != val(root, root, j) {
				return fmt.Errorf("Broadcast from %d: element %d = %d, want %d", root, j, got, val(root, root, j))
			}
		}
	}
	for op := ReduceSum; op <= ReduceXor; op++ {
		fill(int(op))
		if err := Reduce(ctx, tm, dst, src, k, op); err != nil {
			return err
		}
		for j := 0; j < k; j++ {
			want := val(0, int(op), j)
			for p := 1; p < m; p++ {
				want = seqReduce(op, want, val(p, int(op), j))
			}
			if got := dst.Local()[j]; got != want {
				return fmt.Errorf("Reduce %s: element %d = %d, want %d", op, j, got, want)
			}
		}
		if op <= ReduceMax {
			if err := Reduce(ctx, tm, fdst, fsrc, k, op); err != nil {
				return err
			}
			for j := 0; j < k; j++ {
				want := float64(val(0, int(op), j)%7) + 0.5
				for p := 1; p < m; p++ {
					want = seqReduce(op, want, float64(val(p, int(op), j)%7)+0.5)
				}
				if got := fdst.Local()[j]; got != want {
					return fmt.Errorf("float Reduce %s: element %d = %g, want %g", op, j, got, want)
				}
			}
		}
	}
	if err := Reduce(ctx, tm, fdst, fsrc, k, ReduceXor); err == nil {
		return errors.New("xor of floats accepted")
	}
	fill(20)
	if err := FCollect(ctx, tm, dst, src, k); err != nil {
		return err
	}
	for p := 0; p < m; p++ {
		for j := 0; j < k; j++ {
			if got := dst.Local()[p*k+j]; got != val(p, 20, j) {
				return fmt.Errorf("FCollect: block %d element %d = %d, want %d", p, j, got, val(p, 20, j))
			}
		}
	}
	fill(21)
	total, err := Collect(ctx, tm, dst, src, me%3+1)
	if err != nil {
		return err
	}
	var want []int64
	for p := 0; p < m; p++ {
		for j := 0; j < p%3+1; j++ {
			want = append(want, val(p, 21, j))
		}
	}
	if total != len(want) || !slices.Equal(dst.Local()[:total], want) {
		return fmt.Errorf("Collect: %v, want %v", dst.Local()[:total], want)
	}
	fill(22)
	const b = 1
	if err := Alltoall(ctx, tm, dst, src, b); err != nil {
		return err
	}
	for p := 0; p < m; p++ {
		if got := dst.Local()[p*b]; got != val(p, 22, me*b) {
			return fmt.Errorf("Alltoall: block from %d = %d, want %d", p, got, val(p, 22, me*b))
		}
	}
	if err := tm.Sync(ctx); err != nil {
		return err
	}
	return tm.Barrier(ctx)
}

// seqReduce is the sequential answer, written independently of combine.
func seqReduce[T int64 | float64](op ReduceOp, a, b T) T {
	switch op {
	case ReduceSum:
		return a + b
	case ReduceProd:
		return a * b
	case ReduceMin:
		if b < a {
			return b
		}
		return a
	case ReduceMax:
		if b > a {
			return b
		}
		return a
	}
	x, y := any(a).(int64), any(b).(int64)
	switch op {
	case ReduceAnd:
		return T(x & y)
	case ReduceOr:
		return T(x | y)
	}
	return T(x ^ y)
}

// TestCollectiveBadInput: misuse returns errors and never writes memory or
// hangs (every PE makes the same mistake).
func TestCollectiveBadInput(t *testing.T) {
	j := localJob(t, 2, TransportShm)
	err := j.Run(func(w *World) error {
		ctx := context.Background()
		c, err := NewCoarray[int64](w, 4)
		if err != nil {
			return err
		}
		tm := w.TeamWorld()
		var nilTeam *Team
		for name, err := range map[string]error{
			"nil team":        Broadcast(ctx, nilTeam, c, c, 1, 0),
			"root":            Broadcast(ctx, tm, c, c, 1, 2),
			"too long":        Broadcast(ctx, tm, c, c, 5, 0),
			"negative":        Reduce(ctx, tm, c, c, -1, ReduceSum),
			"unknown op":      Reduce(ctx, tm, c, c, 1, 99),
			"fcollect fits":   FCollect(ctx, tm, c, c, 3),
			"alltoall fits":   Alltoall(ctx, tm, c, c, 3),
			"nil destination": FCollect(ctx, tm, nil, c, 1),
			"split stride":    func() error { _, err := tm.SplitStrided(ctx, 0, 0, 1); return err }(),
			"split size":      func() error { _, err := tm.SplitStrided(ctx, 1, 1, 2); return err }(),
			"split 2D":        func() error { _, _, err := tm.Split2D(ctx, 0); return err }(),
		} {
			if err == nil {
				return fmt.Errorf("%s accepted", name)
			}
		}
		if nilTeam.NPEs() != 0 || nilTeam.MyPE() != -1 || tm.TranslatePE(0, nil) != -1 || tm.WorldPE(5) != -1 {
			return errors.New("nil team or out-of-range PE not reported")
		}
		return w.BarrierAll()
	})
	if err != nil {
		t.Fatal(err)
	}
}
