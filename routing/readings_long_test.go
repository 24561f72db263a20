//go:build long

package routing

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
)

// aggregations of one fault report, per dimensionality.
func readingLine(rep *FaultReport, tori [][]int) string {
	o := rep.Options
	type acc struct {
		ratioSum  float64
		ratioN    int
		torRatio  float64
		torN      int
		lossRatio float64
		ratios    []float64
	}
	by := map[int]*acc{}
	for ti, d := range tori {
		a := by[len(d)]
		if a == nil {
			a = &acc{}
			by[len(d)] = a
		}
		tr, tn := 0.0, 0
		for k := 0; k < o.Trials; k++ {
			p := rep.Trials[ti*o.Trials+k]
			if p[0] > 0 {
				r := float64(p[1])/float64(p[0]) - 1
				a.ratioSum += r
				a.ratioN++
				a.ratios = append(a.ratios, r)
				tr += r
				tn++
			}
		}
		if tn > 0 {
			a.torRatio += tr / float64(tn)
			a.torN++
		}
		ft := rep.Tori[ti]
		a.lossRatio += (ft.Star+1)/(ft.Minus+1) - 1
	}
	s := ""
	for _, r := range rep.Rows {
		a := by[r.Dims]
		sort.Float64s(a.ratios)
		s += fmt.Sprintf("\n   %dD gain %5.1f  pooled %5.1f  trial-ratio %5.1f  torus-trial-ratio %5.1f  median-trial %5.1f  at-loss %5.1f  (−%.2f *%.2f)",
			r.Dims, r.Gain, r.GainOfMeans, 100*a.ratioSum/float64(a.ratioN), 100*a.torRatio/float64(a.torN),
			100*a.ratios[len(a.ratios)/2], 100*a.lossRatio/float64(r.Tori), r.MinusMean, r.StarMean)
	}
	return s
}

func TestRAStarReadings(t *testing.T) {
	trials := 5
	if s := os.Getenv("ICN_TRIALS"); s != "" {
		trials, _ = strconv.Atoi(s)
	}
	sorted := os.Getenv("ICN_SORTED") != ""
	variants := []struct {
		name string
		v    starVariant
	}{
		{"current", starVariant{}},
		{"all candidates", starVariant{allCandidates: true}},
		{"static (unsound)", starVariant{static: true}},
		{"R_A (upper bound)", starVariant{ruleA: true}},
	}
	for _, unit := range []string{"channel", "link"} {
		for _, v := range variants {
			o := FaultOptions{Seed: 1, Trials: trials, Sorted: sorted, Unit: unit, variant: v.v}
			rep, err := FaultExperiment(o)
			if err != nil {
				t.Fatal(err)
			}
			tori, _ := FaultTori(o)
			t.Logf("%s %s:%s", unit, v.name, readingLine(rep, tori))
		}
	}
}
