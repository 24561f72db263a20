package fm

import (
	"os"
	"testing"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/topology"
)

func TestZZProfStartup(t *testing.T) {
	spec := os.Getenv("ICN_PROF_TOPO")
	if spec == "" {
		t.Skip()
	}
	t0 := time.Now()
	g, err := topology.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("parse", time.Since(t0))
	t0 = time.Now()
	g2, _ := g.ApplyFaults("", "")
	t.Log("faults", time.Since(t0))
	t0 = time.Now()
	alloc.NewState(g2)
	t.Log("state", time.Since(t0))
	t0 = time.Now()
	AngaraRouting("angara*")(g2)
	t.Log("routing", time.Since(t0))
	t0 = time.Now()
	topology.MinHops(g2, 0)
	t.Log("minhops", time.Since(t0))
}
