package routing

import (
	"context"
	"sync/atomic"

	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/topology"
)

// BalanceOptions configure the table-quality comparison of seed 001 §5.2.
type BalanceOptions struct {
	MaxNodes int  `json:"max_nodes"` // default 128
	MaxSize  int  `json:"max_size"`  // default 8
	MinDims  int  `json:"min_dims"`  // default 2
	MaxDims  int  `json:"max_dims"`  // default 4
	Sorted   bool `json:"sorted"`
	// Rule is the rule of the BFS tables (the baseline's routes obey
	// every rule); the zero value is dor, so set it (angara* in the CLI).
	Rule     Rule                  `json:"-"`
	Workers  int                   `json:"-"`
	Progress func(done, total int) `json:"-"`
}

// SeedBalanceLoss is the seed's figure: on fault-free tori with N ≤ 128,
// all nodes active, the BFS balance factor is on average 13 (at most 30)
// percentage points worse than the baseline's.
var SeedBalanceLoss = [2]float64{13, 30}

// BalanceTorus is one torus of the comparison.
type BalanceTorus struct {
	Dims     []int   `json:"dims"`
	BFS      Figures `json:"bfs"`
	Baseline Figures `json:"baseline"`
	Loss     float64 `json:"loss"` // BFS − baseline balance factor, points
}

// BalanceRow summarises one dimensionality (Dims 0: all tori).
type BalanceRow struct {
	Dims         int     `json:"n"`
	Tori         int     `json:"tori"`
	MeanBFS      float64 `json:"bfs_balance_factor"`
	MeanBaseline float64 `json:"baseline_balance_factor"`
	MeanLoss     float64 `json:"mean_loss"`
	MaxLoss      float64 `json:"max_loss"`
}

// BalanceReport is the comparison's result.
type BalanceReport struct {
	Rule     string         `json:"rules"`
	Rows     []BalanceRow   `json:"rows"`
	Tori     []BalanceTorus `json:"tori"`
	SeedMean float64        `json:"seed_mean_loss"`
	SeedMax  float64        `json:"seed_max_loss"`
}

// BalanceExperiment builds the BFS and the baseline table of every
// fault-free torus of the set with all nodes active and compares their
// balance factors. It has no randomness.
func BalanceExperiment(o BalanceOptions) (*BalanceReport, error) {
	fo := FaultOptions{MaxNodes: o.MaxNodes, MaxSize: o.MaxSize, MinDims: o.MinDims, MaxDims: o.MaxDims, Sorted: o.Sorted}
	shapes, err := FaultTori(fo)
	if err != nil {
		return nil, err
	}
	out := make([]BalanceTorus, len(shapes))
	errs := make([]error, len(shapes))
	var done atomic.Int64
	par.For(len(shapes), o.Workers, func(_, i int) {
		out[i], errs[i] = compareBalance(shapes[i], o.Rule)
		if o.Progress != nil {
			o.Progress(int(done.Add(1)), len(shapes))
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	rep := &BalanceReport{Rule: o.Rule.String(), Tori: out, SeedMean: SeedBalanceLoss[0], SeedMax: SeedBalanceLoss[1]}
	rep.Rows = balanceRows(out)
	return rep, nil
}

// wholeTorus is a router on the fault-free torus of the given shape and
// the list of all its nodes (the comparisons' set: every node active).
func wholeTorus(shape []int, rule Rule) (*Router, []int, error) {
	g, err := topology.Grid(shape, true, topology.GridOpts{})
	if err != nil {
		return nil, nil, err
	}
	r, err := NewRouter(g, rule)
	if err != nil {
		return nil, nil, err
	}
	all := make([]int, g.NumNodes())
	for v := range all {
		all[v] = v
	}
	return r, all, nil
}

// compareBalance builds the BFS and the baseline table of the whole torus
// of the given shape and returns both statistics and the loss of balance.
func compareBalance(shape []int, rule Rule) (BalanceTorus, error) {
	r, all, err := wholeTorus(shape, rule)
	if err != nil {
		return BalanceTorus{}, err
	}
	bt := BalanceTorus{Dims: shape}
	for k, algo := range []Algo{BFS, Baseline} {
		tb, err := r.Build(context.Background(), all, nil, BuildOptions{Algo: algo})
		if err != nil {
			return BalanceTorus{}, err
		}
		if k == 0 {
			bt.BFS = tb.Figures
		} else {
			bt.Baseline = tb.Figures
		}
	}
	bt.Loss = bt.BFS.BalanceFactor - bt.Baseline.BalanceFactor
	return bt, nil
}

// balanceRows averages the tori per dimension count (rows 1…MaxDims that
// occur) and over all of them (a last row with Dims 0).
func balanceRows(out []BalanceTorus) []BalanceRow {
	rows := map[int]*BalanceRow{}
	for _, bt := range out {
		for _, key := range []int{len(bt.Dims), 0} {
			row := rows[key]
			if row == nil {
				row = &BalanceRow{Dims: key, MaxLoss: bt.Loss}
				rows[key] = row
			}
			row.Tori++
			row.MeanBFS += bt.BFS.BalanceFactor
			row.MeanBaseline += bt.Baseline.BalanceFactor
			row.MeanLoss += bt.Loss
			row.MaxLoss = max(row.MaxLoss, bt.Loss)
		}
	}
	var res []BalanceRow
	for n := 1; n <= MaxDims; n++ {
		if row := rows[n]; row != nil {
			res = append(res, *row)
		}
	}
	if row := rows[0]; row != nil {
		res = append(res, *row)
	}
	for i := range res {
		row := &res[i]
		f := float64(row.Tori)
		row.MeanBFS /= f
		row.MeanBaseline /= f
		row.MeanLoss /= f
	}
	return res
}
