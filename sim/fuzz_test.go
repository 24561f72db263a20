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
	f.Add([]byte(`{"dims":[3,2],"mesh":["Y"],"rules":"dirbit","routes":[{"src":[0,1],"dst":[2,0],"dirs":["-X","-Y"]},{"src":[2,0],"dst":[0,1],"dirs":["+X","+Y"]}]}`))
	f.Add([]byte(`{"dims":[3,2],"mesh":["Y"],"rules":"dirbit","routes":[{"src":[0,0],"dst":[0,1],"dirs":["-Y","+Y","+Y"]}]}`))
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
		wrap := make([]bool, len(tab.Dims))
		for i := range wrap {
			wrap[i] = true
		}
		for _, l := range tab.Mesh {
			wrap[topology.DimIndex(l)] = false
		}
		g, err := topology.Parse(topology.TorusSpec(tab.Dims, wrap))
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

// FuzzParseSizes: never panics; accepted values are in range. (Ring
// steps are multiring's: FuzzParseSteps there.)
func FuzzParseSizes(f *testing.F) {
	f.Add("4")
	f.Add("1:0.8,8:0.2")
	f.Fuzz(func(t *testing.T, s string) {
		if sz, err := ParseSizes(s); err == nil {
			for _, x := range sz {
				if x.Size < 1 || x.Size > MaxPacketFlits || !(x.Weight > 0) {
					t.Fatalf("bad size %+v", x)
				}
			}
		}
	})
}

// FuzzParseBookSim: the BookSim configuration reader never panics; an
// accepted file names a topology icn parses, a rate in (0, 1] if any, and
// only option names of `icn sim`.
func FuzzParseBookSim(f *testing.F) {
	f.Add([]byte("topology = torus;\nk = 8;\nn = 2;\nrouting_function = dim_order;\nnum_vcs = 2; // two\ninjection_rate = 0.1;\n"))
	f.Add([]byte("/* mesh */ topology = mesh; k = 4; n = 3; packet_size = 4; injection_rate = 0.05; speculative = 1; routing_delay = 0;"))
	f.Add([]byte("traffic = neighbor; vc_allocator = islip; seed = 5; sample_period = 100; warmup_periods = 2;"))
	f.Add([]byte("injection_rate = {0.1, 0.2};"))
	f.Add([]byte("router = event;"))
	known := map[string]bool{"routing": true, "traffic": true, "packet": true, "vcs": true, "buf": true,
		"switching": true, "rate": true, "router": true, "stages": true, "speculative": true,
		"terminal-links": true, "dateline": true, "link-latency": true, "warmup": true, "cycles": true, "seed": true}
	f.Fuzz(func(t *testing.T, data []byte) {
		bf, err := ParseBookSim(data)
		if err != nil {
			return
		}
		if _, err := topology.Parse(bf.Topo); err != nil {
			t.Fatalf("topology %q: %v", bf.Topo, err)
		}
		for _, k := range bf.Options() {
			if !known[k] {
				t.Fatalf("unknown option %q", k)
			}
		}
		if r, ok := bf.Set["rate"]; ok {
			var x float64
			if _, err := fmt.Sscan(r, &x); err != nil || !(x > 0 && x <= 1) {
				t.Fatalf("rate %q", r)
			}
		}
	})
}
