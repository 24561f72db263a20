// Command histogram is a shmem example: every PE counts random keys into a
// histogram distributed over all PEs with remote atomic adds, checked
// against the sequential histogram. Run it with:
// icn shmem run -n 4 histogram -keys 100000
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
	bins := flag.Int("bins", 1000, "number of bins")
	keys := flag.Int("keys", 100000, "keys per PE")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if err := run(*bins, *keys, *seed); err != nil {
		fmt.Fprintf(os.Stderr, "histogram: PE %d: %v\n", shmem.MyPE(), err)
		os.Exit(1)
	}
}

func run(bins, keys int, seed uint64) error {
	if bins < 1 || keys < 0 {
		return fmt.Errorf("need -bins >= 1 and -keys >= 0")
	}
	if err := shmem.Init(); err != nil {
		return err
	}
	w := shmem.Default()
	t0 := time.Now()
	n, err := kernels.Histogram(w, bins, keys, seed)
	if err != nil {
		return err
	}
	el := time.Since(t0)
	if w.MyPE() == 0 {
		fmt.Printf("histogram ok: %d bins, %d keys per PE, %d PEs (%s), matches the sequential histogram, %v (%.3g atomic adds/s per PE incl. verification)\n",
			bins, keys, w.NPEs(), w.TransportName(), el.Round(time.Microsecond), float64(n)/el.Seconds())
	}
	return shmem.Finalize()
}
