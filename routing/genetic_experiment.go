package routing

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/icn-hpc/icn/internal/par"
)

// SeedGeneticLoss is the seed's figure (001 §5.2): on fault-free tori,
// all nodes active, the BFS balance factor is on average 32 % (at most
// 36 %) worse than the genetic algorithm's.
var SeedGeneticLoss = [2]float64{32, 36}

// GeneticExperimentOptions configure the comparison of BFS, baseline and
// genetic tables on fault-free tori (seed 001 §5.2 with §3.3).
type GeneticExperimentOptions struct {
	MaxNodes int // N = Πd_i ≤ MaxNodes (default 48, where the seed's genetic algorithm still fits 10 s)
	MaxSize  int // d_i ≤ MaxSize (default 8)
	MinDims  int // default 1
	MaxDims  int // default 4
	Rule     Rule
	// Genetic are the options of every genetic run; Workers inside it is
	// forced to 1 (the tori run in parallel) and a zero TimeLimit means
	// none, so the result depends only on the options.
	Genetic  GeneticOptions
	Workers  int
	Progress func(done, total int)
}

// GeneticTorus is one torus of the comparison.
type GeneticTorus struct {
	Dims        []int   `json:"dims"`
	BFS         Figures `json:"bfs"`
	Baseline    Figures `json:"baseline"`
	Genetic     Figures `json:"genetic"`
	Generations int     `json:"generations"`
	Stop        string  `json:"stop"`
	Seconds     float64 `json:"seconds"` // the genetic run, BFS table and verification included
}

// LossVsGenetic is BFS − genetic balance factor, in percentage points.
func (g GeneticTorus) LossVsGenetic() float64 {
	return g.BFS.BalanceFactor - g.Genetic.BalanceFactor
}

// LossVsBaseline is BFS − baseline balance factor, in percentage points.
func (g GeneticTorus) LossVsBaseline() float64 {
	return g.BFS.BalanceFactor - g.Baseline.BalanceFactor
}

// GeneticRow summarises the tori of one dimensionality (Dims > 0), of
// the seed's set 2 ≤ n ≤ 4 (Dims −1) or of all of them (Dims 0). Losses
// are in percentage points of the balance factor; the "Ratio" figures
// are the relative losses π_max(BFS)/π_max(other) − 1, in %.
type GeneticRow struct {
	Dims                 int     `json:"n"`
	Tori                 int     `json:"tori"`
	MeanBFS              float64 `json:"bfs_balance_factor"`
	MeanBaseline         float64 `json:"baseline_balance_factor"`
	MeanGenetic          float64 `json:"genetic_balance_factor"`
	MeanLossGenetic      float64 `json:"mean_loss_vs_genetic"`
	MaxLossGenetic       float64 `json:"max_loss_vs_genetic"`
	MeanLossBaseline     float64 `json:"mean_loss_vs_baseline"`
	MaxLossBaseline      float64 `json:"max_loss_vs_baseline"`
	MeanRatioGenetic     float64 `json:"mean_ratio_vs_genetic"`
	MaxRatioGenetic      float64 `json:"max_ratio_vs_genetic"`
	MeanRatioBaseline    float64 `json:"mean_ratio_vs_baseline"`
	MaxRatioBaseline     float64 `json:"max_ratio_vs_baseline"`
	GeneticBeatsBase     int     `json:"genetic_better_than_baseline"`
	GeneticWorseThanBase int     `json:"genetic_worse_than_baseline"`
	MeanSeconds          float64 `json:"mean_seconds"`
	MaxSeconds           float64 `json:"max_seconds"`
}

// GeneticReport is the comparison's result.
type GeneticReport struct {
	Rule string         `json:"rules"`
	Rows []GeneticRow   `json:"rows"`
	Tori []GeneticTorus `json:"tori"`
}

// GeneticExperiment builds the BFS, baseline and genetic table of every
// fault-free torus of the set, all nodes active, and compares their
// balance factors. The tori run in parallel, each genetic run on one
// goroutine; the tables do not depend on Workers.
func GeneticExperiment(o GeneticExperimentOptions) (*GeneticReport, error) {
	if o.MaxNodes == 0 {
		o.MaxNodes = 48
	}
	if o.MinDims == 0 {
		o.MinDims = 1
	}
	if o.Genetic.TimeLimit == 0 {
		o.Genetic.TimeLimit = -1
	}
	shapes, err := FaultTori(FaultOptions{MaxNodes: o.MaxNodes, MaxSize: o.MaxSize, MinDims: o.MinDims, MaxDims: o.MaxDims})
	if err != nil {
		return nil, err
	}
	out := make([]GeneticTorus, len(shapes))
	errs := make([]error, len(shapes))
	var done atomic.Int64
	par.For(len(shapes), o.Workers, func(_, i int) {
		out[i], errs[i] = compareGenetic(shapes[i], o.Rule, o.Genetic)
		if o.Progress != nil {
			o.Progress(int(done.Add(1)), len(shapes))
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return &GeneticReport{Rule: o.Rule.String(), Tori: out, Rows: geneticRows(out)}, nil
}

// compareGenetic builds the three tables of one whole fault-free torus.
func compareGenetic(shape []int, rule Rule, o GeneticOptions) (GeneticTorus, error) {
	r, all, err := wholeTorus(shape, rule)
	if err != nil {
		return GeneticTorus{}, err
	}
	gt := GeneticTorus{Dims: shape}
	base, err := r.Build(context.Background(), all, nil, BuildOptions{Algo: Baseline})
	if err != nil {
		return GeneticTorus{}, err
	}
	start := time.Now()
	tb, err := r.Build(context.Background(), all, nil, BuildOptions{Algo: Genetic, Workers: 1, Genetic: o})
	if err != nil {
		return GeneticTorus{}, fmt.Errorf("torus %v: %w", shape, err)
	}
	run := tb.GeneticRun
	gt.Seconds = time.Since(start).Seconds()
	gt.BFS, gt.Baseline, gt.Genetic = run.BFS, base.Figures, tb.Figures
	gt.Generations, gt.Stop = run.Generations, run.Stop
	return gt, nil
}

// geneticRows averages the tori per dimensionality, over the seed's set
// (2 ≤ n ≤ 4) and over all of them.
func geneticRows(out []GeneticTorus) []GeneticRow {
	rows := map[int]*GeneticRow{}
	for _, gt := range out {
		keys := []int{len(gt.Dims), 0}
		if len(gt.Dims) >= 2 {
			keys = append(keys, -1)
		}
		for _, key := range keys {
			row := rows[key]
			if row == nil {
				row = &GeneticRow{Dims: key, MaxLossGenetic: gt.LossVsGenetic(), MaxLossBaseline: gt.LossVsBaseline(), MaxRatioGenetic: -1e9, MaxRatioBaseline: -1e9}
				rows[key] = row
			}
			row.add(gt)
		}
	}
	var res []GeneticRow
	for _, key := range []int{1, 2, 3, 4, 5, 6, -1, 0} {
		if row := rows[key]; row != nil {
			f := float64(row.Tori)
			row.MeanBFS /= f
			row.MeanBaseline /= f
			row.MeanGenetic /= f
			row.MeanLossGenetic /= f
			row.MeanLossBaseline /= f
			row.MeanRatioGenetic /= f
			row.MeanRatioBaseline /= f
			row.MeanSeconds /= f
			res = append(res, *row)
		}
	}
	return res
}

func (row *GeneticRow) add(gt GeneticTorus) {
	ratio := func(a, b Figures) float64 { return (float64(a.PiMax)/float64(b.PiMax) - 1) * 100 }
	lg, lb := gt.LossVsGenetic(), gt.LossVsBaseline()
	rg, rb := ratio(gt.BFS, gt.Genetic), ratio(gt.BFS, gt.Baseline)
	row.Tori++
	row.MeanBFS += gt.BFS.BalanceFactor
	row.MeanBaseline += gt.Baseline.BalanceFactor
	row.MeanGenetic += gt.Genetic.BalanceFactor
	row.MeanLossGenetic += lg
	row.MaxLossGenetic = max(row.MaxLossGenetic, lg)
	row.MeanLossBaseline += lb
	row.MaxLossBaseline = max(row.MaxLossBaseline, lb)
	row.MeanRatioGenetic += rg
	row.MaxRatioGenetic = max(row.MaxRatioGenetic, rg)
	row.MeanRatioBaseline += rb
	row.MaxRatioBaseline = max(row.MaxRatioBaseline, rb)
	switch {
	case gt.Genetic.PiMax < gt.Baseline.PiMax:
		row.GeneticBeatsBase++
	case gt.Genetic.PiMax > gt.Baseline.PiMax:
		row.GeneticWorseThanBase++
	}
	row.MeanSeconds += gt.Seconds
	row.MaxSeconds = max(row.MaxSeconds, gt.Seconds)
}
