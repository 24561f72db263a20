package sim

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// runWorkers runs cfg on n with the routers forced onto w partitions
// (however small the network) and returns the point and the error text.
func runWorkers(t *testing.T, n *Network, cfg Config, w int) (Point, string) {
	t.Helper()
	cfg.Workers, cfg.minRoutersPerPart = w, 1
	p, err := Run(n, cfg)
	msg := ""
	if err != nil {
		var de *DeadlockError
		if !errors.As(err, &de) {
			t.Fatalf("%d workers: %v", w, err)
		}
		msg = err.Error()
	}
	return p, msg
}

// The same seed gives the same point, byte for byte, on 1, 2, 3, 4, 5 and
// 8 partitions, for link latencies 1 to 5 (partitions then run up to
// min(L, maxAhead) cycles between exchanges) and with the credit-delay,
// tail-credit and input-speedup models, adaptive, Valiant and up*/down*
// routing, store-and-forward and bubble flow control.
func TestPartitionedLookahead(t *testing.T) {
	booksim := func(c *Config) {
		c.Router, c.Stages, c.TerminalLinks = RouterStaged, BookSimStages, true
		c.RouterDelay = BookSimStages.Delay()
	}
	cases := []struct {
		spec string
		mod  func(*Config)
	}{
		{"torus:6x6", func(c *Config) { booksim(c); c.LinkLatency, c.Rate = 2, 0.3 }},
		{"torus:5x4", func(c *Config) { c.Routing, c.VCs, c.LinkLatency, c.Rate = RouteAdaptive, 3, 3, 0.45 }},
		{"mesh:6x5", func(c *Config) {
			booksim(c)
			c.VCs, c.LinkLatency, c.Rate = 4, 2, 0.25
			c.CreditDelay, c.TailCredit, c.InputSpeedup = 2, true, 2
		}},
		{"mesh:5x5", func(c *Config) { c.LinkLatency, c.CreditDelay, c.Rate = 1, 3, 0.3 }},
		{"torus:4x4x3", func(c *Config) { c.LinkLatency, c.TailCredit, c.InputSpeedup, c.Rate = 5, true, 2, 0.2 }},
		{"torus:6x6", func(c *Config) {
			c.Switching, c.FlowControl, c.VCs, c.Buf, c.LinkLatency, c.Rate = VCT, Bubble, 1, 8, 2, 0.3
		}},
		{"torus:6x6", func(c *Config) { c.Switching, c.Buf, c.LinkLatency, c.Rate = SAF, 8, 4, 0.15 }},
		{"dragonfly:a=4,p=2,h=2", func(c *Config) { c.Routing, c.VCs, c.LinkLatency, c.Rate = RouteValiant, 3, 2, 0.2 }},
		{"fattree:k=4,n=2", func(c *Config) { c.Routing, c.LinkLatency, c.Rate = RouteUpDown, 2, 0.3 }},
	}
	for i, tc := range cases {
		cfg := DefaultConfig()
		cfg.Cycles, cfg.Warmup, cfg.Sizes, cfg.Seed = cycles(1500), 300, []SizeWeight{{1, 1}, {4, 1}}, uint64(7+i)
		tc.mod(&cfg)
		t.Run(fmt.Sprintf("%d %s L=%d", i, tc.spec, cfg.LinkLatency), func(t *testing.T) {
			n := mustNet(t, tc.spec, cfg)
			a, ea := runWorkers(t, n, cfg, 1)
			if !a.Conserved || a.Packets == 0 || ea != "" {
				t.Fatalf("serial run: conserved %v, %d packets, %q", a.Conserved, a.Packets, ea)
			}
			for _, w := range []int{2, 3, 4, 5, 8} {
				b, eb := runWorkers(t, n, cfg, w)
				if !reflect.DeepEqual(a, b) || ea != eb {
					t.Fatalf("%d partitions differ from serial:\n%+v %q\n%+v %q", w, a, ea, b, eb)
				}
			}
		})
	}
}

// A deadlock is found at the same cycle, with the same report, on any
// number of partitions (batches of cycles end where the watchdog looks).
func TestPartitionedDeadlock(t *testing.T) {
	tab, err := ParseTable(TurnCycleTable())
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Routing, cfg.Table, cfg.Switching, cfg.FlowControl, cfg.VCs, cfg.Buf = RouteTable, tab, VCT, Bubble, 1, 8
	cfg.Sizes, cfg.Force = []SizeWeight{{4, 1}}, true
	cfg.Rate, cfg.Cycles, cfg.Warmup, cfg.LinkLatency = 1, 20000, 1, 4
	g, _ := topology.Parse("torus:2x2")
	n, err := NewNetwork(g, cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	a, ea := runWorkers(t, n, cfg, 1)
	if ea == "" {
		t.Fatal("no deadlock on the turn-cycle table")
	}
	for _, w := range []int{2, 3, 4} {
		b, eb := runWorkers(t, n, cfg, w)
		if !reflect.DeepEqual(a, b) || ea != eb {
			t.Fatalf("%d partitions differ from serial:\n%+v %q\n%+v %q", w, a, ea, b, eb)
		}
	}
}

// Partitions cover every router once, in order, each with at least one
// router, and their costs (ports plus terminal) differ by at most the
// largest router's.
func TestBalance(t *testing.T) {
	for _, spec := range []string{"torus:8x8", "fattree:k=4,n=3", "mesh:3x3"} {
		cfg := DefaultConfig()
		cfg.Routing = RouteUpDown
		n := mustNet(t, spec, cfg)
		c, err := NewCore(n, cfg)
		if err != nil {
			t.Fatal(err)
		}
		R := len(n.portStart) - 1
		cost := n.routerCost
		maxCost := 0
		for r := 0; r < R; r++ {
			maxCost = max(maxCost, cost(r))
		}
		for _, k := range []int{1, 2, 3, 7, R} {
			c.workers = make([]worker, k)
			c.balance(k)
			lo, hi := 1<<30, 0
			for i, w := range c.workers {
				if w.lo >= w.hi || (i == 0 && w.lo != 0) || (i > 0 && w.lo != c.workers[i-1].hi) {
					t.Fatalf("%s, %d partitions: partition %d is [%d,%d)", spec, k, i, w.lo, w.hi)
				}
				sum := 0
				for r := w.lo; r < w.hi; r++ {
					sum += cost(r)
				}
				lo, hi = min(lo, sum), max(hi, sum)
			}
			if c.workers[k-1].hi != R {
				t.Fatalf("%s, %d partitions: last ends at %d of %d routers", spec, k, c.workers[k-1].hi, R)
			}
			if hi-lo > 2*maxCost {
				t.Errorf("%s, %d partitions: costs from %d to %d", spec, k, lo, hi)
			}
		}
	}
}

// A goroutine that finds its own chunks done takes the others' chunks:
// with the other goroutines stalled (never started), goroutine 0 alone
// runs every chunk of every batch exactly once, and the core ends where
// a serial core does; any k-1 of k goroutines stalled gives the same.
func TestChunksTaken(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Rate, cfg.LinkLatency, cfg.minRoutersPerPart = 0.3, 2, 1
	n := mustNet(t, "torus:6x5", cfg)
	serial, err := NewCore(n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	const cycles = 400
	for range cycles {
		serial.Tick()
	}
	want := serial.sum()
	for _, k := range []int{2, 3, 5} {
		for alone := range k {
			c, err := NewCore(n, cfg)
			if err != nil {
				t.Fatal(err)
			}
			p := splitCore(c, k)
			if len(c.workers) <= k {
				t.Fatalf("%d goroutines: only %d chunks", k, len(c.workers))
			}
			for c.now < cycles {
				m := min(c.ahead, int(cycles-c.now), int(c.dlWindow-c.now%c.dlWindow))
				p.t0, p.n = c.now, m
				for i := range p.runs {
					p.runs[i].taken.Store(0)
				}
				p.work(alone)
				for i := range p.runs {
					if r := &p.runs[i]; r.lo+int(r.taken.Load()) < r.hi {
						t.Fatalf("%d goroutines, %d alone: run %d has chunks left", k, alone, i)
					}
				}
				c.endBatch(m)
			}
			if got := c.sum(); got.moved != want.moved || got.ejFlits != want.ejFlits || got.latSum != want.latSum || got.injFlits != want.injFlits {
				t.Errorf("%d goroutines, goroutine %d alone: %d moves, %d flits ejected, latency sum %d; serial %d, %d, %d",
					k, alone, got.moved, got.ejFlits, got.latSum, want.moved, want.ejFlits, want.latSum)
			}
		}
	}
}
