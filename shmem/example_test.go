package shmem_test

import (
	"context"
	"fmt"

	"github.com/icn-hpc/icn/shmem"
)

// A job of 3 PEs inside this process: each PE puts its number into its
// right neighbour's co-array; after the barrier every PE reads what its
// left neighbour wrote. (Programs use shmem.Init under icn shmem run.)
func Example() {
	job, err := shmem.NewLocal(3, shmem.Options{Heap: 1 << 20})
	if err != nil {
		panic(err)
	}
	defer job.Close()
	got := make([]int64, 3)
	err = job.Run(func(w *shmem.World) error {
		a, err := shmem.NewCoarray[int64](w, 1)
		if err != nil {
			return err
		}
		if err := a.PutValue((w.MyPE()+1)%w.NPEs(), 0, int64(100+w.MyPE())); err != nil {
			return err
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		got[w.MyPE()] = a.Local()[0]
		return nil
	})
	fmt.Println(got, err)
	// Output: [102 100 101] <nil>
}

// Reduce sums a vector over a team: every member gets the total.
func ExampleReduce() {
	job, err := shmem.NewLocal(4, shmem.Options{Heap: 1 << 20})
	if err != nil {
		panic(err)
	}
	defer job.Close()
	sums := make([][]int64, 4)
	err = job.Run(func(w *shmem.World) error {
		src, err := shmem.NewCoarray[int64](w, 2)
		if err != nil {
			return err
		}
		dst, err := shmem.NewCoarray[int64](w, 2)
		if err != nil {
			return err
		}
		src.Local()[0], src.Local()[1] = int64(w.MyPE()), 1
		if err := shmem.Reduce(context.Background(), w.TeamWorld(), dst, src, 2, shmem.ReduceSum); err != nil {
			return err
		}
		sums[w.MyPE()] = append([]int64(nil), dst.Local()...)
		return nil
	})
	fmt.Println(sums, err)
	// Output: [[6 4] [6 4] [6 4] [6 4]] <nil>
}
