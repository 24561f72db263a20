package alloc

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// randomState occupies each node with probability p.
func randomState(t testing.TB, spec string, p float64, r *rand.Rand) *State {
	s := stateOf(t, spec)
	var busy []int
	for v := 0; v < s.N(); v++ {
		if r.Float64() < p {
			busy = append(busy, v)
		}
	}
	if err := s.Occupy(1, busy); err != nil {
		t.Fatal(err)
	}
	return s
}

// bruteMSS enumerates node sets of free rectangles and keeps those not
// strictly contained in another free rectangle's node set.
func bruteMSS(s *State) []string {
	dims := s.Dims()
	type rs struct {
		key   string
		nodes map[int]bool
	}
	var free []rs
	seen := map[string]bool{}
	for _, size := range Shapes(dims) {
		// every start, including redundant ones, to be independent of
		// placements()
		var rec func(i int, start []int)
		rec = func(i int, start []int) {
			if i == len(dims) {
				for j := range dims {
					if !s.wrap[j] && start[j]+size[j] > dims[j] {
						return
					}
				}
				r := Rect{Start: start, Size: size}
				nodes := r.Nodes(dims, nil)
				for _, v := range nodes {
					if !s.Available(v) {
						return
					}
				}
				sort.Ints(nodes)
				k := fmt.Sprint(nodes)
				if seen[k] {
					return
				}
				seen[k] = true
				m := map[int]bool{}
				for _, v := range nodes {
					m[v] = true
				}
				free = append(free, rs{k, m})
				return
			}
			for x := 0; x < dims[i]; x++ {
				rec(i+1, append(start, x))
			}
		}
		rec(0, nil)
	}
	var out []string
	for _, a := range free {
		maximal := true
		for _, b := range free {
			if len(b.nodes) <= len(a.nodes) {
				continue
			}
			sub := true
			for v := range a.nodes {
				if !b.nodes[v] {
					sub = false
					break
				}
			}
			// Growing by one layer: b must be a with one dimension one
			// larger; any strict superset rectangle implies one exists.
			if sub {
				maximal = false
				break
			}
		}
		if maximal {
			out = append(out, a.key)
		}
	}
	sort.Strings(out)
	return out
}

func TestMSSAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	specs := []string{"torus:4x3", "torus:3x3", "torus:4x2x3", "torus:2x2x2x2", "torus:5x3", "mesh:4x3", "mesh:3x3x2", "torus:6",
		"torus:4x3x2:mesh=Z", "torus:4x4x2:mesh=X", "torus:5x3:mesh=Y", "torus:3x2x2x2:mesh=Y,W"}
	for trial := 0; trial < 180; trial++ {
		spec := specs[trial%len(specs)]
		s := randomState(t, spec, r.Float64()*0.6, r)
		var got []string
		for _, rc := range MaximalFreeRectangles(s) {
			nodes := rc.Nodes(s.Dims(), nil)
			sort.Ints(nodes)
			got = append(got, fmt.Sprint(nodes))
		}
		sort.Strings(got)
		want := bruteMSS(s)
		if !slices.Equal(got, want) {
			t.Fatalf("%s trial %d: MSS\n got %v\nwant %v", spec, trial, got, want)
		}
		// φ from the full list.
		best, count := 0, 0
		for _, rc := range MaximalFreeRectangles(s) {
			switch v := rc.Volume(); {
			case v > best:
				best, count = v, 1
			case v == best:
				count++
			}
		}
		f := Phi(s)
		if f.LargestNodes != best || f.LargestCount != count || f.Phi != int64(s.N()*best+count) {
			t.Fatalf("%s trial %d: φ %+v, want largest %d ×%d", spec, trial, f, best, count)
		}
	}
}

func TestPhiEmptyAndFull(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	s := randomState(t, "torus:4x4x2", 0, r)
	if f := Phi(s); f.LargestNodes != 32 || f.LargestCount != 1 || f.Phi != 32*32+1 {
		t.Errorf("empty: %+v", f)
	}
	s = randomState(t, "torus:4x4x2", 1.1, r)
	if f := Phi(s); f.LargestNodes != 0 || f.Phi != 0 {
		t.Errorf("full: %+v", f)
	}
}

// TestAvailableBox compares the box found from prefix sums with the
// available nodes listed one by one, on random states of tori and meshes.
func TestAvailableBox(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	for trial := 0; trial < 40; trial++ {
		spec := []string{"torus:4x4x2", "torus:5x3x3", "mesh:4x4x3", "torus:4x4x2x2"}[trial%4]
		s := randomState(t, spec, 0.5*r.Float64(), r)
		sel := NewSelector(s)
		sel.prepare(s)
		dims := s.Dims()
		var ws workerScratch
		eachRect(sel, s, func(rect Rect, avail []int) {
			size, st := rect.Size, rect.Start
			box, ok := sel.grid.availableBox(rect, len(avail), &ws)
			want := false
			if len(avail) > 0 {
				// The available nodes form a box iff their bounding box
				// (offsets in the rectangle) has as many nodes.
				lo, hi := slices.Clone(size), make([]int, len(dims))
				c := make([]int, len(dims))
				for _, v := range avail {
					dec(v, dims, c)
					for i, d := range dims {
						o := (c[i] - st[i] + d) % d
						lo[i], hi[i] = min(lo[i], o), max(hi[i], o)
					}
				}
				bv := 1
				for i := range dims {
					bv *= hi[i] - lo[i] + 1
				}
				want = bv == len(avail)
			}
			if ok != want {
				t.Fatalf("%s rect %v: availableBox ok=%v, listing says %v", spec, rect, ok, want)
			}
			if ok {
				got := box.Nodes(dims, nil)
				if !slices.Equal(got, avail) {
					t.Fatalf("%s rect %v: box %v has nodes %v, available %v", spec, rect, box, got, avail)
				}
			}
		})
	}
}

// stateOf returns an idle state on the network spec names.
func stateOf(t testing.TB, spec string) *State {
	t.Helper()
	g, err := topology.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewState(g)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// angaraOn parses spec and returns the network with its angara* router.
func angaraOn(t testing.TB, spec string) (*topology.Graph, *AngaraRouter) {
	t.Helper()
	g, err := topology.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := NewAngaraRouter(g, "angara*")
	if err != nil {
		t.Fatal(err)
	}
	return g, rt
}

// eachRect calls f with every rectangle of every shape the selector
// enumerates and the rectangle's available nodes, in coordinate order.
func eachRect(sel *Selector, s *State, f func(rect Rect, avail []int)) {
	dims := s.Dims()
	for _, size := range sel.shapes {
		placements(dims, sel.wrap, size, func(st []int) bool {
			rect := Rect{Start: st, Size: size}
			var avail []int
			for _, v := range rect.Nodes(dims, nil) {
				if s.Available(v) {
					avail = append(avail, v)
				}
			}
			f(rect, avail)
			return true
		})
	}
}
