package shmem_test

import (
	"fmt"

	"github.com/icn-hpc/icn/shmem"
)

// Three PEs in one process (the shm transport) each put their rank into
// slot me of the right neighbour's co-array; after a barrier every PE reads
// what its left neighbour wrote. Programs do the same under
// `icn shmem run -n 3 PROG` with shmem.Init instead of NewLocal.
func Example() {
	job, err := shmem.NewLocal(3, shmem.Options{Transport: shmem.TransportShm, Heap: 1 << 20})
	if err != nil {
		panic(err)
	}
	defer job.Close()
	got := make([]int64, 3)
	err = job.Run(func(w *shmem.World) error {
		c, err := shmem.NewCoarray[int64](w, 3)
		if err != nil {
			return err
		}
		me, n := w.MyPE(), w.NPEs()
		if err := c.PutValue((me+1)%n, me, int64(100+me)); err != nil {
			return err
		}
		if err := w.BarrierAll(); err != nil {
			return err
		}
		got[me] = c.Local()[(me+n-1)%n]
		return nil
	})
	if err != nil {
		panic(err)
	}
	if err := job.Finalize(); err != nil {
		panic(err)
	}
	fmt.Println(got)
	// Output: [102 100 101]
}
