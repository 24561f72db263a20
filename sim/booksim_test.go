package sim

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// ringWalk follows a packet from position a to b on a k-ring in direction
// s (0 = +, 1 = −) and returns the dateline class of each hop as the
// router computes it, with the flit's state carried from hop to hop.
func ringWalk(c *Core, k, a, b, s int) []int {
	f := &flit{lastDir: -1}
	code := int8(s)
	var out []int
	for cur := a; cur != b; {
		cls := c.ringClass(f, code, s, cur, b)
		out = append(out, cls)
		lo, _ := c.vcRange(cls, 2)
		f.vc, f.lastDir = uint8(lo), code
		if s == 0 {
			cur = (cur + 1) % k
		} else {
			cur = (cur + k - 1) % k
		}
	}
	return out
}

// The BookSim rule keeps one class on a whole ring (1 if the path wraps);
// the "ahead" rule switches from 0 to 1 at the wrap link. Both give
// acyclic channel dependencies on every ring a minimal route uses (brute
// force over all pairs and directions of rings of 2..9 nodes).
func TestDatelineClasses(t *testing.T) {
	for _, rule := range []string{DatelineBookSim, DatelineAhead} {
		for k := 2; k <= 9; k++ {
			cfg := DefaultConfig()
			cfg.Dateline = rule
			c, err := NewCore(mustNet(t, fmt.Sprintf("torus:%d", max(k, 2)), cfg), cfg)
			if err != nil {
				t.Fatal(err)
			}
			// dep[s][cls][from channel][to channel]: a packet holding the
			// first waits for the second.
			var dep [2][2][][]bool
			all := newDeps(k)
			for s := range dep {
				for cl := range dep[s] {
					dep[s][cl] = newDeps(k)
				}
			}
			for a := 0; a < k; a++ {
				for b := 0; b < k; b++ {
					for s := 0; s < 2; s++ {
						d := (b - a + k) % k
						if s == 1 {
							d = (a - b + k) % k
						}
						if a == b || 2*d > k {
							continue // not minimal this way round
						}
						cls := ringWalk(c, k, a, b, s)
						wraps := (s == 0 && a > b) || (s == 1 && a < b)
						for h, cl := range cls {
							pos := (a + h) % k
							if s == 1 {
								pos = (a - h + k) % k
							}
							crossed := (s == 0 && pos < a) || (s == 1 && pos > a)
							want := 0
							switch {
							case rule == DatelineBookSim && wraps:
								want = 1
							case rule == DatelineAhead && (!wraps || crossed):
								want = 1
							}
							if cl != want {
								t.Fatalf("%s k=%d %d→%d dir %d hop %d: class %d, want %d", rule, k, a, b, s, h, cl, want)
							}
						}
						// Dependencies between consecutive channels of one class.
						for h := 1; h < len(cls); h++ {
							if cls[h] == cls[h-1] {
								from := (a + h - 1) % k
								if s == 1 {
									from = (a - h + 1 + k) % k
								}
								to := (a + h) % k
								if s == 1 {
									to = (a - h + k) % k
								}
								dep[s][cls[h]][from][k+to] = true
							}
							if from, to := (a+h-1)%k, (a+h)%k; s == 0 {
								all[from][k+to] = true // the same routes without classes
							}
						}
					}
				}
			}
			if k >= 4 && !ringCycle(all, k) {
				t.Errorf("k=%d: one class must close the ring's dependency cycle", k)
			}
			for s := 0; s < 2; s++ {
				for cl := 0; cl < 2; cl++ {
					if ringCycle(dep[s][cl], k) {
						t.Errorf("%s k=%d dir %d class %d: cyclic channel dependencies", rule, k, s, cl)
					}
				}
			}
		}
	}
}

// newDeps returns an empty dependency matrix of a k-ring.
func newDeps(k int) [][]bool {
	d := make([][]bool, 2*k)
	for i := range d {
		d[i] = make([]bool, 2*k)
	}
	return d
}

// ringCycle reports whether the dependencies between the k channels of
// one ring direction (channel i leaves node i; dep[i][k+j]: i waits for
// j) contain a cycle.
func ringCycle(dep [][]bool, k int) bool {
	state := make([]int, k)
	var visit func(i int) bool
	visit = func(i int) bool {
		state[i] = 1
		for j := 0; j < k; j++ {
			if !dep[i][k+j] || i == j {
				continue
			}
			if state[j] == 1 || (state[j] == 0 && visit(j)) {
				return true
			}
		}
		state[i] = 2
		return false
	}
	for i := 0; i < k; i++ {
		if state[i] == 0 && visit(i) {
			return true
		}
	}
	return false
}

// The uniform-traffic bound equals the inverse of the busiest channel's
// load under dimension-order routing with ties split evenly, counted pair
// by pair (no self-sends): (8/k)(N−1)/N on tori, (4/k)(N−1)/N on meshes.
func TestIdealIsBusiestChannel(t *testing.T) {
	for _, tc := range []struct {
		spec string
		dims []int
		wrap bool
	}{{"torus:4x4", []int{4, 4}, true}, {"torus:6x6", []int{6, 6}, true}, {"torus:8x8", []int{8, 8}, true},
		{"mesh:4x4", []int{4, 4}, false}, {"mesh:6x6", []int{6, 6}, false}, {"torus:4x4x4", []int{4, 4, 4}, true}} {
		n := mustNet(t, tc.spec, DefaultConfig())
		ideal, _ := n.IdealThroughput()
		N := 1
		for _, k := range tc.dims {
			N *= k
		}
		load := map[[3]int]float64{} // node, dimension, direction → pairs
		coord := func(v int) []int {
			c := make([]int, len(tc.dims))
			for i, k := range tc.dims {
				c[i], v = v%k, v/k
			}
			return c
		}
		var walk func(cur []int, dst []int, dim int, w float64)
		walk = func(cur, dst []int, dim int, w float64) {
			for dim < len(cur) && cur[dim] == dst[dim] {
				dim++
			}
			if dim == len(cur) {
				return
			}
			k := tc.dims[dim]
			go1 := func(s int, w float64) {
				nc := append([]int(nil), cur...)
				id := 0
				for i := len(cur) - 1; i >= 0; i-- {
					id = id*tc.dims[i] + cur[i]
				}
				load[[3]int{id, dim, s}] += w
				if s == 0 {
					nc[dim] = (cur[dim] + 1) % k
				} else {
					nc[dim] = (cur[dim] - 1 + k) % k
				}
				walk(nc, dst, dim, w)
			}
			d := (dst[dim] - cur[dim] + k) % k
			switch {
			case !tc.wrap && dst[dim] > cur[dim], tc.wrap && 2*d < k:
				go1(0, w)
			case !tc.wrap, 2*d > k:
				go1(1, w)
			default:
				go1(0, w/2)
				go1(1, w/2)
			}
		}
		for s := 0; s < N; s++ {
			for d := 0; d < N; d++ {
				if s != d {
					walk(coord(s), coord(d), 0, 1)
				}
			}
		}
		busiest := 0.0
		for _, x := range load {
			busiest = max(busiest, x)
		}
		want := min(1, float64(N-1)/busiest)
		if math.Abs(ideal-want) > 1e-9 {
			t.Errorf("%s: ideal %.6f, busiest channel gives %.6f", tc.spec, ideal, want)
		}
	}
}

// Allocation is starvation-free: under tornado traffic past saturation
// every occupied input VC keeps moving (round-robin pointers that advance
// on grant), and throughput is not pinned at the starved 0.021875.
func TestNoStarvation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Traffic, cfg.Rate, cfg.RouterDelay = "tornado", 0.7, 2
	cfg.Warmup, cfg.Cycles, cfg.DrainCycles = 1000, cycles(4000), 1000
	n := mustNet(t, "torus:8x8", cfg)
	p, err := Run(n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxVCWait > StarvationBound {
		t.Errorf("an input VC waited %d cycles (bound %d)", p.MaxVCWait, StarvationBound)
	}
	if p.Accepted < 0.05 {
		t.Errorf("accepted %.4f: tornado throughput starved", p.Accepted)
	}
}

// BookSim's 4-stage router routes the next packet of a VC only after the
// previous tail left (three cycles per packet and VC); under neighbour
// traffic, where dateline classes leave most packets one VC per ring, a
// 1-flit torus then saturates near 1/3 (BookSim2: 0.355), while the lumped
// model with the same per-hop delay overlaps packets and carries the load.
func TestStagedOccupancy(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Traffic, cfg.Rate, cfg.TerminalLinks = "neighbor", 0.6, true
	cfg.Warmup, cfg.Cycles, cfg.DrainCycles = 500, cycles(3000), 500
	staged := cfg
	staged.Router, staged.Stages = RouterStaged, BookSimStages
	lumped := cfg
	lumped.RouterDelay = BookSimStages.Delay()
	ps, err := Run(mustNet(t, "torus:8x8", staged), staged)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := Run(mustNet(t, "torus:8x8", lumped), lumped)
	if err != nil {
		t.Fatal(err)
	}
	if ps.Accepted < 0.30 || ps.Accepted > 0.40 {
		t.Errorf("staged router accepted %.4f under neighbour traffic, want about 1/3", ps.Accepted)
	}
	if pl.Accepted < 0.58 {
		t.Errorf("lumped router accepted %.4f of offered 0.6", pl.Accepted)
	}
}

// A BookSim file is translated key by key; keys icn does not model are
// refused by name, BookSim's defaults for shared behaviour are accepted.
func TestParseBookSim(t *testing.T) {
	bf, err := ParseBookSim([]byte(`// 8x8 torus
topology = torus; k = 8; n = 2;
routing_function = dim_order;
num_vcs = 2; vc_buf_size = 8;
packet_size = 4; /* packets per cycle: */ injection_rate = 0.05;
routing_delay = 0; speculative = 1;
use_noc_latency = 0; vc_allocator = islip; sample_period = 500; max_samples = 4; warmup_periods = 2;
seed = 7;`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"routing": "dor", "traffic": "uniform", "packet": "4", "vcs": "2", "buf": "8",
		"rate": "0.2", "router": "staged", "stages": "0,1,1,1", "speculative": "true", "terminal-links": "true",
		"dateline": "booksim", "link-latency": "1", "warmup": "1000", "cycles": "2000", "seed": "7"}
	if bf.Topo != "torus:8x8" {
		t.Errorf("topology %q", bf.Topo)
	}
	for k, v := range want {
		if bf.Set[k] != v {
			t.Errorf("%s = %q, want %q", k, bf.Set[k], v)
		}
	}
	if len(bf.Set) != len(want) {
		t.Errorf("options %v", bf.Options())
	}
	// BookSim's names for its routing functions (routing_function +
	// "_" + topology in its routefunc.cpp): dor is its dim_order_mesh.
	for _, c := range []struct {
		cfg, err string
	}{
		{"topology = mesh; k = 8; n = 2; routing_function = dor;", ""},
		{"topology = mesh; routing_function = dim_order;", ""},
		{"topology = torus; routing_function = dim_order;", ""},
		{"topology = torus; routing_function = dor;", "BookSim has no dor_torus either"},
		{"topology = mesh; routing_function = romm;", "romm_mesh: ROMM"},
		{"topology = torus; routing_function = dim_order_bal;", "dim_order_bal_torus"},
		{"topology = mesh; routing_function = bogus;", "no bogus_mesh"},
	} {
		bf, err := ParseBookSim([]byte(c.cfg))
		switch {
		case c.err == "" && (err != nil || bf.Set["routing"] != RouteDOR):
			t.Errorf("%q: %v", c.cfg, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want %q", c.cfg, err, c.err)
		}
	}
	// A mesh file in the shape of BookSim's own examples/mesh88_lat: the
	// routing name passes, and so do its credit delay, tail credit and
	// input speedup, translated to icn's options.
	bf, err = ParseBookSim([]byte("topology = mesh; k = 8; n = 2; routing_function = dor; num_vcs = 8; vc_buf_size = 8;\n" +
		"wait_for_tail_credit = 1; vc_allocator = islip; sw_allocator = islip; alloc_iters = 1; credit_delay = 2;\n" +
		"routing_delay = 0; vc_alloc_delay = 1; sw_alloc_delay = 1; input_speedup = 2; output_speedup = 1; internal_speedup = 1.0;\n" +
		"traffic = transpose; packet_size = 20; sim_type = latency; injection_rate = 0.005;"))
	if err != nil {
		t.Fatalf("mesh88_lat-like file: %v", err)
	}
	for k, v := range map[string]string{"credit-delay": "2", "tail-credit": "true", "input-speedup": "2", "stages": "0,1,1,1", "rate": "0.1"} {
		if bf.Set[k] != v {
			t.Errorf("mesh88_lat-like file: %s = %q, want %q", k, bf.Set[k], v)
		}
	}
	// At their BookSim defaults the three keys set nothing.
	bf, err = ParseBookSim([]byte("credit_delay = 0; wait_for_tail_credit = 0; input_speedup = 1;"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"credit-delay", "tail-credit", "input-speedup"} {
		if _, ok := bf.Set[k]; ok {
			t.Errorf("default BookSim value sets %s", k)
		}
	}
	for _, bad := range []string{"wait_for_tail_credit = 2;", "credit_delay = -1;", "input_speedup = 0;", "input_speedup = 1.5;", "output_speedup = 2;"} {
		_, err := ParseBookSim([]byte(bad))
		if key, _, _ := strings.Cut(bad, " "); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: error %v, want one naming the key", bad, err)
		}
	}
	for _, bad := range []string{"topology = fly;", "routing_function = min_adapt;", "vc_allocator = separable_input_first;",
		"injection_process = on_off;", "num_vcs = 0;", "seed = time;", "watts = 3;", "k = 8", "injection_rate = {0.1,0.2};", "/* open"} {
		if _, err := ParseBookSim([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The staged router, injection/ejection channels and BookSim's dateline
// rule keep partitioned runs bit-for-bit equal to serial ones; so do the
// credit delay, the tail-credit rule and input speedup (BookSim's
// mesh88_lat router), which also conserve every flit and packet.
func TestStagedDeterminism(t *testing.T) {
	t.Run("torus", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Rate, cfg.Cycles, cfg.Sizes = 0.25, cycles(2000), []SizeWeight{{1, 1}, {4, 1}}
		cfg.Router, cfg.Stages, cfg.TerminalLinks = RouterStaged, BookSimStages, true
		checkPartitioned(t, "torus:6x6", cfg)
	})
	t.Run("mesh88_lat router", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Rate, cfg.Cycles, cfg.Sizes, cfg.VCs = 0.2, cycles(2000), []SizeWeight{{1, 1}, {6, 1}}, 4
		cfg.Router, cfg.Stages, cfg.TerminalLinks = RouterStaged, Stages{RC: 0, VA: 1, SA: 1, ST: 1}, true
		cfg.CreditDelay, cfg.TailCredit, cfg.InputSpeedup = 2, true, 2
		checkPartitioned(t, "mesh:6x6", cfg)
	})
}

// checkPartitioned runs cfg on spec serially and on 2, 3, 4 and 8
// partitions and fails unless all runs conserve flits and give the same
// result.
func checkPartitioned(t *testing.T, spec string, cfg Config) {
	n := mustNet(t, spec, cfg)
	a, err := Run(n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Conserved || a.Accepted < 0.9*cfg.Rate {
		t.Fatalf("serial run: conserved %v, accepted %.3f of %.3f", a.Conserved, a.Accepted, cfg.Rate)
	}
	for _, w := range []int{2, 3, 4, 8} {
		pc := cfg
		pc.Workers, pc.minRoutersPerPart = w, 1
		b, err := Run(n, pc)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%d partitions differ from serial:\n%+v\n%+v", w, a, b)
		}
	}
}
