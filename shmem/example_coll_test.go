package shmem_test

import (
	"context"
	"fmt"

	"github.com/icn-hpc/icn/shmem"
)

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
