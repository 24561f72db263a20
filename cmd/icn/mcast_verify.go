package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/multicast"
	"github.com/icn-hpc/icn/topology"
	"github.com/spf13/cobra"
)

// mcastVerifyOptions are the flags of `icn mcast verify`.
type mcastVerifyOptions struct {
	topo  topoFlags
	out   output
	trees string
}

// mcastVerifyRow is one engine's result in `icn mcast verify`.
type mcastVerifyRow struct {
	Algo string `json:"algo"`
	multicast.EFIStats
	MaxHeight int  `json:"max_height"`
	Groups    int  `json:"groups"`
	Matches   bool `json:"matches_recorded_max_efi"`
	// RecordedMaxEFI and RecordedMaxHeight are the figures in the file.
	RecordedMaxEFI    int `json:"recorded_max_efi"`
	RecordedMaxHeight int `json:"recorded_max_height"`
}

func newMcastVerifyCmd() *cobra.Command {
	var o mcastVerifyOptions
	c := &cobra.Command{
		Use:   "verify",
		Short: "Re-verify a --trees-out file against the fabric and recompute the EFI from its edges",
		Long: `Rebuild every tree of a --trees-out file on the fabric, verify it (a tree rooted
at a working switch, reaching every member, of minimal height for its root) and
recompute the per-link EFI from the edges. Exit status 1 when a tree is invalid
or when the recomputed max EFI or max height differs from the figure recorded
in the file (the table or JSON is printed first).`,
		Example: `  icn mcast --topo bluelight --groups grid2d:128x68 --trees-out t.json
  icn mcast verify --topo bluelight --trees t.json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runMcastVerify(c.Context(), o, stdout(c))
		},
	}
	o.topo.register(c, "topo", "")
	o.out.register(c)
	c.Flags().StringVar(&o.trees, "trees", "", "trees file written by --trees-out")
	return c
}

// runMcastVerify checks every run of the trees file; it prints one row per
// engine and fails (exit 1) on an invalid tree or a figure that differs
// from the file's.
func runMcastVerify(_ context.Context, o mcastVerifyOptions, w io.Writer) error {
	if o.trees == "" {
		return fmt.Errorf("no trees file given (use --trees FILE)")
	}
	f, err := os.Open(o.trees)
	if err != nil {
		return err
	}
	defer f.Close()
	tfile, err := multicast.ReadTrees(f)
	if err != nil {
		return err
	}
	if o.topo.spec == "" {
		o.topo.spec = tfile.Topo
	}
	g, err := loadMcastTopo(&o.topo)
	if err != nil {
		return err
	}
	h, err := topology.MinHops(g, 0)
	if err != nil {
		return err
	}
	var rows []mcastVerifyRow
	var mismatches []string
	for i := range tfile.Runs {
		run := &tfile.Runs[i]
		gs, ts, err := run.Resolve(g)
		if err != nil {
			return &exitError{1, err}
		}
		st, ht, err := multicast.CheckRun(h, gs, ts)
		if err != nil {
			return &exitError{1, fmt.Errorf("run %s: %v", run.Algo, err)}
		}
		row := mcastVerifyRow{Algo: run.Algo, EFIStats: st, MaxHeight: ht, Groups: len(gs),
			Matches: st.Max == run.MaxEFI && ht == run.MaxHeight, RecordedMaxEFI: run.MaxEFI, RecordedMaxHeight: run.MaxHeight}
		if !row.Matches {
			mismatches = append(mismatches, fmt.Sprintf("run %s: recomputed max EFI %d, max height %d; the file says %d, %d",
				run.Algo, st.Max, ht, run.MaxEFI, run.MaxHeight))
		}
		rows = append(rows, row)
	}
	if err := o.out.print(w, rows, func(w io.Writer) error { return writeMcastVerifyTable(w, rows) }); err != nil {
		return err
	}
	if len(mismatches) > 0 {
		return &exitError{1, fmt.Errorf("%s", strings.Join(mismatches, "; "))}
	}
	return nil
}

func writeMcastVerifyTable(w io.Writer, rows []mcastVerifyRow) error {
	t := cli.NewTable("algo", "groups", "trees", "max EFI", "recorded", "mean EFI", "max height", "recorded", "matches file")
	for _, r := range rows {
		t.Row(r.Algo, r.Groups, "all valid", r.Max, r.RecordedMaxEFI, r.Mean, r.MaxHeight, r.RecordedMaxHeight, r.Matches)
	}
	return t.Write(w)
}
