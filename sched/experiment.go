package sched

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/topology"
)

// RouterFactory builds the router node selection uses on a network.
type RouterFactory func(g *topology.Graph) (alloc.Router, error)

// ExperimentOptions are shared by the experiments.
type ExperimentOptions struct {
	Seed uint64
	// Stream parameters (Load, Span, MaxTime, Sizes, MaxNodes) for the
	// synthetic streams; Seed is replaced per network.
	Stream SyntheticParams
	// TransitFrac sets the transit limit T = TransitLimit(TransitFrac, m)
	// = ⌈frac·m⌉ for a job of m nodes; 0 allows no transit node, as in
	// every command's --transit-frac. Seed 001's experiments use 1 (T = m:
	// the baseline needs up to m spare nodes to round a job up to an
	// allowed rectangle), which callers set explicitly.
	TransitFrac float64
	Workers     int
	Shard       Shard
	// SampleEvery counts the solutions at every k-th allocation attempt
	// only (the decisions themselves are all made; default 1 = every
	// attempt), to bound the cost on the larger networks.
	SampleEvery int
	Progress    func(done, total int)
}

// Shard selects part i (0-based) of n of an experiment's work items, so a
// sweep can be spread over a job array and merged afterwards.
type Shard struct{ I, N int }

// ParseShard reads "i/n" with 0 ≤ i < n (Slurm's $SLURM_ARRAY_TASK_ID for
// an array 0..n-1).
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{0, 1}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want i/n with 0 ≤ i < n", s)
	}
	return Shard{i, n}, nil
}

// TransitLimit is the transit limit of a job of m nodes in the
// experiments: TransitLimit(o.TransitFrac, m).
func (o *ExperimentOptions) TransitLimit(m int) int { return TransitLimit(o.TransitFrac, m) }

// streamFor generates the stream of a network: the same for every
// algorithm and window, so comparisons are paired, and a function of the
// seed and the network's name only, so a network gets the same stream
// whichever other networks an experiment runs with it.
func (o *ExperimentOptions) streamFor(network string, nodes int) (*Stream, error) {
	p := o.Stream
	p.Seed = StreamSeed(o.Seed, network)
	return Synthetic(p, nodes)
}

// StreamSeed is the seed of network's synthetic stream in an experiment
// run with seed: FNV-1a of the network's name mixed with the seed.
func StreamSeed(seed uint64, network string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(network))
	return seed*1_000_003 ^ h.Sum64()
}

// SeedTable1 holds seed 001 table 1: mean number of solutions found by the
// baseline and improved algorithms along a simulated FCFS run.
var SeedTable1 = []struct {
	Network            string
	Baseline, Improved float64
}{
	{"4x4x2", 8.29, 28.54}, {"4x2x2x2", 8.26, 26.08}, {"4x3x3", 11.41, 29.20}, {"3x3x2x2", 11.49, 22.79},
	{"4x4x4", 15.28, 92.85}, {"4x4x2x2", 15.27, 75.15}, {"6x4x4", 39.18, 237.54}, {"4x4x3x2", 32.69, 166.15},
	{"8x6x3", 95.08, 479.96}, {"4x4x3x3", 98.93, 520.61}, {"8x8x4", 214.93, 1179.75}, {"4x4x4x4", 162.29, 1929.15},
}

// SolutionsRow is one network of the solutions-found experiment.
type SolutionsRow struct {
	Network      string  `json:"network"`
	Nodes        int     `json:"nodes"`
	Attempts     int     `json:"attempts"`
	BaselineMean float64 `json:"baseline_mean"`
	ImprovedMean float64 `json:"improved_mean"`
	Ratio        float64 `json:"ratio"`
	SeedBaseline float64 `json:"seed_baseline,omitempty"`
	SeedImproved float64 `json:"seed_improved,omitempty"`
	SeedRatio    float64 `json:"seed_ratio,omitempty"`
	Jobs         int     `json:"jobs"`
	Skipped      int     `json:"jobs_skipped"`
	// The same means over only the attempts at which the baseline found
	// a solution (the job started): attempts that find nothing are
	// another reading of "every run of the baseline algorithm".
	StartedAttempts     int     `json:"started_attempts"`
	BaselineMeanStarted float64 `json:"baseline_mean_started"`
	ImprovedMeanStarted float64 `json:"improved_mean_started"`
}

// Solutions runs seed 001 §5.4: for every network, an FCFS simulation whose
// decisions are made by the baseline algorithm; before every decision both
// algorithms enumerate their candidates and the counts are averaged.
func Solutions(networks []string, o ExperimentOptions, newRouter RouterFactory) ([]SolutionsRow, error) {
	items := o.Shard.pick(len(networks))
	rows := make([]SolutionsRow, len(items))
	err := o.run(len(items), func(i int) (err error) {
		rows[i], err = solutionsOne(networks[items[i]], o, newRouter)
		return err
	})
	return rows, err
}

// run calls f for items 0..n-1 on all cores, reporting progress, and
// returns the first error.
func (o *ExperimentOptions) run(n int, f func(i int) error) error {
	errs := make([]error, n)
	var mu sync.Mutex
	done := 0
	par.For(n, o.Workers, func(_, i int) {
		errs[i] = f(i)
		if o.Progress != nil {
			mu.Lock()
			done++
			o.Progress(done, n)
			mu.Unlock()
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// machine builds the empty state and router of torus network ("4x4x2").
func machine(network string, newRouter RouterFactory) (*alloc.State, alloc.Router, error) {
	g, err := topology.Parse("torus:" + network)
	if err != nil {
		return nil, nil, err
	}
	st, err := alloc.NewState(g)
	if err != nil {
		return nil, nil, err
	}
	rt, err := newRouter(g)
	if err != nil {
		return nil, nil, err
	}
	return st, rt, nil
}

func solutionsOne(network string, o ExperimentOptions, newRouter RouterFactory) (SolutionsRow, error) {
	row := SolutionsRow{Network: network}
	st, rt, err := machine(network, newRouter)
	if err != nil {
		return row, err
	}
	row.Nodes = st.N()
	stream, err := o.streamFor(network, st.N())
	if err != nil {
		return row, err
	}
	counter := alloc.NewSelector(st)
	counter.Workers = 1
	var sumB, sumI, sumBS, sumIS float64
	every := max(1, o.SampleEvery)
	attempt := 0
	observe := func(s *alloc.State, req alloc.Request) {
		if err != nil {
			return
		}
		attempt++
		if (attempt-1)%every != 0 {
			return
		}
		var rb, ri *alloc.Result
		rb, err = counter.Select(s, rt, alloc.Request{Nodes: req.Nodes, Transit: req.Transit, Algo: alloc.Baseline, CountOnly: true})
		if err != nil {
			return
		}
		ri, err = counter.Select(s, rt, alloc.Request{Nodes: req.Nodes, Transit: req.Transit, Algo: alloc.Improved, CountOnly: true})
		if err != nil {
			return
		}
		sumB += float64(rb.Found)
		sumI += float64(ri.Found)
		row.Attempts++
		if rb.Found > 0 {
			sumBS += float64(rb.Found)
			sumIS += float64(ri.Found)
			row.StartedAttempts++
		}
	}
	rep, simErr := Simulate(Config{State: st, Router: rt, Policy: Policy{Window: 1}, Algo: alloc.Baseline,
		Transit: o.TransitLimit, Observe: observe, SelectWorkers: 1}, stream)
	if simErr != nil {
		return row, simErr
	}
	if err != nil {
		return row, err
	}
	row.Jobs, row.Skipped = rep.Jobs, rep.JobsSkipped
	if row.Attempts > 0 {
		row.BaselineMean = sumB / float64(row.Attempts)
		row.ImprovedMean = sumI / float64(row.Attempts)
		if row.BaselineMean > 0 {
			row.Ratio = row.ImprovedMean / row.BaselineMean
		}
	}
	if row.StartedAttempts > 0 {
		row.BaselineMeanStarted = sumBS / float64(row.StartedAttempts)
		row.ImprovedMeanStarted = sumIS / float64(row.StartedAttempts)
	}
	for _, s := range SeedTable1 {
		if s.Network == network {
			row.SeedBaseline, row.SeedImproved, row.SeedRatio = s.Baseline, s.Improved, s.Improved/s.Baseline
		}
	}
	return row, nil
}

// UtilRow is one (network, window, algorithm) simulation.
type UtilRow struct {
	Network     string  `json:"network"`
	Nodes       int     `json:"nodes"`
	Window      int     `json:"window"`
	Backfill    bool    `json:"easy_backfill"`
	Algo        string  `json:"algo"`
	Utilization float64 `json:"utilization"`
	TMean       float64 `json:"t_mean"`
	MeanWait    float64 `json:"mean_wait"`
	MeanBSLD    float64 `json:"mean_bounded_slowdown"`
	Makespan    float64 `json:"makespan"`
	Jobs        int     `json:"jobs"`
	JobsDone    int     `json:"jobs_done"`
	Skipped     int     `json:"jobs_skipped"`
	Decisions   int     `json:"decisions"`
	AllocSecs   float64 `json:"alloc_seconds"`
}

// Utilization runs seed 001 §5.5: every network × window × algorithm on the
// network's synthetic stream.
func Utilization(networks []string, windows []int, backfill bool, o ExperimentOptions, newRouter RouterFactory) ([]UtilRow, error) {
	type item struct {
		net, w int
		algo   alloc.Algo
	}
	var all []item
	for k := range networks {
		for _, w := range windows {
			for _, a := range []alloc.Algo{alloc.Baseline, alloc.Improved} {
				all = append(all, item{k, w, a})
			}
		}
	}
	picked := o.Shard.pick(len(all))
	rows := make([]UtilRow, len(picked))
	err := o.run(len(picked), func(i int) (err error) {
		it := all[picked[i]]
		rows[i], err = utilOne(networks[it.net], it.w, backfill, it.algo, o, newRouter)
		return err
	})
	return rows, err
}

func utilOne(network string, w int, backfill bool, algo alloc.Algo, o ExperimentOptions, newRouter RouterFactory) (UtilRow, error) {
	row := UtilRow{Network: network, Window: w, Backfill: backfill, Algo: string(algo)}
	st, rt, err := machine(network, newRouter)
	if err != nil {
		return row, err
	}
	stream, err := o.streamFor(network, st.N())
	if err != nil {
		return row, err
	}
	rep, err := Simulate(Config{State: st, Router: rt, Policy: Policy{Window: w, Backfill: backfill}, Algo: algo, Transit: o.TransitLimit, SelectWorkers: 1}, stream)
	if err != nil {
		return row, err
	}
	row.Nodes = st.N()
	row.Utilization, row.TMean, row.MeanWait, row.MeanBSLD = rep.Utilization, rep.TMean, rep.MeanWait, rep.MeanBSLD
	row.Makespan, row.Jobs, row.JobsDone, row.Skipped = rep.Makespan, rep.Jobs, rep.JobsDone, rep.JobsSkipped
	row.Decisions, row.AllocSecs = rep.Decisions, rep.AllocSeconds
	return row, nil
}

// UtilSummary compares improved with baseline per (network, window).
type UtilSummary struct {
	Network      string  `json:"network"`
	Window       int     `json:"window"`
	BaselineU    float64 `json:"baseline_utilization"`
	ImprovedU    float64 `json:"improved_utilization"`
	GainPoints   float64 `json:"gain_points"` // improved − baseline, percentage points
	BaselineT    float64 `json:"baseline_t_mean"`
	ImprovedT    float64 `json:"improved_t_mean"`
	TMeanRatio   float64 `json:"t_mean_ratio"` // baseline / improved
	BaselineSkip int     `json:"baseline_skipped"`
	ImprovedSkip int     `json:"improved_skipped"`
}

// Summarize pairs the rows of Utilization (possibly merged from shards).
func Summarize(rows []UtilRow) []UtilSummary {
	type key struct {
		net string
		w   int
	}
	m := map[key]*UtilSummary{}
	var keys []key
	for _, r := range rows {
		k := key{r.Network, r.Window}
		s := m[k]
		if s == nil {
			s = &UtilSummary{Network: r.Network, Window: r.Window}
			m[k] = s
			keys = append(keys, k)
		}
		if r.Algo == string(alloc.Baseline) {
			s.BaselineU, s.BaselineT, s.BaselineSkip = r.Utilization, r.TMean, r.Skipped
		} else {
			s.ImprovedU, s.ImprovedT, s.ImprovedSkip = r.Utilization, r.TMean, r.Skipped
		}
	}
	sort.SliceStable(keys, func(i, j int) bool {
		if keys[i].net != keys[j].net {
			return nodesOfSpec(keys[i].net) < nodesOfSpec(keys[j].net) || nodesOfSpec(keys[i].net) == nodesOfSpec(keys[j].net) && keys[i].net < keys[j].net
		}
		return keys[i].w < keys[j].w
	})
	out := make([]UtilSummary, 0, len(keys))
	for _, k := range keys {
		s := m[k]
		s.GainPoints = 100 * (s.ImprovedU - s.BaselineU)
		if s.ImprovedT > 0 {
			s.TMeanRatio = s.BaselineT / s.ImprovedT
		}
		out = append(out, *s)
	}
	return out
}

func nodesOfSpec(dims string) int {
	n := 1
	for _, p := range strings.Split(dims, "x") {
		x, _ := strconv.Atoi(p)
		n *= x
	}
	return n
}

func (s Shard) pick(total int) []int {
	if s.N == 0 {
		s.N = 1
	}
	var out []int
	for i := 0; i < total; i++ {
		if i%s.N == s.I {
			out = append(out, i)
		}
	}
	return out
}

// ShardFile is what a sharded experiment writes and MergeShards reads.
type ShardFile struct {
	Experiment string          `json:"experiment"`
	Shard      string          `json:"shard"`
	Solutions  []SolutionsRow  `json:"solutions,omitempty"`
	Util       []UtilRow       `json:"utilization,omitempty"`
	Params     json.RawMessage `json:"params,omitempty"`
}

// MergeShards combines shard files of one experiment; it fails if the
// files mix experiments or parameters, or a shard is missing or repeated.
func MergeShards(readers []io.Reader, names []string) (*ShardFile, error) {
	var out *ShardFile
	seen := map[string]string{}
	total := -1
	for i, r := range readers {
		var wrapped struct {
			ShardFile
			Summary json.RawMessage `json:"summary"` // written by the CLI, recomputed on merge
		}
		dec := json.NewDecoder(r)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&wrapped); err != nil {
			return nil, fmt.Errorf("%s: not a shard file: %v", names[i], err)
		}
		f := wrapped.ShardFile
		sh, err := ParseShard(f.Shard)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", names[i], err)
		}
		if prev, dup := seen[f.Shard]; dup {
			return nil, fmt.Errorf("%s repeats shard %s of %s", names[i], f.Shard, prev)
		}
		seen[f.Shard] = names[i]
		if total < 0 {
			total = sh.N
		} else if sh.N != total {
			return nil, fmt.Errorf("%s is shard %s but others are of %d", names[i], f.Shard, total)
		}
		if out == nil {
			out = &ShardFile{Experiment: f.Experiment, Params: f.Params, Shard: "merged"}
		} else if f.Experiment != out.Experiment || string(f.Params) != string(out.Params) {
			return nil, fmt.Errorf("%s comes from a different experiment or parameters", names[i])
		}
		out.Solutions = append(out.Solutions, f.Solutions...)
		out.Util = append(out.Util, f.Util...)
	}
	if out == nil {
		return nil, fmt.Errorf("no shard files given")
	}
	if len(seen) != total {
		return nil, fmt.Errorf("%d of %d shards given", len(seen), total)
	}
	sort.SliceStable(out.Solutions, func(i, j int) bool { return out.Solutions[i].Nodes < out.Solutions[j].Nodes })
	sort.SliceStable(out.Util, func(i, j int) bool {
		a, b := out.Util[i], out.Util[j]
		if a.Nodes != b.Nodes {
			return a.Nodes < b.Nodes
		}
		if a.Network != b.Network {
			return a.Network < b.Network
		}
		if a.Window != b.Window {
			return a.Window < b.Window
		}
		return a.Algo < b.Algo
	})
	return out, nil
}

// UtilAggregate sums up a utilization experiment the ways the seed's
// summary figures may be read: gains in percentage points and relative to
// the baseline, T_mean ratios as the mean of the rows' ratios, the ratio
// of the mean T_mean and the ratio of the median T_mean.
type UtilAggregate struct {
	GainPoints          float64 `json:"gain_points"` // mean over rows, pp
	GainMin             float64 `json:"gain_min"`
	GainMax             float64 `json:"gain_max"`
	GainRelative        float64 `json:"gain_relative_percent"` // mean of 100·(U_impr/U_base − 1)
	TMeanRatio          float64 `json:"t_mean_ratio"`          // mean of the rows' ratios
	TMeanRatioOfMeans   float64 `json:"t_mean_ratio_of_means"`
	TMeanRatioOfMedians float64 `json:"t_mean_ratio_of_medians"`
}

// Aggregate sums up the rows of Summarize.
func Aggregate(sum []UtilSummary) UtilAggregate {
	var a UtilAggregate
	if len(sum) == 0 {
		return a
	}
	a.GainMin, a.GainMax = math.Inf(1), math.Inf(-1)
	var bt, it []float64
	for _, s := range sum {
		a.GainPoints += s.GainPoints
		a.GainMin, a.GainMax = min(a.GainMin, s.GainPoints), max(a.GainMax, s.GainPoints)
		if s.BaselineU > 0 {
			a.GainRelative += 100 * (s.ImprovedU/s.BaselineU - 1)
		}
		a.TMeanRatio += s.TMeanRatio
		bt, it = append(bt, s.BaselineT), append(it, s.ImprovedT)
	}
	n := float64(len(sum))
	a.GainPoints, a.GainRelative, a.TMeanRatio = a.GainPoints/n, a.GainRelative/n, a.TMeanRatio/n
	if m := mean(it); m > 0 {
		a.TMeanRatioOfMeans = mean(bt) / m
	}
	if m := median(it); m > 0 {
		a.TMeanRatioOfMedians = median(bt) / m
	}
	return a
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func median(x []float64) float64 {
	y := slices.Clone(x)
	slices.Sort(y)
	if len(y)%2 == 1 {
		return y[len(y)/2]
	}
	return (y[len(y)/2-1] + y[len(y)/2]) / 2
}
