package sim

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// FuzzParseTable: the table parser never panics; an accepted table has
// coordinates in range and valid directions, and binding it to the torus
// it names either succeeds or fails with an error (never panics), and a
// bound table's routes all arrive.
func FuzzParseTable(f *testing.F) {
	f.Add(TurnCycleTable())
	f.Add([]byte(`{"dims":[2,2],"routes":[{"src":[0,0],"dst":[1,0],"dirs":["+X"]}]}`))
	f.Add([]byte(`{"dims":[3],"rules":"dor","routes":[{"src":[0],"dst":[2],"dirs":["-X"]}],"deadlock_free":true}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := ParseTable(data)
		if err != nil {
			return
		}
		nodes := 1
		for _, d := range tab.Dims {
			nodes *= d
		}
		for _, r := range tab.Routes {
			if r.Src < 0 || r.Src >= nodes || r.Dst < 0 || r.Dst >= nodes || r.Src == r.Dst {
				t.Fatalf("route %+v out of range", r)
			}
			for _, d := range r.Dirs {
				if int(d>>1) >= len(tab.Dims) {
					t.Fatalf("direction %d beyond %d dimensions", d, len(tab.Dims))
				}
			}
		}
		if nodes > 256 {
			return
		}
		spec := "torus:" + dimsString(tab.Dims)
		g, err := topology.Parse(spec)
		if err != nil {
			return
		}
		cfg := DefaultConfig()
		cfg.Routing, cfg.Table, cfg.Force = RouteTable, tab, true
		n, err := NewNetwork(g, cfg, true)
		if err != nil {
			return
		}
		for k, r := range tab.Routes {
			v := r.Src
			for _, d := range r.Dirs {
				p := n.dirPort[v*2*n.nd+int(d)]
				v = int(n.gpPeerN[int(n.portStart[v])+int(p)])
			}
			if v != r.Dst {
				t.Fatalf("bound route %d does not arrive", k)
			}
		}
	})
}

// FuzzParseTrace: never panics; accepted records have sizes and cycles in
// range.
func FuzzParseTrace(f *testing.F) {
	f.Add([]byte("0 0.0 1.0 4\n# c\n10,1.0,0.0,2\n"))
	f.Add([]byte("5 h1 h2 1"))
	f.Add([]byte("1 2 3"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseTrace(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, r := range tr.Records {
			if r.Size < 1 || r.Size > MaxPacketFlits || r.Cycle < 0 || r.Cycle > maxTraceCycle || r.Src == "" || r.Dst == "" {
				t.Fatalf("bad record %+v", r)
			}
		}
		g, _ := topology.Parse("torus:4x4")
		cfg := DefaultConfig()
		cfg.Traffic, cfg.Trace = "trace", tr
		_, _ = NewNetwork(g, cfg, false)
	})
}

// FuzzParseRingSchedule: never panics; accepted schedules validate and
// have a positive finite analytic capacity.
func FuzzParseRingSchedule(f *testing.F) {
	f.Add([]byte(`{"n":4,"steps":[1,-1],"shares":[[1,0.5,0],[0,0.5,1]]}`))
	data, _ := scheduleFS.ReadFile("schedules/seed-table-2.3.json")
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseRingSchedule(data)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted schedule fails validation: %v", err)
		}
		if c, _ := s.Analytic(); !(c > 0) || c > 1e12 {
			t.Fatalf("capacity %g", c)
		}
	})
}

// FuzzParseSizes and ring steps: never panic; accepted values are in range.
func FuzzParseSizes(f *testing.F) {
	f.Add("4")
	f.Add("1:0.8,8:0.2")
	f.Add("±1,±3")
	f.Fuzz(func(t *testing.T, s string) {
		if sz, err := ParseSizes(s); err == nil {
			for _, x := range sz {
				if x.Size < 1 || x.Size > MaxPacketFlits || !(x.Weight > 0) {
					t.Fatalf("bad size %+v", x)
				}
			}
		}
		if st, err := ParseRingSteps(s, 16, 2); err == nil {
			for _, x := range st {
				if x%16 == 0 || x <= -16 || x >= 16 {
					t.Fatalf("bad step %d", x)
				}
			}
			if _, err := ShortestRingSchedule(16, st); err != nil && len(st) > 0 {
				_ = fmt.Sprint(err)
			}
		}
	})
}
