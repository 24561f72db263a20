package unicast

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/icn-hpc/icn/topology"
)

// The fabrics of the issue: the 3-level fat tree of 40-port switches with
// 16 000 end nodes and the 26 406-node dragonfly (a=18, p=h=9); dor, which
// needs a mesh or torus, runs on a torus of 2 048 switches instead.
var benchFabrics = []struct {
	spec    string
	engines []string
}{
	{"fattree:m=40,n=3", []string{"minhop", "updn", "ftree", "sssp", "dfsssp"}},
	{"dragonfly:a=18,p=9,h=9", []string{"minhop", "updn", "sssp", "dfsssp"}},
	{"torus:16x16x8:endpoints=2", []string{"dor"}},
}

// BenchmarkRoute routes each fabric with each engine on all cores. Besides
// time and allocations it reports the heap the fabric and its tables hold
// afterwards (held-MB), the lanes used and the layering time.
//
//	go test ./unicast -run XXX -bench Route -benchtime 1x
func BenchmarkRoute(b *testing.B) {
	for _, bf := range benchFabrics {
		f := fabric(b, bf.spec)
		for _, e := range bf.engines {
			b.Run(bf.spec+"/"+e, func(b *testing.B) {
				b.ReportAllocs()
				var res *Result
				var layer float64
				for b.Loop() {
					var err error
					res, err = Route(context.Background(), f, Options{Engine: e})
					if err != nil {
						b.Fatal(err)
					}
					layer += res.LayerSeconds
				}
				b.StopTimer()
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapAlloc)/1e6, "held-MB")
				b.ReportMetric(float64(res.LanesNeeded), "lanes")
				b.ReportMetric(layer/float64(b.N), "layer-s")
				runtime.KeepAlive(res)
			})
		}
	}
}

// BenchmarkAudit audits the ftree tables of the fat tree and the dfsssp
// tables (6 lanes) of the dragonfly.
func BenchmarkAudit(b *testing.B) {
	for _, c := range []struct{ spec, engine string }{{"fattree:m=40,n=3", "ftree"}, {"dragonfly:a=18,p=9,h=9", "dfsssp"}} {
		f := fabric(b, c.spec)
		res := route(b, f, c.engine, 0)
		b.Run(c.spec+"/"+c.engine, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Audit(res.Tables, AuditOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// countingWriter discards what it is given and counts the bytes.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkWriteDump writes the minhop tables of the fat tree (about 2 GB
// of opensm-lfts.dump) to a counting writer: speed in MB/s and the heap it
// allocates beyond the tables (alloc-MB).
//
//	go test ./unicast -run XXX -bench WriteDump -benchtime 1x
func BenchmarkWriteDump(b *testing.B) {
	f := fabric(b, "fattree:m=40,n=3")
	res := route(b, f, "minhop", 0)
	b.ResetTimer()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	var w countingWriter
	for b.Loop() {
		w.n = 0
		if err := res.Tables.WriteDump(&w); err != nil {
			b.Fatal(err)
		}
	}
	runtime.ReadMemStats(&ms1)
	b.SetBytes(w.n)
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N)/1e6, "alloc-MB")
	b.ReportMetric(float64(w.n)/1e6, "dump-MB")
}

// BenchmarkReroute times Rerouter.Update after one switch-to-switch link
// fails (links spread over the fabric, one per iteration, each repaired
// untimed before the next). It reports the destinations routed again
// (rerouted), the LFT entries that changed (changed), the time of the
// repair update (repair-s) and, once, a full computation on the failed
// fabric in the same run (full-s) with same=1 when the tables are
// identical to it, and the routes on the busiest switch link after the
// update over those after the full computation (load-ratio).
//
//	go test ./unicast -run XXX -bench Reroute -benchtime 5x
func BenchmarkReroute(b *testing.B) {
	for _, c := range []struct{ spec, engine string }{
		{"fattree:m=40,n=3", "ftree"}, {"fattree:m=40,n=3", "sssp"}, {"fattree:m=40,n=3", "dfsssp"},
		{"dragonfly:a=18,p=9,h=9", "sssp"}, {"dragonfly:a=18,p=9,h=9", "dfsssp"},
	} {
		b.Run(c.spec+"/"+c.engine, func(b *testing.B) {
			g := fabric(b, c.spec).G
			r, err := NewRerouter(context.Background(), g, nil, Options{Engine: c.engine})
			if err != nil {
				b.Fatal(err)
			}
			links := switchLinks(g)
			var rerouted, changed, repair float64
			i := 0
			for b.Loop() {
				h, err := g.WithFaults([]int{links[(i*7919)%len(links)]}, nil)
				if err != nil {
					b.Fatal(err)
				}
				_, st, err := r.Update(context.Background(), h)
				if err != nil {
					b.Fatal(err)
				}
				rerouted += float64(st.Rerouted)
				changed += float64(st.Changed)
				b.StopTimer()
				if i == 0 {
					start := time.Now()
					f2, _ := NewFabric(h, nil)
					full, err := Route(context.Background(), f2, Options{Engine: c.engine})
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(time.Since(start).Seconds(), "full-s")
					same := 0.0
					if bytes.Equal(full.Tables.lft, r.Result().Tables.lft) {
						same = 1
					}
					b.ReportMetric(same, "same")
					b.ReportMetric(float64(maxSwitchLoad(r.Result().Tables, 0))/float64(maxSwitchLoad(full.Tables, 0)), "load-ratio")
				}
				_, st, err = r.Update(context.Background(), g)
				if err != nil {
					b.Fatal(err)
				}
				repair += st.Seconds
				i++
				b.StartTimer()
			}
			b.ReportMetric(rerouted/float64(b.N), "rerouted")
			b.ReportMetric(changed/float64(b.N), "changed")
			b.ReportMetric(repair/float64(b.N), "repair-s")
		})
	}
}

// BenchmarkSSSPRedo reports how much of a full sssp run an exact update
// after one link failure would have to redo: sssp routes destinations in
// sequence, each against the weights of all earlier ones, so every
// destination from the first one whose routes use the link on may change.
// redo-% is the part of the run from that destination on (mean over the
// links BenchmarkReroute fails).
//
//	go test ./unicast -run XXX -bench SSSPRedo -benchtime 5x
func BenchmarkSSSPRedo(b *testing.B) {
	for _, spec := range []string{"fattree:m=40,n=3", "dragonfly:a=18,p=9,h=9"} {
		b.Run(spec, func(b *testing.B) {
			g := fabric(b, spec).G
			r, err := NewRerouter(context.Background(), g, nil, Options{Engine: "sssp"})
			if err != nil {
				b.Fatal(err)
			}
			links := switchLinks(g)
			tb, ds := r.Result().Tables, r.sp.ds
			redo, i := 0.0, 0
			for b.Loop() {
				l := links[(i*7919)%len(links)]
				i++
				first := len(ds)
				for k := 0; k < len(ds) && first == len(ds); k++ {
					for s := range r.f.switches {
						p := tb.lft[s*tb.stride+ds[k].lid]
						if p != noPort && p != 0 && g.PortChannel(r.f.Switch(s), int(p))>>1 == l {
							first = k
							break
						}
					}
				}
				redo += float64(len(ds)-first) / float64(len(ds))
			}
			b.ReportMetric(100*redo/float64(b.N), "redo-%")
		})
	}
}

// switchLinks lists the switch-to-switch links of g.
func switchLinks(g *topology.Graph) []int {
	var links []int
	for l, lk := range g.Links() {
		if g.Kind(int(lk.A)) == topology.Switch && g.Kind(int(lk.B)) == topology.Switch {
			links = append(links, l)
		}
	}
	return links
}
