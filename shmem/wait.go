package shmem

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Cmp is the comparison of the waits and tests.
type Cmp uint8

// Comparisons (OpenSHMEM's SHMEM_CMP_*).
const (
	CmpEQ Cmp = iota + 1
	CmpNE
	CmpGT
	CmpGE
	CmpLT
	CmpLE
)

func (c Cmp) valid() bool { return c >= CmpEQ && c <= CmpLE }

func compare[T Word](c Cmp, x, v T) bool {
	switch c {
	case CmpEQ:
		return x == v
	case CmpNE:
		return x != v
	case CmpGT:
		return x > v
	case CmpGE:
		return x >= v
	case CmpLT:
		return x < v
	case CmpLE:
		return x <= v
	}
	return false
}

// WaitUntil blocks until the 64-bit word at aligned byte offset off of this
// PE's part satisfies (word cmp v), compared as unsigned. Data put by a PE
// before (Fence) the put that satisfied the wait is visible when it
// returns. It returns an error instead if the World fails meanwhile.
func (s *Sym) WaitUntil(off int, cmp Cmp, v uint64) error {
	if s == nil {
		return errors.New("shmem: WaitUntil on a nil co-array")
	}
	if err := s.checkWord("WaitUntil", s.w.me, off); err != nil {
		return err
	}
	if !cmp.valid() {
		return fmt.Errorf("shmem: WaitUntil: unknown comparison %d", cmp)
	}
	loc := elemsOf[uint64](s.Local())
	return s.w.waitLocal(func() (bool, error) {
		return compare(cmp, AtomicLoadLocal(&loc[off/8]), v), nil
	})
}

// WaitUntil blocks until element i of this PE's part satisfies
// (element cmp v), compared in T's order (signed for signed types). It is
// WaitUntilCtx without a deadline.
func WaitUntil[T Word](c *Coarray[T], i int, cmp Cmp, v T) error {
	return WaitUntilCtx(context.Background(), c, i, cmp, v)
}

// WaitUntilCtx is WaitUntil that gives up when ctx is done.
func WaitUntilCtx[T Word](ctx context.Context, c *Coarray[T], i int, cmp Cmp, v T) error {
	return WaitUntilAll(ctx, c, []int{i}, cmp, v)
}

// waitSet is the validated input of the wait and test family: the local
// part, the indices to watch and the value each is compared with.
type waitSet[T Word] struct {
	loc  []T
	idx  []int
	vals []T
	cmp  Cmp
}

// newWaitSet checks a wait over indices idx (nil: every element) with one
// value v or, when vals is not nil, one value per watched index.
func newWaitSet[T Word](name string, c *Coarray[T], idx []int, cmp Cmp, v T, vals []T) (*waitSet[T], error) {
	if c == nil || c.s == nil {
		return nil, fmt.Errorf("shmem: %s on a nil co-array", name)
	}
	if err := c.s.w.ok(); err != nil {
		return nil, err
	}
	if !cmp.valid() {
		return nil, fmt.Errorf("shmem: %s: unknown comparison %d", name, cmp)
	}
	if idx == nil {
		idx = make([]int, c.n)
		for i := range idx {
			idx[i] = i
		}
	}
	for _, i := range idx {
		if i < 0 || i >= c.n {
			return nil, fmt.Errorf("shmem: %s: index %d outside a co-array of %d elements", name, i, c.n)
		}
	}
	if vals != nil && len(vals) != len(idx) {
		return nil, fmt.Errorf("shmem: %s: %d values for %d indices", name, len(vals), len(idx))
	}
	if vals == nil {
		vals = make([]T, len(idx))
		for k := range vals {
			vals[k] = v
		}
	}
	return &waitSet[T]{loc: c.Local(), idx: idx, vals: vals, cmp: cmp}, nil
}

// holds reports whether watched entry k satisfies the comparison.
func (s *waitSet[T]) holds(k int) bool {
	return compare(s.cmp, AtomicLoadLocal(&s.loc[s.idx[k]]), s.vals[k])
}

// satisfied lists the watched indices whose comparison holds.
func (s *waitSet[T]) satisfied() []int {
	var out []int
	for k := range s.idx {
		if s.holds(k) {
			out = append(out, s.idx[k])
		}
	}
	return out
}

// WaitUntilAll blocks until every element of this PE's part named in idx
// (nil: all) satisfies (element cmp v); with an empty idx it returns at once.
func WaitUntilAll[T Word](ctx context.Context, c *Coarray[T], idx []int, cmp Cmp, v T) error {
	s, err := newWaitSet("WaitUntilAll", c, idx, cmp, v, nil)
	if err != nil {
		return err
	}
	return s.waitAll(ctx, c.s.w)
}

func (s *waitSet[T]) waitAll(ctx context.Context, w *World) error {
	k := 0
	return w.waitCtx(ctx, func() (bool, error) {
		for k < len(s.idx) && s.holds(k) {
			k++ // a satisfied entry stays counted: the writers' order is theirs
		}
		return k == len(s.idx), nil
	})
}

// WaitUntilAny blocks until some element named in idx (nil: all) satisfies
// (element cmp v) and returns its index; -1 at once for an empty idx.
func WaitUntilAny[T Word](ctx context.Context, c *Coarray[T], idx []int, cmp Cmp, v T) (int, error) {
	s, err := newWaitSet("WaitUntilAny", c, idx, cmp, v, nil)
	if err != nil {
		return -1, err
	}
	return s.waitAny(ctx, c.s.w)
}

func (s *waitSet[T]) waitAny(ctx context.Context, w *World) (int, error) {
	if len(s.idx) == 0 {
		return -1, nil
	}
	found := -1
	err := w.waitCtx(ctx, func() (bool, error) {
		for k := range s.idx {
			if s.holds(k) {
				found = s.idx[k]
				return true, nil
			}
		}
		return false, nil
	})
	return found, err
}

// WaitUntilSome blocks until at least one element named in idx (nil: all)
// satisfies (element cmp v) and returns every index that does.
func WaitUntilSome[T Word](ctx context.Context, c *Coarray[T], idx []int, cmp Cmp, v T) ([]int, error) {
	s, err := newWaitSet("WaitUntilSome", c, idx, cmp, v, nil)
	if err != nil {
		return nil, err
	}
	return s.waitSome(ctx, c.s.w)
}

func (s *waitSet[T]) waitSome(ctx context.Context, w *World) ([]int, error) {
	if len(s.idx) == 0 {
		return nil, nil
	}
	var got []int
	err := w.waitCtx(ctx, func() (bool, error) {
		got = s.satisfied()
		return len(got) > 0, nil
	})
	return got, err
}

// WaitUntilAllVector, WaitUntilAnyVector and WaitUntilSomeVector compare
// each element named in idx (nil: all) with its own value vals[k].
func WaitUntilAllVector[T Word](ctx context.Context, c *Coarray[T], idx []int, cmp Cmp, vals []T) error {
	s, err := newWaitSet("WaitUntilAllVector", c, idx, cmp, 0, nonNil(vals))
	if err != nil {
		return err
	}
	return s.waitAll(ctx, c.s.w)
}

// WaitUntilAnyVector: see WaitUntilAllVector.
func WaitUntilAnyVector[T Word](ctx context.Context, c *Coarray[T], idx []int, cmp Cmp, vals []T) (int, error) {
	s, err := newWaitSet("WaitUntilAnyVector", c, idx, cmp, 0, nonNil(vals))
	if err != nil {
		return -1, err
	}
	return s.waitAny(ctx, c.s.w)
}

// WaitUntilSomeVector: see WaitUntilAllVector.
func WaitUntilSomeVector[T Word](ctx context.Context, c *Coarray[T], idx []int, cmp Cmp, vals []T) ([]int, error) {
	s, err := newWaitSet("WaitUntilSomeVector", c, idx, cmp, 0, nonNil(vals))
	if err != nil {
		return nil, err
	}
	return s.waitSome(ctx, c.s.w)
}

func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// Test reports whether element i of this PE's part satisfies (element cmp
// v) now, without waiting.
func Test[T Word](c *Coarray[T], i int, cmp Cmp, v T) (bool, error) {
	s, err := newWaitSet("Test", c, []int{i}, cmp, v, nil)
	if err != nil {
		return false, err
	}
	return s.holds(0), nil
}

// TestAll reports whether every element named in idx (nil: all) satisfies
// (element cmp v) now.
func TestAll[T Word](c *Coarray[T], idx []int, cmp Cmp, v T) (bool, error) {
	s, err := newWaitSet("TestAll", c, idx, cmp, v, nil)
	if err != nil {
		return false, err
	}
	return len(s.satisfied()) == len(s.idx), nil
}

// TestAny returns an index named in idx (nil: all) whose element satisfies
// (element cmp v) now, or -1.
func TestAny[T Word](c *Coarray[T], idx []int, cmp Cmp, v T) (int, error) {
	s, err := newWaitSet("TestAny", c, idx, cmp, v, nil)
	if err != nil {
		return -1, err
	}
	if got := s.satisfied(); len(got) > 0 {
		return got[0], nil
	}
	return -1, nil
}

// TestSome returns every index named in idx (nil: all) whose element
// satisfies (element cmp v) now.
func TestSome[T Word](c *Coarray[T], idx []int, cmp Cmp, v T) ([]int, error) {
	s, err := newWaitSet("TestSome", c, idx, cmp, v, nil)
	if err != nil {
		return nil, err
	}
	return s.satisfied(), nil
}

// TestAllVector, TestAnyVector and TestSomeVector are the tests with one
// value per watched element.
func TestAllVector[T Word](c *Coarray[T], idx []int, cmp Cmp, vals []T) (bool, error) {
	s, err := newWaitSet("TestAllVector", c, idx, cmp, 0, nonNil(vals))
	if err != nil {
		return false, err
	}
	return len(s.satisfied()) == len(s.idx), nil
}

// TestAnyVector: see TestAllVector.
func TestAnyVector[T Word](c *Coarray[T], idx []int, cmp Cmp, vals []T) (int, error) {
	s, err := newWaitSet("TestAnyVector", c, idx, cmp, 0, nonNil(vals))
	if err != nil {
		return -1, err
	}
	if got := s.satisfied(); len(got) > 0 {
		return got[0], nil
	}
	return -1, nil
}

// TestSomeVector: see TestAllVector.
func TestSomeVector[T Word](c *Coarray[T], idx []int, cmp Cmp, vals []T) ([]int, error) {
	s, err := newWaitSet("TestSomeVector", c, idx, cmp, 0, nonNil(vals))
	if err != nil {
		return nil, err
	}
	return slices.Clip(s.satisfied()), nil
}
