//go:build long

package routing

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestGeneticExperiment compares BFS, baseline and genetic tables on every
// fault-free torus with N ≤ 48, 2 ≤ d_i ≤ 8 and 1 ≤ n ≤ 4 (all nodes
// active, angara*, genetic seed 1 with the default population and
// generation limit and no time limit) and prints the table of
// docs/routing.md. ICN_GA_GENERATIONS and ICN_GA_POPULATION change the
// run for quick iterations.
//
//	go test -tags long -run TestGeneticExperiment -v -timeout 1h ./routing
func TestGeneticExperiment(t *testing.T) {
	o := GeneticExperimentOptions{Rule: Rule{Kind: AngaraStar}, Genetic: GeneticOptions{Seed: 1}}
	if v, err := strconv.Atoi(os.Getenv("ICN_GA_GENERATIONS")); err == nil {
		o.Genetic.Generations = v
	}
	if v, err := strconv.Atoi(os.Getenv("ICN_GA_POPULATION")); err == nil {
		o.Genetic.Population = v
	}
	rep, err := GeneticExperiment(o)
	if err != nil {
		t.Fatal(err)
	}
	stops := map[string]int{}
	for _, gt := range rep.Tori {
		if gt.Genetic.PiMax > gt.BFS.PiMax {
			t.Errorf("%v: genetic π_max %d above BFS's %d", gt.Dims, gt.Genetic.PiMax, gt.BFS.PiMax)
		}
		stops[gt.Stop]++
		t.Logf("%v: BFS %.2f %%, baseline %.2f %%, genetic %.2f %% (%d generations, %s, %.2f s)", gt.Dims, gt.BFS.BalanceFactor, gt.Baseline.BalanceFactor, gt.Genetic.BalanceFactor, gt.Generations, gt.Stop, gt.Seconds)
	}
	t.Logf("stops: %v\n%s", stops, geneticTable(rep.Rows))
	var no2 []GeneticTorus
	for _, gt := range rep.Tori {
		if !slices.Contains(gt.Dims, 2) {
			no2 = append(no2, gt)
		}
	}
	t.Logf("tori without rings of size 2:\n%s", geneticTable(geneticRows(no2)))
}

// geneticTable writes the rows as the Markdown table of docs/routing.md.
func geneticTable(rows []GeneticRow) string {
	var b strings.Builder
	fmt.Fprintln(&b, "| tori | BFS | baseline | genetic | BFS − genetic, mean / max (points) | BFS − baseline, mean / max (points) | π_max BFS/genetic − 1, mean / max | π_max BFS/baseline − 1, mean / max | genetic better / worse than baseline | genetic time, mean / max |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		name := fmt.Sprintf("%dD", r.Dims)
		switch r.Dims {
		case 0:
			name = "all"
		case -1:
			name = "2D–4D"
		}
		fmt.Fprintf(&b, "| %s: %d | %.1f %% | %.1f %% | %.1f %% | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f %% | %.1f / %.1f %% | %d / %d | %.2f / %.2f s |\n",
			name, r.Tori, r.MeanBFS, r.MeanBaseline, r.MeanGenetic, r.MeanLossGenetic, r.MaxLossGenetic, r.MeanLossBaseline, r.MaxLossBaseline,
			r.MeanRatioGenetic, r.MaxRatioGenetic, r.MeanRatioBaseline, r.MaxRatioBaseline, r.GeneticBeatsBase, r.GeneticWorseThanBase, r.MeanSeconds, r.MaxSeconds)
	}
	return b.String()
}
