package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/sched"
	"github.com/icn-hpc/icn/topology"
	"github.com/spf13/cobra"
)

// torusState loads the network and the node-selection algorithm and makes
// an empty machine state on it.
func torusState(tf *topoFlags, algo string) (*topology.Graph, alloc.Algo, *alloc.State, error) {
	g, err := tf.load()
	if err != nil {
		return nil, "", nil, err
	}
	a, err := alloc.ParseAlgo(algo)
	if err != nil {
		return nil, "", nil, err
	}
	st, err := alloc.NewState(g)
	if err != nil {
		return nil, "", nil, err
	}
	return g, a, st, nil
}

// allocResultView is what icn alloc prints.
type allocResultView struct {
	*alloc.Result
	Rules    string   `json:"rules"`
	Active   []string `json:"active_nodes,omitempty"`
	Transit  []string `json:"transit_nodes,omitempty"`
	Hostlist string   `json:"hostlist,omitempty"`
}

func allocView(g *topology.Graph, res *alloc.Result, rules string) *allocResultView {
	v := &allocResultView{Result: res, Rules: rules}
	if res.Chosen != nil {
		for _, x := range res.Chosen.Active {
			v.Active = append(v.Active, g.NodeName(x))
		}
		for _, x := range res.Chosen.Transit {
			v.Transit = append(v.Transit, g.NodeName(x))
		}
	}
	return v
}

// writeAlloc prints the answer of icn alloc as a table.
func writeAlloc(w io.Writer, g *topology.Graph, v *allocResultView) error {
	r := v.Result
	t := cli.NewTable("FIELD", "VALUE")
	t.Row("request", fmt.Sprintf("%d active, ≤ %d transit, %s, rules %s", r.Request.Nodes, r.Request.Transit, r.Request.Algo, v.Rules))
	t.Row("candidates found", r.Found)
	t.Row("search", searchSummary(r.Exhaustive, r.Settled, r.Examined, r.Complete, r.Cut))
	c := r.Chosen
	if c == nil {
		t.Row("result", "no allocation: "+r.Reason)
		return t.Write(w)
	}
	t.Row("active", nodeSummary(g, c.Active, v.Active))
	t.Row("transit", nodeSummary(g, c.Transit, v.Transit))
	t.Row("rectangle", c.Rect.String()+fmt.Sprintf(" (%d unavailable inside)", c.Holes))
	t.Row("φ after", fmt.Sprintf("%d (largest free rectangle %d nodes ×%d)", c.Frag.Phi, c.Frag.LargestNodes, c.Frag.LargestCount))
	if c.Figures != nil {
		t.Row("table diameter", c.Figures.Diameter)
		t.Row("π_max / π_perfect", fmt.Sprintf("%d / %.3f (balance factor %.1f%%)", c.Figures.PiMax, c.Figures.PiPerfect, c.Figures.BalanceFactor))
	}
	t.Row("seconds", r.Seconds)
	return t.Write(w)
}

// searchSummary says how far a decision got: exhaustive, or cut by its
// budget and complete for which criteria.
func searchSummary(exhaustive, settled bool, examined, complete int, cut string) string {
	if exhaustive {
		return fmt.Sprintf("exhaustive (%d placements examined)", examined)
	}
	if settled && cut == "" {
		return fmt.Sprintf("settled after %d placements: no placement left could beat the set on criteria 1–2; ties ranked among the sets found", examined)
	}
	switch complete {
	case alloc.CompleteNone:
		return fmt.Sprintf("cut (%s) after %d placements: best of those examined", cut, examined)
	case alloc.CompleteTransit:
		return fmt.Sprintf("cut (%s) after all %d placements: fewest transit nodes (criterion 1); φ not computed for every candidate", cut, examined)
	}
	return fmt.Sprintf("cut (%s) after all %d placements: best under criteria 1–2; ties not all broken by tables", cut, examined)
}

// allocOptions are the flags of icn alloc.
type allocOptions struct {
	topo           topoFlags
	out            output
	nodes, transit int
	busy, algo     string
	rules, prefix  string
	hostlist       bool
	budget         budgetFlag
}

func newAllocCmd() *cobra.Command {
	var o allocOptions
	c := &cobra.Command{
		Use:   "alloc",
		Short: "Select a reachable node set for a job on a torus (improved or baseline algorithm)",
		Example: `  icn alloc --topo torus:4x4x4 --nodes 8 --transit 2
  icn alloc --topo torus:8x8x4x4 --nodes 32 --busy 0-3.*.*.* --fail-links 5.5.0.0+X --json
  icn alloc --topo torus:4x4x2 --nodes 5 --transit 3 --algo baseline
  sbatch --nodelist=$(icn alloc --topo torus:8x8x4x4 --nodes 16 --hostlist) job.sh`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runAlloc(c.Context(), o, stdout(c))
		},
	}
	o.topo.registerTorus(c, "topo", "torus:4x4x4x2")
	o.out.register(c)
	f := c.Flags()
	f.IntVar(&o.nodes, "nodes", 0, "active nodes the job needs (required)")
	f.IntVar(&o.transit, "transit", 0, "most transit nodes allowed")
	f.StringVar(&o.busy, "busy", "", "nodes already in use: names/patterns or @FILE")
	f.StringVar(&o.algo, "algo", "improved", "improved or baseline")
	f.StringVar(&o.rules, "rules", "angara*", "routing rule: dor, dirbit, angara-, angara, angara*")
	f.BoolVar(&o.hostlist, "hostlist", false, "print the chosen nodes (active and transit) as a Slurm hostlist expression for sbatch --nodelist")
	f.StringVar(&o.prefix, "nodes-prefix", "nid", "node-name prefix of --hostlist (nodes are numbered by node id, X fastest, as icn slurm topology does)")
	registerBudget(c, &o.budget, "time one node-selection decision may take")
	c.MarkFlagRequired("nodes")
	return c
}

// runAlloc answers one request within the budget + 10 % from its start
// (the selection gets the budget, as the fabric manager's does, and is
// stopped at the budget + 10 % if it has not answered, at least 50 ms
// past a short budget). A request that can never be met is refused
// before any work, or after an exhaustive decision when not even the
// torus without jobs has a set (exit status 2); no set now is a no (1);
// a budget that ended before any set was found exits with 3, the answer
// naming the placements examined.
func runAlloc(ctx context.Context, o allocOptions, w io.Writer) error {
	start := time.Now()
	g, a, st, err := torusState(&o.topo, o.algo)
	if err != nil {
		return err
	}
	if err := occupyBusy(g, st, o.busy); err != nil {
		return err
	}
	// The budget counts from the command's start: building the torus
	// and its router is part of the answer's time.
	req := alloc.Request{Nodes: o.nodes, Transit: o.transit, Algo: a, Budget: o.budget.d, Since: start}
	if why := alloc.Impossible(st, req); why != "" {
		return &exitError{code: 2, err: fmt.Errorf("no allocation, ever: %s", why)}
	}
	rt, err := alloc.NewAngaraRouter(g, o.rules)
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	b := o.budget.d
	sctx, cancel := ctx, context.CancelFunc(func() {})
	if b > 0 {
		// As the fabric manager's: at least 50 ms past a short budget,
		// so that it still answers with the placements it examined.
		sctx, cancel = context.WithDeadline(ctx, start.Add(b+max(b/10, 50*time.Millisecond)))
	}
	defer cancel()
	sel := alloc.NewSelector(st)
	res, err := sel.SelectContext(sctx, st, rt, req)
	if err != nil && ctx.Err() == nil && sctx.Err() != nil {
		return &exitError{code: 3, err: fmt.Errorf("no allocation: node selection did not answer within the budget of %v (+10%%)%s", b, examinedNote(err))}
	}
	if err != nil {
		return err
	}
	verdict := alloc.Placed
	if res.Chosen == nil {
		left := time.Duration(0)
		if b > 0 {
			if left = time.Until(start.Add(b)); left <= 0 {
				left = -1 // no time left for the check
			}
		}
		verdict, res.Reason = sel.Explain(sctx, st, rt, req, res, left)
	}
	view := allocView(g, res, o.rules)
	switch {
	case o.hostlist && res.Chosen != nil && !o.out.json:
		_, err = fmt.Fprintln(w, chosenHostlist(res.Chosen, g.NumNodes(), o.prefix))
	case o.hostlist && res.Chosen != nil:
		view.Hostlist = chosenHostlist(res.Chosen, g.NumNodes(), o.prefix)
		err = cli.JSON(w, view)
	default:
		err = o.out.print(w, view, func(w io.Writer) error { return writeAlloc(w, g, view) })
	}
	if err != nil {
		return err
	}
	switch verdict {
	case alloc.Never:
		return &exitError{code: 2, err: fmt.Errorf("no allocation, ever: %s", res.Reason)}
	case alloc.OutOfTime:
		return &exitError{code: 3, err: fmt.Errorf("no allocation: %s (a longer --budget may find one)", res.Reason)}
	case alloc.NotNow:
		return &exitError{code: 1, err: fmt.Errorf("no allocation: %s", res.Reason)}
	}
	return nil
}

// chosenHostlist names the chosen nodes (active, then transit) as a
// Slurm hostlist expression.
func chosenHostlist(c *alloc.Candidate, n int, prefix string) string {
	nn := sched.NewNodeNamer(prefix, n)
	var names []string
	for _, v := range append(append([]int(nil), c.Active...), c.Transit...) {
		names = append(names, nn.Name(v))
	}
	return sched.Hostlist(names)
}

// occupyBusy marks the --busy nodes (those not failed) as used.
func occupyBusy(g *topology.Graph, st *alloc.State, busy string) error {
	bl, err := readArgFile(busy)
	if err != nil {
		return fmt.Errorf("--busy: %v", err)
	}
	bs, err := g.ParseNodes(bl)
	if err != nil {
		return fmt.Errorf("--busy: %v", err)
	}
	var live []int
	for _, v := range bs {
		if !g.NodeFailed(v) {
			live = append(live, v)
		}
	}
	if err := st.Occupy(1<<30, live); err != nil {
		return fmt.Errorf("--busy: %v", err)
	}
	return nil
}

// examinedNote names how many placements a selection cut by its context
// had examined ("" when the error does not say).
func examinedNote(err error) string {
	var na *alloc.NoAnswerError
	if errors.As(err, &na) {
		return fmt.Sprintf("; %d placements examined, nothing chosen", na.Examined)
	}
	return ""
}
