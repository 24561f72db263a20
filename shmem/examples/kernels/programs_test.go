package kernels

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/shmem"
)

// TestPrograms builds the example programs and runs them as real
// processes under the launcher on both transports.
func TestPrograms(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool")
	}
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir,
		"github.com/icn-hpc/icn/shmem/examples/stencil",
		"github.com/icn-hpc/icn/shmem/examples/histogram",
		"github.com/icn-hpc/icn/shmem/examples/scatter")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	runs := []struct {
		prog string
		args []string
		want string
	}{
		{"stencil", []string{"-dim", "1", "-n", "300", "-steps", "30"}, "stencil 1D ok"},
		{"stencil", []string{"-dim", "2", "-n", "60", "-steps", "20"}, "stencil 2D ok"},
		{"histogram", []string{"-bins", "257", "-keys", "20000"}, "histogram ok"},
		{"scatter", []string{"-n", "50000"}, "scatter ok"},
	}
	for _, tr := range []string{shmem.TransportShm, shmem.TransportTCP} {
		for _, r := range runs {
			t.Run(tr+"/"+r.prog+strings.Join(r.args, ""), func(t *testing.T) {
				var out bytes.Buffer
				res, err := shmem.Launch(context.Background(), shmem.LaunchConfig{
					N: 4, Prog: filepath.Join(dir, r.prog), Args: r.args,
					Options: shmem.Options{Transport: tr, Heap: 8 << 20, Timeout: 5 * time.Second},
					Stdout:  &out, Stderr: &out,
				})
				if err != nil {
					t.Fatalf("%v\n%s", err, out.String())
				}
				if !strings.Contains(out.String(), r.want) {
					t.Fatalf("%v output:\n%s", res, out.String())
				}
			})
		}
	}
}
