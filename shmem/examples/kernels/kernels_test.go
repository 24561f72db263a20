package kernels

import (
	"fmt"
	"testing"
	"time"

	"github.com/icn-hpc/icn/shmem"
)

func run(t *testing.T, n int, tr string, f func(w *shmem.World) error) {
	t.Helper()
	j, err := shmem.NewLocal(n, shmem.Options{Transport: tr, Heap: 4 << 20, Ring: 4096, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Run(f); err != nil {
		t.Fatal(err)
	}
	if err := j.Finalize(); err != nil {
		t.Fatal(err)
	}
}

func TestKernels(t *testing.T) {
	for _, tr := range []string{shmem.TransportShm, shmem.TransportTCP} {
		for _, n := range []int{1, 2, 3, 4} {
			t.Run(fmt.Sprintf("%s/n=%d", tr, n), func(t *testing.T) {
				run(t, n, tr, func(w *shmem.World) error {
					if err := Stencil1D(w, 101, 20); err != nil {
						return err
					}
					if err := Stencil2D(w, 23, 17, 10); err != nil {
						return err
					}
					if _, err := Histogram(w, 97, 2000, 42); err != nil {
						return err
					}
					_, err := Scatter(w, 1009, 7)
					return err
				})
			})
		}
	}
}

func TestGrid2D(t *testing.T) {
	for np := 1; np <= 64; np++ {
		px, py := Grid2D(np)
		if px*py != np || px < py {
			t.Fatalf("Grid2D(%d) = %d x %d", np, px, py)
		}
	}
}

// The sequential references must themselves be right: a 1D step conserves
// the sum except for what leaks through the zero boundaries.
func TestSeq1DLeak(t *testing.T) {
	n := 50
	a := seq1D(n, 0)
	b := seq1D(n, 1)
	sa, sb := 0.0, 0.0
	for i := range a {
		sa += a[i]
		sb += b[i]
	}
	leak := (a[0] + a[n-1]) / 4
	if d := sa - leak - sb; d > 1e-9 || d < -1e-9 {
		t.Fatalf("sum %v -> %v, leak %v", sa, sb, leak)
	}
}
