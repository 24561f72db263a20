package alloc

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// halfFull fills a torus to about 50% with jobs of mixed sizes placed by
// the improved algorithm (so the occupancy has the shapes a scheduler
// leaves), then releases a random third of them and refills: a used,
// fragmented machine.
func halfFull(b *testing.B, spec string) (*State, *AngaraRouter) {
	g, err := topology.Parse(spec)
	if err != nil {
		b.Fatal(err)
	}
	s, _ := NewState(g)
	rt, err := NewAngaraRouter(g, "angara*")
	if err != nil {
		b.Fatal(err)
	}
	sel := NewSelector(s)
	r := rand.New(rand.NewPCG(1, 1))
	job := 0
	var live []int
	fill := func() {
		for s.Busy() < s.N()/2 {
			m := 1 << r.IntN(6)
			res, err := sel.Select(s, rt, Request{Nodes: m, Transit: m / 4, Algo: Improved})
			if err != nil {
				b.Fatal(err)
			}
			if res.Chosen == nil {
				continue
			}
			job++
			s.Occupy(job, append(append([]int(nil), res.Chosen.Active...), res.Chosen.Transit...))
			live = append(live, job)
		}
	}
	fill()
	r.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	for _, j := range live[:len(live)/3] {
		s.Release(j)
	}
	fill()
	return s, rt
}

// BenchmarkSelect is the time of one allocation decision (improved
// algorithm, the four ranking criteria) at 50% occupancy, on one core
// (the baseline) and on all cores.
func BenchmarkSelect(b *testing.B) {
	for _, spec := range []string{"torus:4x4x4x4", "torus:8x8x4x4", "torus:16x8x8x4"} {
		s, rt := halfFull(b, spec)
		for _, m := range []int{8, 32} {
			for _, workers := range []int{1, 0} {
				name := fmt.Sprintf("%s/m=%d,T=%d/workers=%d", spec, m, m/4, workers)
				if workers == 0 {
					name = fmt.Sprintf("%s/m=%d,T=%d/workers=all", spec, m, m/4)
				}
				b.Run(name, func(b *testing.B) {
					sel := NewSelector(s)
					sel.Workers = workers
					found := 0
					cpu := processCPU()
					for b.Loop() {
						res, err := sel.Select(s, rt, Request{Nodes: m, Transit: m / 4, Algo: Improved})
						if err != nil {
							b.Fatal(err)
						}
						found = res.Found
					}
					b.ReportMetric(float64(processCPU()-cpu)/1e6/float64(b.N), "cpu-ms/op")
					b.ReportMetric(float64(found), "candidates")
				})
			}
		}
	}
}

// BenchmarkGridUnavailable measures one box query of the prefix sums at
// random starts and sizes on Sequoia's and Tofu-D's tori (a twentieth of
// the nodes busy): "written" is grid.unavailable (the corners written out
// per dimension count), "slow" the same-run baseline unavailableSlow (a
// loop over the 2^n corners).
func BenchmarkGridUnavailable(b *testing.B) {
	for _, spec := range []string{"torus:16x16x16x12x2", "torus:24x23x24x2x3x2:mesh=W,U"} {
		g, err := topology.Parse(spec)
		if err != nil {
			b.Fatal(err)
		}
		s, _ := NewState(g)
		r := rand.New(rand.NewPCG(5, 20))
		var busy []int
		for v := range s.N() {
			if r.IntN(20) == 0 {
				busy = append(busy, v)
			}
		}
		if err := s.Occupy(1, busy); err != nil {
			b.Fatal(err)
		}
		gr := newGrid(s)
		dims := g.Dims()
		type box struct{ start, size []int }
		boxes := make([]box, 4096)
		for k := range boxes {
			st, sz := make([]int, len(dims)), make([]int, len(dims))
			for i, d := range dims {
				sz[i] = 1 + r.IntN(d)
				if g.Wrap()[i] {
					st[i] = r.IntN(d)
				} else {
					st[i] = r.IntN(d - sz[i] + 1)
				}
			}
			boxes[k] = box{st, sz}
		}
		for _, mode := range []string{"written", "slow"} {
			b.Run(fmt.Sprintf("%s/%s", spec, mode), func(b *testing.B) {
				k, sum := 0, 0
				for b.Loop() {
					x := boxes[k%len(boxes)]
					if mode == "written" {
						sum += gr.unavailable(x.start, x.size)
					} else {
						sum += gr.unavailableSlow(x.start, x.size)
					}
					k++
				}
				if sum < 0 {
					b.Fatal("negative count")
				}
			})
		}
	}
}
