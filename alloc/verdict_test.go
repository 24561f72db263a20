package alloc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/topology"
)

// TestImpossibleVolumes: Impossible rules a request out by its size
// exactly when brute force over every rectangle size finds none with a
// volume between m and m+T, or when m exceeds the nodes (all of them, or
// those that have not failed).
func TestImpossibleVolumes(t *testing.T) {
	for _, spec := range []string{"torus:4x4", "torus:3x5", "torus:2x3x4", "torus:4x4x4"} {
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewState(g)
		if err != nil {
			t.Fatal(err)
		}
		shapes := Shapes(s.Dims())
		for m := 1; m <= s.N()+1; m++ {
			for T := 0; T <= 3; T++ {
				fits := false
				for _, sz := range shapes {
					if v := vol(sz); v >= m && v <= m+T {
						fits = true
					}
				}
				why := Impossible(s, Request{Nodes: m, Transit: T})
				if want := !fits || m > s.N(); (why != "") != want {
					t.Fatalf("%s m=%d T=%d: Impossible %q, want ruled out %v", spec, m, T, why, want)
				}
			}
		}
	}
	g, _ := topology.Parse("torus:4x4")
	g, _ = g.ApplyFaults("", "0.0,1.1")
	s, _ := NewState(g)
	if why := Impossible(s, Request{Nodes: 15, Transit: 1}); !strings.Contains(why, "only 14 of the fabric's 16 nodes have not failed") {
		t.Fatalf("15 of 14 up: %q", why)
	}
	if why := Impossible(s, Request{Nodes: 14, Transit: 2}); why != "" {
		t.Fatalf("14 of 14 up with 2 transit: %q", why)
	}
	if why := Impossible(s, Request{Nodes: 7}); !strings.Contains(why, "no brick of the 4x4 torus holds exactly 7 nodes") {
		t.Fatalf("7 nodes without transit on 4x4: %q", why)
	}
}

// TestExplainVerdicts: a request with no set is "never" when even the
// machine without jobs (its failures kept) has none, "not now" when
// that one has a set, and "out of time" when the budget ended before any
// set was found, the answer naming the placements examined.
func TestExplainVerdicts(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		topo, fail  string
		busy        []string
		req         Request
		want        Verdict
		wantInWhy   string
		wantChosen  bool
		budgetAfter time.Duration // the empty machine's check
	}{
		{name: "placed", topo: "torus:4x4", req: Request{Nodes: 8}, want: Placed, wantChosen: true},
		{name: "larger than the machine", topo: "torus:4x4", req: Request{Nodes: 17}, want: Never, wantInWhy: "the fabric has only 16 nodes"},
		{name: "no brick without transit", topo: "torus:4x4", busy: []string{"0.0"}, req: Request{Nodes: 7}, want: Never, wantInWhy: "no brick"},
		{name: "busy now", topo: "torus:4x4", busy: []string{"0.0", "2.2"}, req: Request{Nodes: 12}, want: NotNow, wantInWhy: "no reachable set"},
		{name: "no time for the check", topo: "torus:4x4", busy: []string{"0.0", "2.2"}, req: Request{Nodes: 12}, want: NotNow, budgetAfter: -1},
		{name: "failed nodes rule every brick out", topo: "torus:4x4", fail: "0.0,2.2", busy: []string{"1.3"}, req: Request{Nodes: 12}, want: Never, wantInWhy: "even with no job running"},
		{name: "failed nodes, no job", topo: "torus:4x4", fail: "0.0,2.2", req: Request{Nodes: 12}, want: Never, wantInWhy: "no job runs"},
		{name: "budget too short", topo: "torus:8x8x8", req: Request{Nodes: 64, Budget: time.Nanosecond}, want: OutOfTime, wantInWhy: "placements examined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := topology.Parse(tc.topo)
			if err != nil {
				t.Fatal(err)
			}
			if g, err = g.ApplyFaults("", tc.fail); err != nil {
				t.Fatal(err)
			}
			s, err := NewState(g)
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.busy) > 0 {
				nodes, err := g.ParseNodes(strings.Join(tc.busy, ","))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Occupy(1, nodes); err != nil {
					t.Fatal(err)
				}
			}
			rt, err := NewAngaraRouter(g, "angara*")
			if err != nil {
				t.Fatal(err)
			}
			var res *Result
			sel := NewSelector(s)
			if Impossible(s, tc.req) == "" {
				if res, err = sel.SelectContext(ctx, s, rt, tc.req); err != nil {
					t.Fatal(err)
				}
			} else {
				res = &Result{Request: tc.req, Exhaustive: true} // refused before any work
			}
			v, why := sel.Explain(ctx, s, rt, tc.req, res, tc.budgetAfter)
			if v != tc.want || !strings.Contains(why, tc.wantInWhy) || (res.Chosen != nil) != tc.wantChosen {
				t.Fatalf("verdict %d %q (chosen %v), want %d naming %q", v, why, res.Chosen != nil, tc.want, tc.wantInWhy)
			}
		})
	}
}
