// Command scatter is a shmem example and the seed's motivating workload:
// scattering many small updates to random places in a distributed array,
// one single-word put each, followed by one barrier; checked against the
// sequential scatter. Run it with: icn shmem run -n 4 scatter -n 1000000
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/icn-hpc/icn/shmem"
	"github.com/icn-hpc/icn/shmem/examples/kernels"
)

func main() {
	n := flag.Int("n", 1<<20, "global array length (words)")
	seed := flag.Uint64("seed", 1, "random seed of the permutation")
	flag.Parse()
	if err := run(*n, *seed); err != nil {
		fmt.Fprintf(os.Stderr, "scatter: PE %d: %v\n", shmem.MyPE(), err)
		os.Exit(1)
	}
}

func run(n int, seed uint64) error {
	if err := shmem.Init(); err != nil {
		return err
	}
	w := shmem.Default()
	t0 := time.Now()
	puts, err := kernels.Scatter(w, n, seed)
	if err != nil {
		return err
	}
	el := time.Since(t0)
	if w.MyPE() == 0 {
		fmt.Printf("scatter ok: %d words, %d PEs (%s), matches the sequential scatter, %v (%d single-word puts on PE 0)\n",
			n, w.NPEs(), w.TransportName(), el.Round(time.Microsecond), puts)
	}
	return shmem.Finalize()
}
