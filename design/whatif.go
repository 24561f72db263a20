package design

import (
	"fmt"

	"github.com/icn-hpc/icn/multiring"
)

// WhatIf is one line of a what-if comparison: our figure next to the seed's.
type WhatIf struct {
	Section string  `json:"section"` // seed section
	Item    string  `json:"item"`
	Network string  `json:"network"`
	Ours    float64 `json:"ours"`
	Seed    float64 `json:"seed"`        // 0 if the seed gives no number
	Source  string  `json:"seed_source"` // how the seed got its number
	Note    string  `json:"note,omitempty"`
}

// Gemini computes the seed's Gemini what-ifs (§3 full multirings, §8
// sparse multirings) analytically: effective capacity N(N-1)/L of each
// torus dimension under uniform traffic. The seed's §3 figures come from
// simulation (its table 2.3 value 21.8 is analytic).
func Gemini() ([]WhatIf, error) {
	var out []WhatIf
	capOf := func(n int, steps string, copies int, sched string) (float64, error) {
		ss, err := multiring.ParseSteps(steps)
		if err != nil {
			return 0, err
		}
		m, err := multiring.NewCopies(n, ss, copies)
		if err != nil {
			return 0, err
		}
		s, err := m.Schedule(sched)
		if err != nil {
			return 0, err
		}
		return s.Effective(), nil
	}
	type row struct {
		sec, item   string
		n           int
		steps       string
		copies      int
		sched       string
		seed        float64
		source      string
		note        string
		networkName string
	}
	rows := []row{
		{"§3", "z: Gemini, two ±1 rings", 16, "±1", 2, multiring.Balanced, 15, "simulation", "analytic value; shortest = balanced here", ""},
		{"§3", "z: multiring, shortest schedule", 16, "±1,±3", 1, multiring.Shortest, 20, "analytic (table 2.2)", "", ""},
		{"§3", "z: multiring, balanced schedule", 16, "±1,±3", 1, multiring.Balanced, 21.8, "analytic (table 2.3)", "1.45× the ±1 rings", ""},
		{"§3", "x,y: Gemini, four ±1 rings", 32, "±1", 4, multiring.Balanced, 30.5, "simulation", "analytic value", ""},
		{"§3", "x,y: multiring, shortest schedule", 32, "±1,±2,±3,±7", 1, multiring.Shortest, 58, "simulation", "", ""},
		{"§3", "x,y: multiring, balanced schedule", 32, "±1,±2,±3,±7", 1, multiring.Balanced, 65, "simulation, rounded", "analytic balanced heuristic; the seed's simulated figure is lower", ""},
		{"§3", "x,y: multiring, optimal schedule (LP)", 32, "±1,±2,±3,±7", 1, multiring.Optimal, 0, "", "upper limit of any schedule", ""},
		{"§3", "x,y: N=37, four ±1 rings", 37, "±1", 4, multiring.Balanced, 0, "", "", ""},
		{"§3", "x,y: N=37 multiring, balanced", 37, "±1,±2,±3,±7", 1, multiring.Balanced, 66, "simulation", "prime N: ±2 is one full ring", ""},
		{"§3", "x,y: N=64, four ±1 rings", 64, "±1", 4, multiring.Balanced, 0, "", "", ""},
		{"§3", "x,y: N=64 multiring, balanced", 64, "±1,±2,±3,±7", 1, multiring.Balanced, 66, "simulation", "", ""},
		{"§3", "x,y: N=67, four ±1 rings", 67, "±1", 4, multiring.Balanced, 0, "", "", ""},
		{"§3", "x,y: N=67 multiring, balanced", 67, "±1,±2,±3,±7", 1, multiring.Balanced, 65, "simulation", "", ""},
	}
	for _, r := range rows {
		c, err := capOf(r.n, r.steps, r.copies, r.sched)
		if err != nil {
			return nil, err
		}
		ss, _ := multiring.ParseSteps(r.steps)
		name := fmt.Sprintf("N=%d %s", r.n, multiring.FormatSteps(r.n, ss))
		if r.copies > 1 {
			name = fmt.Sprintf("N=%d %d×{±1}", r.n, r.copies)
		}
		out = append(out, WhatIf{Section: r.sec, Item: "effective capacity, " + r.item, Network: name, Ours: c, Seed: r.seed, Source: r.source, Note: r.note})
	}
	out = append(out, WhatIf{Section: "§3", Item: "cable of {±1,±2,±3,±7} / four ±1 rings (laid along ±1)", Network: "N=32",
		Ours: float64(multiring.Cable([]int{1, 2, 3, 7})) / 4, Seed: 3.25, Source: "analytic"})
	// §8: sparse multirings
	z, err := NewSparse(10, 2)
	if err != nil {
		return nil, err
	}
	xy, err := NewSparse(12, 4)
	if err != nil {
		return nil, err
	}
	for _, s := range []struct {
		sp   *Sparse
		dim  string
		seed float64
	}{{z, "z", 22.5}, {xy, "x,y", 97.5}} {
		nc, err := s.sp.RingNet().Capacity()
		if err != nil {
			return nil, err
		}
		net := fmt.Sprintf("smr:K=%d,m=%d (%d duplex rings)", s.sp.K, s.sp.M, s.sp.Rings)
		out = append(out,
			WhatIf{Section: "§8", Item: s.dim + ": subscribers of the sparse multiring", Network: net, Ours: float64(s.sp.Subscribers), Seed: float64(map[string]int{"z": 15, "x,y": 39}[s.dim]), Source: "construction"},
			WhatIf{Section: "§8", Item: s.dim + ": effective capacity, shortest schedule", Network: net, Ours: nc.Effective, Seed: s.seed, Source: "estimate: rings × 7.5",
				Note: fmt.Sprintf("one duplex ring of %d: %.3g; rings × that = %.4g", s.sp.K, nc.RingCapacity[0], float64(s.sp.Rings)*nc.RingCapacity[0])})
	}
	nodes := z.Subscribers * xy.Subscribers * xy.Subscribers
	out = append(out,
		WhatIf{Section: "§8", Item: "nodes of the sparse-multiring 3D torus (z × x × y)", Network: fmt.Sprintf("%d×%d×%d", z.Subscribers, xy.Subscribers, xy.Subscribers), Ours: float64(nodes), Seed: 22815, Source: "construction", Note: "Gemini: 16×32×32 = 16384"},
		WhatIf{Section: "§8", Item: "duplex ports per node (2m per dimension)", Network: "z m=2, x,y m=4", Ours: float64(2*z.M + 2*xy.M + 2*xy.M), Seed: 20, Source: "construction", Note: "same as Gemini: 2·2 + 2·4 + 2·4"},
	)
	return out, nil
}

// BlueWaters computes the seed's Blue Waters what-ifs (§5–6) from the
// constructions, building and checking every design it counts on.
func BlueWaters() ([]WhatIf, error) {
	const k2, k3 = 24, 16 // K2 and K3 channels per node
	var out []WhatIf
	// §5: supernode from DFS(39,7,1|2)
	if _, err := Construct(43, 7, 1, Options{}); err == nil {
		return nil, fmt.Errorf("B(43,7,1) should not exist")
	}
	st, _ := Classify(43, 7, 1, Options{})
	out = append(out, WhatIf{Section: "§5", Item: "B(43,7,1) for a 43-node supernode", Network: "DFS(43,7,1)", Source: "theory", Note: st.Status + ": " + st.Reason})
	q, err := Quasi(39, 7, 1, DefaultSearchBudget)
	if err != nil {
		return nil, err
	}
	g, err := DFSGraph(q, "dfs:N=39,m=7,lambda=1|2")
	if err != nil {
		return nil, err
	}
	th := CheckTwoHop(g, false, false, q.PairLambda)
	if th.Bad != 0 {
		return nil, fmt.Errorf("DFS(39,7,1|2): %s", th.FirstBad)
	}
	ext := 39 * (k2 + k3)
	out = append(out,
		WhatIf{Section: "§5", Item: "supernode DFS(39,7,1|2): nodes joined by K1 channels only", Network: fmt.Sprintf("difference set %v mod 39", q.DiffSet), Ours: 39, Seed: 39, Source: "construction",
			Note: fmt.Sprintf("checked: %d pairs, %d–%d two-hop paths (2 exactly for i±1, i±2)", th.Pairs, th.Min, th.Max)},
		WhatIf{Section: "§5", Item: "supernodes, one K2/K3 channel per supernode pair", Network: "39·(16+24)+1", Ours: float64(ext + 1), Seed: 1561, Source: "arithmetic", Note: "Blue Waters: 513"},
		WhatIf{Section: "§5", Item: "supernodes, two channels per supernode pair", Network: "39·40/2+1", Ours: float64(ext/2 + 1), Seed: 781, Source: "arithmetic"},
		WhatIf{Section: "§5", Item: "nodes, one channel per pair", Network: "1561·39", Ours: float64((ext + 1) * 39), Source: "arithmetic", Note: "not stated in the seed"},
	)
	// §5: digraph supernode of 49 nodes
	pairs7, err := checkedQCD(7)
	if err != nil {
		return nil, err
	}
	ext = 49 * (k2 + k3)
	out = append(out,
		WhatIf{Section: "§5", Item: "supernode as quasi-complete digraph (m=7)", Network: "qcd:m=7", Ours: 49, Seed: 49, Source: "construction", Note: fmt.Sprintf("checked: exactly one path for all %d ordered pairs", pairs7)},
		WhatIf{Section: "§5", Item: "supernodes, one channel per supernode pair", Network: "49·40+1", Ours: float64(ext + 1), Seed: 1960, Source: "arithmetic", Note: "the seed omits the +1 it uses for 1561"},
		WhatIf{Section: "§5", Item: "supernodes, two channels per supernode pair", Network: "49·40/2+1", Ours: float64(ext/2 + 1), Seed: 980, Source: "arithmetic", Note: "the seed omits the +1"},
	)
	// §6: quasi-complete graph of supernodes, M = 38
	d, err := Construct(1407, 38, 1, Options{})
	if err != nil {
		return nil, err
	}
	if v := d.Verify(); !v.OK {
		return nil, fmt.Errorf("B(1407,38,1): %v", v.Problems)
	}
	out = append(out,
		WhatIf{Section: "§6", Item: "supernodes with M=38 (plane of order 37)", Network: "B(1407,38,1), " + d.Construction, Ours: 1407, Seed: 1407, Source: "construction", Note: "built and verified; Blue Waters: 513"},
		WhatIf{Section: "§6", Item: "nodes, M=38", Network: "1407·38", Ours: 1407 * 38, Seed: 53466, Source: "arithmetic", Note: "Blue Waters: 16416"},
	)
	st39, _ := Classify(39*38+1, 39, 1, Options{})
	out = append(out, WhatIf{Section: "§6", Item: "M=39: B(1483,39,1) (order 38)", Network: "B(1483,39,1)", Source: "theory", Note: st39.Status + ": " + st39.Reason})
	// §6: quasi-complete digraph of supernodes, M = 49
	pairs49, err := checkedQCD(49)
	if err != nil {
		return nil, err
	}
	out = append(out,
		WhatIf{Section: "§6", Item: "supernodes, quasi-complete digraph M=49", Network: "qcd:m=49", Ours: 2401, Seed: 2401, Source: "construction", Note: fmt.Sprintf("checked: exactly one path for all %d ordered pairs", pairs49)},
		WhatIf{Section: "§6", Item: "nodes, M=49", Network: "2401·49", Ours: 2401 * 49, Seed: 117649, Source: "arithmetic"},
		WhatIf{Section: "§6", Item: "share of 2-hop inter-supernode paths, 16 K3 planes", Network: "16/38 vs Blue Waters 1/32", Ours: 16.0 / 38, Seed: 16.0 / 38, Source: "arithmetic"},
	)
	return out, nil
}

// checkedQCD builds the quasi-complete digraph of order m and checks that
// every ordered pair is joined by exactly one path of at most two hops; it
// returns the number of pairs checked.
func checkedQCD(m int) (int64, error) {
	q, err := NewQCD(m)
	if err != nil {
		return 0, err
	}
	name := fmt.Sprintf("qcd:m=%d", m)
	g, err := q.Graph(name)
	if err != nil {
		return 0, err
	}
	th := CheckTwoHop(g, true, true, func(a, b int) int { return 1 })
	if th.Bad != 0 {
		return 0, fmt.Errorf("%s: %s", name, th.FirstBad)
	}
	return th.Pairs, nil
}
