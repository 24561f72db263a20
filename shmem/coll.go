package shmem

import (
	"context"
	"fmt"
)

// The team collectives move data between co-arrays: every member passes
// the same (symmetric) dst and src co-arrays and counts. Each call starts
// with a synchronisation of the members (so a member's dst may be
// overwritten once all have entered: read the result of one collective
// before calling the next), moves the data with puts or gets, and signals
// each receiver after its data (per-pair signal words, tagged with the
// collective and the team so that mismatched calls are reported). It
// returns on a member when that member's dst holds its result.

// Number is the element types of reductions: integers and floats.
type Number interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~int | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uint |
		~uintptr | ~float32 | ~float64
}

// ReduceOp is the operation of Reduce.
type ReduceOp uint8

// Reductions (OpenSHMEM's sum, prod, min, max, and, or, xor reductions).
const (
	ReduceSum ReduceOp = iota + 1
	ReduceProd
	ReduceMin
	ReduceMax
	ReduceAnd
	ReduceOr
	ReduceXor
)

func (op ReduceOp) String() string {
	names := [...]string{"", "sum", "prod", "min", "max", "and", "or", "xor"}
	if int(op) < len(names) {
		return names[op]
	}
	return fmt.Sprintf("ReduceOp(%d)", int(op))
}

// begin checks a collective's arguments, takes the World's collective
// lock and synchronises the members. The caller must call t.w.collMu.Unlock.
func (t *Team) begin(ctx context.Context, op string, kind uint32, checks ...error) (uint32, error) {
	if err := t.ready(op); err != nil {
		return 0, err
	}
	for _, err := range checks {
		if err != nil {
			return 0, fmt.Errorf("shmem: %s: %w", op, err)
		}
	}
	t.w.collMu.Lock()
	tg := tag(kind, t.tag)
	if err := t.w.dissemination(ctx, t.pes, tg); err != nil {
		t.w.collMu.Unlock()
		return 0, err
	}
	return tg, nil
}

func checkLen[T Elem](name string, c *Coarray[T], n int) error {
	if c == nil || c.s == nil {
		return fmt.Errorf("nil %s co-array", name)
	}
	if n < 0 || n > c.n {
		return fmt.Errorf("%d elements do not fit the %s co-array of %d", n, name, c.n)
	}
	return nil
}

func checkRoot(root, m int) error {
	if root < 0 || root >= m {
		return fmt.Errorf("root %d outside a team of %d PEs", root, m)
	}
	return nil
}

// Broadcast copies root's src[0:n] into dst[0:n] of every member (root
// included), shmem_broadcast; root is a team PE number.
func Broadcast[T Elem](ctx context.Context, t *Team, dst, src *Coarray[T], n, root int) error {
	tg, err := t.begin(ctx, "Broadcast", kindBroadcast, checkLen("destination", dst, n), checkLen("source", src, n), checkRoot(root, t.NPEs()))
	if err != nil {
		return err
	}
	defer t.w.collMu.Unlock()
	if t.me == root {
		copy(dst.Local()[:n], src.Local()[:n])
	}
	return broadcastFrom(ctx, t, dst, n, root, tg)
}

// broadcastFrom sends root's dst[0:n] to the other members (collMu held).
func broadcastFrom[T Elem](ctx context.Context, t *Team, dst *Coarray[T], n, root int, tg uint32) error {
	m := len(t.pes)
	r := (t.me - root + m) % m // rank relative to the root
	send := func(rel int) error {
		pe := t.pes[(rel+root)%m]
		if err := dst.Put(pe, 0, dst.Local()[:n]); err != nil {
			return err
		}
		return t.w.notify(pe, tg)
	}
	if t.Alg == AlgLinear {
		if r != 0 {
			return t.w.await(ctx, t.pes[root], tg)
		}
		for rel := 1; rel < m; rel++ {
			if err := send(rel); err != nil {
				return err
			}
		}
		return nil
	}
	for mask := 1; mask < m; mask <<= 1 {
		switch {
		case r < mask && r+mask < m:
			if err := send(r + mask); err != nil {
				return err
			}
		case r >= mask && r < 2*mask:
			if err := t.w.await(ctx, t.pes[(r-mask+root)%m], tg); err != nil {
				return err
			}
		}
	}
	return nil
}

// Reduce combines src[0:n] of every member element by element with op and
// leaves the result in dst[0:n] of every member (shmem_*_reduce; an
// all-reduce). Bitwise operations need integer elements.
func Reduce[T Number](ctx context.Context, t *Team, dst, src *Coarray[T], n int, op ReduceOp) error {
	var opErr error
	switch {
	case op < ReduceSum || op > ReduceXor:
		opErr = fmt.Errorf("unknown reduction %d", op)
	case op >= ReduceAnd && isFloat[T]():
		opErr = fmt.Errorf("%s reduction of floating-point elements", op)
	}
	tg, err := t.begin(ctx, "Reduce", kindReduce, opErr, checkLen("destination", dst, n), checkLen("source", src, n))
	if err != nil {
		return err
	}
	defer t.w.collMu.Unlock()
	acc := dst.Local()[:n]
	copy(acc, src.Local()[:n])
	if err := gatherReduce(ctx, t, dst, n, op, tg); err != nil {
		return err
	}
	return broadcastFrom(ctx, t, dst, n, 0, tg)
}

// gatherReduce leaves the reduction of every member's dst[0:n] in team PE
// 0's dst: up a binomial tree (a parent gets each child's partial result
// once the child signals it), or every member straight to PE 0 (linear).
func gatherReduce[T Number](ctx context.Context, t *Team, dst *Coarray[T], n int, op ReduceOp, tg uint32) error {
	m := len(t.pes)
	acc := dst.Local()[:n]
	tmp := make([]T, n)
	take := func(child int) error {
		if err := t.w.await(ctx, t.pes[child], tg); err != nil {
			return err
		}
		if err := dst.Get(t.pes[child], 0, tmp); err != nil {
			return err
		}
		combine(op, acc, tmp)
		return nil
	}
	if t.Alg == AlgLinear {
		if t.me != 0 {
			return t.w.notify(t.pes[0], tg)
		}
		for child := 1; child < m; child++ {
			if err := take(child); err != nil {
				return err
			}
		}
		return nil
	}
	for mask := 1; mask < m; mask <<= 1 {
		if t.me&mask != 0 {
			return t.w.notify(t.pes[t.me-mask], tg)
		}
		if t.me+mask < m {
			if err := take(t.me + mask); err != nil {
				return err
			}
		}
	}
	return nil
}

func isFloat[T Number]() bool {
	var z T
	z = 1
	z /= 2
	return z != 0
}

// combine folds b into a with op.
func combine[T Number](op ReduceOp, a, b []T) {
	switch op {
	case ReduceSum:
		for i := range a {
			a[i] += b[i]
		}
	case ReduceProd:
		for i := range a {
			a[i] *= b[i]
		}
	case ReduceMin:
		for i := range a {
			a[i] = min(a[i], b[i])
		}
	case ReduceMax:
		for i := range a {
			a[i] = max(a[i], b[i])
		}
	default:
		for i := range a {
			a[i] = fromBitsN[T](bitOp(op, toBitsN(a[i]), toBitsN(b[i])))
		}
	}
}

func bitOp(op ReduceOp, x, y uint64) uint64 {
	switch op {
	case ReduceAnd:
		return x & y
	case ReduceOr:
		return x | y
	}
	return x ^ y
}

// FCollect concatenates every member's src[0:n] in team order into dst
// (n·NPEs elements) of every member, shmem_fcollect.
func FCollect[T Elem](ctx context.Context, t *Team, dst, src *Coarray[T], n int) error {
	m := t.NPEs()
	var big error
	if n > 0 && dst != nil && n*m > dst.Len() {
		big = fmt.Errorf("%d PEs × %d elements do not fit the destination of %d", m, n, dst.Len())
	}
	tg, err := t.begin(ctx, "FCollect", kindFCollect, big, checkLen("source", src, n), checkLen("destination", dst, 0))
	if err != nil {
		return err
	}
	defer t.w.collMu.Unlock()
	return exchange(ctx, t, tg, func(j int) error {
		return dst.Put(t.pes[j], t.me*n, src.Local()[:n])
	})
}

// Collect concatenates every member's src[0:n] (n may differ between
// members) in team order into dst of every member, shmem_collect, and
// returns the number of elements collected.
func Collect[T Elem](ctx context.Context, t *Team, dst, src *Coarray[T], n int) (int, error) {
	tg, err := t.begin(ctx, "Collect", kindCollect, checkLen("source", src, n), checkLen("destination", dst, 0))
	if err != nil {
		return 0, err
	}
	defer t.w.collMu.Unlock()
	w := t.w
	err = exchange(ctx, t, tg, func(j int) error {
		return w.tr.PutWord(t.pes[j], w.lay.cntSlot(w.me), uint64(n))
	})
	if err != nil {
		return 0, err
	}
	off, total := 0, 0
	for i, pe := range t.pes {
		c := int(atomicLoad(w.local, w.lay.cntSlot(pe)))
		if i < t.me {
			off += c
		}
		total += c
	}
	if total > dst.Len() {
		return 0, fmt.Errorf("shmem: Collect: %d elements do not fit the destination of %d", total, dst.Len())
	}
	err = exchange(ctx, t, tg, func(j int) error {
		return dst.Put(t.pes[j], off, src.Local()[:n])
	})
	return total, err
}

// Alltoall sends block j of every member's src (elements [j·n, (j+1)·n))
// to member j, where it lands as block i of dst for sender i,
// shmem_alltoall.
func Alltoall[T Elem](ctx context.Context, t *Team, dst, src *Coarray[T], n int) error {
	m := t.NPEs()
	var big error
	if n > 0 && (dst == nil || src == nil || n*m > dst.Len() || n*m > src.Len()) {
		big = fmt.Errorf("%d PEs × %d elements do not fit the co-arrays", m, n)
	}
	tg, err := t.begin(ctx, "Alltoall", kindAlltoall, big, checkLen("source", src, 0), checkLen("destination", dst, 0))
	if err != nil {
		return err
	}
	defer t.w.collMu.Unlock()
	return exchange(ctx, t, tg, func(j int) error {
		return dst.Put(t.pes[j], t.me*n, src.Local()[j*n:(j+1)*n])
	})
}

// exchange runs one all-to-all round: send(j) for every member j, starting
// with the right neighbour so that not every member writes to the same PE
// at once, a signal after each, then the signal of every other member.
func exchange(ctx context.Context, t *Team, tg uint32, send func(j int) error) error {
	m := len(t.pes)
	for k := 0; k < m; k++ {
		j := (t.me + k) % m
		if err := send(j); err != nil {
			return err
		}
		if j != t.me {
			if err := t.w.notify(t.pes[j], tg); err != nil {
				return err
			}
		}
	}
	for k := 1; k < m; k++ {
		if err := t.w.await(ctx, t.pes[(t.me-k+m)%m], tg); err != nil {
			return err
		}
	}
	return nil
}
