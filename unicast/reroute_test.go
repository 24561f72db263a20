package unicast

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// failureWalk is a random sequence of fabric states: each step fails a
// link or a node (switch or end node) or repairs a failed one.
type failureWalk struct {
	g      *topology.Graph
	rng    *rand.Rand
	links  []int
	nodes  []int
	nodeOK bool // fail nodes too
}

func (w *failureWalk) step() (*topology.Graph, string) {
	g := w.g
	switch k := w.rng.IntN(10); {
	case k < 2 && len(w.links)+len(w.nodes) > 0:
		if i := w.rng.IntN(len(w.links) + len(w.nodes)); i < len(w.links) {
			w.links = slices.Delete(w.links, i, i+1)
		} else {
			w.nodes = slices.Delete(w.nodes, i-len(w.links), i-len(w.links)+1)
		}
	case k < 3 && w.nodeOK:
		w.nodes = append(w.nodes, w.rng.IntN(g.NumNodes()))
	default:
		w.links = append(w.links, w.rng.IntN(g.NumLinks()))
	}
	h, err := g.WithFaults(w.links, w.nodes)
	if err != nil {
		panic(err)
	}
	return h, fmt.Sprintf("links %v nodes %v", w.links, w.nodes)
}

func dumpBytes(t *testing.T, tb *Tables) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tb.WriteDump(&b); err != nil {
		t.Fatal(err)
	}
	if tb.HasLanes() {
		if err := tb.WriteLanes(&b); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// TestRerouterExact checks, over random failure sequences, that the
// engines an update handles exactly (ftree incrementally, the others by a
// full run) give the tables of a full computation on the new fabric, byte
// for byte.
func TestRerouterExact(t *testing.T) {
	cases := []struct {
		spec, engine string
		steps        int
	}{
		{"fattree:k=4,n=3", "ftree", 40},
		{"fattree:m=8,n=3", "ftree", 40},
		{"fattree:k=3,n=2", "ftree", 30},
		{"fattree:k=2,n=3", "ftree", 60},
		{"fattree:k=2,n=4", "ftree", 60},
		{"xgft:m=2.3,w=2.2", "ftree", 30},
		{"xgft:m=4.3,w=2.3", "ftree", 30},
		{"fattree:k=3,n=3", "minhop", 10},
		{"dragonfly:a=4,p=2,h=2", "updn", 10},
		{"torus:3x4:endpoints=2", "dor", 10},
	}
	for _, c := range cases {
		t.Run(c.spec+"/"+c.engine, func(t *testing.T) {
			g, err := topology.Parse(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			for seed := uint64(1); seed <= 3; seed++ {
				w := &failureWalk{g: g, rng: rand.New(rand.NewPCG(seed, 7)), nodeOK: true}
				r, err := NewRerouter(context.Background(), g, nil, Options{Engine: c.engine})
				if err != nil {
					t.Fatal(err)
				}
				incr := 0
				for i := 0; i < c.steps; i++ {
					h, what := w.step()
					res, st, err := r.Update(context.Background(), h)
					f := fabricOf(t, h)
					want, werr := Route(context.Background(), f, Options{Engine: c.engine})
					if (err != nil) != (werr != nil) {
						t.Fatalf("seed %d step %d (%s): update error %v, full error %v", seed, i, what, err, werr)
					}
					if err != nil {
						// The rerouter keeps its last tables; go on from
						// a fabric it routes.
						continue
					}
					if !st.Exact {
						t.Fatalf("%s update not exact: %+v", c.engine, st)
					}
					if st.Mode == "incremental" {
						incr++
					}
					if !bytes.Equal(dumpBytes(t, res.Tables), dumpBytes(t, want.Tables)) {
						t.Fatalf("seed %d step %d (%s): %s update (%+v) differs from a full computation", seed, i, what, c.engine, st)
					}
				}
				if c.engine == "ftree" && incr == 0 {
					t.Errorf("seed %d: no update was incremental", seed)
				}
			}
		})
	}
}

func fabricOf(t *testing.T, g *topology.Graph) *Fabric {
	t.Helper()
	f, err := NewFabric(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRerouterRepair checks sssp's and dfsssp's repairs over random
// failure sequences: every pair a full computation delivers is delivered,
// nothing loops or is dropped, dfsssp stays deadlock-free, only broken
// destinations are routed again, and Full gives a full computation's
// tables.
func TestRerouterRepair(t *testing.T) {
	cases := []struct{ spec, engine string }{
		{"fattree:k=4,n=3", "sssp"},
		{"dragonfly:a=4,p=2,h=2", "sssp"},
		{"dragonfly:a=4,p=2,h=2", "dfsssp"},
		{"torus:4x4:endpoints=1", "dfsssp"},
	}
	for _, c := range cases {
		t.Run(c.spec+"/"+c.engine, func(t *testing.T) {
			g, err := topology.Parse(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			w := &failureWalk{g: g, rng: rand.New(rand.NewPCG(5, 7)), nodeOK: true}
			o := Options{Engine: c.engine}
			r, err := NewRerouter(context.Background(), g, nil, o)
			if err != nil {
				t.Fatal(err)
			}
			repairs, rerouted, dests := 0, 0, 0
			for i := 0; i < 25; i++ {
				h, what := w.step()
				res, st, err := r.Update(context.Background(), h)
				if err != nil {
					t.Fatalf("step %d (%s): %v", i, what, err)
				}
				want := route(t, fabricOf(t, h), c.engine, 0)
				got, full := audit(t, res.Tables), audit(t, want.Tables)
				if got.UnreachablePairs != full.UnreachablePairs {
					t.Logf("first unreachable: %s", got.FirstUnreachable)
				}
				if got.UnreachablePairs != full.UnreachablePairs || got.BlackHoles != 0 && full.BlackHoles == 0 || got.Loops != 0 || got.Misdelivered != 0 {
					t.Fatalf("step %d (%s): repaired tables: %d unreachable pairs (full: %d), %d black holes, %d loops, %d misdelivered (%+v)",
						i, what, got.UnreachablePairs, full.UnreachablePairs, got.BlackHoles, got.Loops, got.Misdelivered, st)
				}
				if c.engine == "dfsssp" && full.DeadlockFree && !got.DeadlockFree {
					t.Fatalf("step %d (%s): repaired dfsssp tables are not deadlock-free", i, what)
				}
				if st.Mode == "repair" {
					repairs++
					if st.Exact {
						t.Fatalf("a repair claims to be exact")
					}
					rerouted += st.Rerouted
					dests += st.Destinations
				}
				if i%8 == 7 {
					fres, err := r.Full(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(dumpBytes(t, fres.Tables), dumpBytes(t, want.Tables)) {
						t.Fatalf("step %d: Full differs from Route", i)
					}
				}
			}
			if repairs == 0 || rerouted >= dests {
				t.Errorf("%d repairs routed %d of %d destinations again", repairs, rerouted, dests)
			}
		})
	}
}
