// Command stencil is a shmem example: a 1D or 2D Jacobi stencil whose halo
// exchange is done with puts and barriers, checked against the sequential
// computation. Run it with: icn shmem run -n 4 stencil -dim 2
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
	dim := flag.Int("dim", 2, "1 or 2 dimensions")
	n := flag.Int("n", 200, "cells per dimension")
	steps := flag.Int("steps", 50, "Jacobi steps")
	flag.Parse()
	if err := run(*dim, *n, *steps); err != nil {
		fmt.Fprintf(os.Stderr, "stencil: PE %d: %v\n", shmem.MyPE(), err)
		os.Exit(1)
	}
}

func run(dim, n, steps int) error {
	if dim != 1 && dim != 2 {
		return fmt.Errorf("-dim must be 1 or 2, not %d", dim)
	}
	if err := shmem.Init(); err != nil {
		return err
	}
	w := shmem.Default()
	t0 := time.Now()
	var err error
	if dim == 1 {
		err = kernels.Stencil1D(w, n, steps)
	} else {
		err = kernels.Stencil2D(w, n, n, steps)
	}
	if err != nil {
		return err
	}
	if w.MyPE() == 0 {
		fmt.Printf("stencil %dD ok: %d cells per dimension, %d steps, %d PEs (%s), matches the sequential result, %v\n",
			dim, n, steps, w.NPEs(), w.TransportName(), time.Since(t0).Round(time.Microsecond))
	}
	return shmem.Finalize()
}
