package sched

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/topology"
)

// docRow returns the cells of the table row of docs/alloc.md that follows
// the heading and starts with the given cells.
func docRow(t *testing.T, heading string, start ...string) []string {
	t.Helper()
	b, err := os.ReadFile("../docs/alloc.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), heading)
	if !ok {
		t.Fatalf("docs/alloc.md has no heading %q", heading)
	}
	prefix := "| " + strings.Join(start, " | ") + " |"
	for _, line := range strings.Split(after, "\n") {
		if strings.HasPrefix(line, prefix) {
			var cells []string
			for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
				cells = append(cells, strings.TrimSpace(c))
			}
			return cells
		}
	}
	t.Fatalf("no row %q under %q", prefix, heading)
	return nil
}

func angaraRouter(g *topology.Graph) (alloc.Router, error) {
	return alloc.NewAngaraRouter(g, "angara*")
}

// docOptions are the experiments' options as docs/alloc.md runs them
// (the CLI's defaults with --seed 1).
func docOptions(t *testing.T, sample int) ExperimentOptions {
	p, err := ParseSynthetic("load=0.8,span=4mo")
	if err != nil {
		t.Fatal(err)
	}
	return ExperimentOptions{Seed: 1, Stream: p, TransitFrac: 1, SampleEvery: sample}
}

// The 4x4x2 rows of the solutions and utilization tables of
// docs/alloc.md reproduce exactly at HEAD.
func TestDocRowsReproduce(t *testing.T) {
	if testing.Short() {
		t.Skip("recomputes two rows of docs/alloc.md")
	}
	t.Run("solutions", func(t *testing.T) {
		t.Parallel()
		row := docRow(t, "### Solutions found", "4x4x2", "32")
		sol, err := Solutions([]string{"4x4x2"}, docOptions(t, 5), angaraRouter)
		if err != nil {
			t.Fatal(err)
		}
		s := sol[0]
		got := []string{s.Network, fmt.Sprint(s.Nodes), fmt.Sprint(s.Attempts), fmt.Sprintf("%.2f", s.BaselineMean), fmt.Sprintf("%.2f", s.ImprovedMean), fmt.Sprintf("%.2f", s.Ratio)}
		if strings.Join(got, " | ") != strings.Join(row[:6], " | ") {
			t.Errorf("solutions row: docs %v, now %v (regenerate with the command above the table)", row[:6], got)
		}
	})
	t.Run("utilization", func(t *testing.T) {
		t.Parallel()
		row := docRow(t, "### Utilization and T_mean", "4x4x2", "1")
		rows, err := Utilization([]string{"4x4x2"}, []int{1}, false, docOptions(t, 1), angaraRouter)
		if err != nil {
			t.Fatal(err)
		}
		u := Summarize(rows)[0]
		got := []string{u.Network, fmt.Sprint(u.Window), fmt.Sprintf("%.2f%%", 100*u.BaselineU), fmt.Sprintf("%.2f%%", 100*u.ImprovedU),
			fmt.Sprintf("%+.2f", u.GainPoints), fmt.Sprintf("%.1f", u.BaselineT), fmt.Sprintf("%.1f", u.ImprovedT), fmt.Sprintf("%.2f", u.TMeanRatio)}
		if strings.Join(got, " | ") != strings.Join(row[:8], " | ") {
			t.Errorf("utilization row: docs %v, now %v (regenerate with the command above the table)", row[:8], got)
		}
	})
}
