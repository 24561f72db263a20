//go:build long

package slurmagent

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/sched"
	"github.com/icn-hpc/icn/topology"
)

// replayResult is what a run of a stream gave: utilization and the mean
// relative wait (wait / requested time), as sched.Report counts them.
type replayResult struct {
	util, tmean, wait float64
	done, skipped     int
	// start and end of each job of the stream (trace seconds; machine
	// rows only).
	start, end []float64
}

// TestReplayModelVsSlurm is seed 001's table 2 on one host: a synthetic
// stream (60 jobs on torus:4x4x2, trace minutes replayed as half seconds)
// runs through slurmctld and 32 slurmd twice, once with Slurm's own
// placement (partition plain: FCFS, select/linear) and once placed by icn
// (partition torus, the agent: window 8 with a reservation for its head),
// and through icn sched simulate with the same policies (the window rule
// with the trace's requested times and with the machine's whole-minute
// time limits); it reports the five rows. Run with
// go test -tags long -run TestReplayModelVsSlurm -v ./slurmagent (root).
func TestReplayModelVsSlurm(t *testing.T) {
	needSlurm(t)
	const scale = 120.0 // trace seconds per real second
	p := sched.SyntheticParams{Jobs: 60, MinTime: 60, MaxTime: 1800, Span: 2 * 3600, Sizes: "loguniform", MaxNodes: 16, Overestimate: 1, Seed: 1}
	stream, err := sched.Synthetic(p, 32)
	if err != nil {
		t.Fatal(err)
	}
	g, err := topology.Parse("torus:4x4x2")
	if err != nil {
		t.Fatal(err)
	}
	// The model's rows.
	model := map[string]replayResult{}
	flat, _ := sched.NewFlatMachine(32, nil)
	rep, err := sched.Simulate(sched.Config{Machine: flat, Policy: sched.Policy{Window: 1}}, stream)
	if err != nil {
		t.Fatal(err)
	}
	model["slurm"] = replayResult{util: rep.Utilization, tmean: rep.TMean, wait: rep.MeanWait, done: rep.JobsDone}
	// icn's rule (window 8 with a reservation for its head) plans with
	// requested times: the trace's, and the time limits the machine
	// gets (whole minutes of Slurm's at this compression, as replay
	// submits them), which make the reservation promise far more.
	limited := *stream
	limited.Jobs = slices.Clone(stream.Jobs)
	for i := range limited.Jobs {
		limited.Jobs[i].Requested = float64(slurmLimit(stream.Jobs[i].Requested, scale)*60) * scale
	}
	for name, s := range map[string]*sched.Stream{"icn": stream, "icn, Slurm's limits": &limited} {
		st, _ := alloc.NewState(g)
		rt, _ := alloc.NewAngaraRouter(g, "angara*")
		rep, err = sched.Simulate(sched.Config{State: st, Router: rt, Algo: alloc.Improved, Policy: sched.Policy{Window: 8, Backfill: true, Rule: sched.RuleWindow},
			Transit: func(m int) int { return sched.TransitLimit(0.6, m) }}, s)
		if err != nil {
			t.Fatal(err)
		}
		// Relative wait against the trace's requested time in every row.
		r := replayResult{util: rep.Utilization, wait: rep.MeanWait, done: rep.JobsDone}
		requested := map[int]float64{}
		for _, j := range stream.Jobs {
			requested[j.ID] = j.Requested
		}
		for _, rec := range rep.Schedule {
			if rec.Skipped == "" && rec.Start >= 0 {
				r.tmean += (rec.Start - rec.Submit) / requested[rec.ID]
			}
		}
		r.tmean /= float64(max(1, rep.JobsDone))
		model[name] = r
	}

	machine := replayBoth(t, stream, scale)
	row := func(name string, r replayResult) {
		t.Logf("%-28s utilization %5.1f %%  mean relative wait %6.2f  mean wait %7.0f s  jobs %d", name, 100*r.util, r.tmean, r.wait, r.done)
	}
	row("model, Slurm's FCFS (flat)", model["slurm"])
	row("model, icn (trace's times)", model["icn"])
	row("model, icn (Slurm's limits)", model["icn, Slurm's limits"])
	row("machine, Slurm alone", machine["plain"])
	row("machine, placed by icn", machine["torus"])
	if machine["torus"].done != len(stream.Jobs) || machine["plain"].done != len(stream.Jobs) {
		t.Fatalf("jobs done: %d and %d of %d", machine["plain"].done, machine["torus"].done, len(stream.Jobs))
	}
}

// replay submits the stream's jobs to a partition at their submit times
// (scale trace seconds per real second), each sleeping its run time, and
// measures when each starts and ends by polling squeue.
// replayBoth replays the stream on a 32-node torus cluster through
// Slurm's own placement (partition plain) and then through icn (torus,
// its agent running) with each of algos (none: the improved algorithm;
// the rows are named torus, or torus-baseline for the baseline); the
// partitions share their nodes but run one at a time.
func replayBoth(t *testing.T, stream *sched.Stream, scale float64, algos ...alloc.Algo) map[string]replayResult {
	_, srvURL, tok, names := startTorus(t)
	c := startCluster(t, names, nil)
	machine := map[string]replayResult{"plain": replay(t, c, "plain", stream, scale)}
	if len(algos) == 0 {
		algos = []alloc.Algo{alloc.Improved}
	}
	for _, algo := range algos {
		ctx, cancel := context.WithCancel(context.Background())
		a, err := New(ctx, Config{Partition: "torus", Window: 8, Transit: 0.6, Algo: algo, AllowSharedNodes: true}, CLI{Conf: c.conf}, &Client{C: client.New(srvURL, tok)})
		if err != nil {
			t.Fatal(err)
		}
		go a.Run(ctx, 100*time.Millisecond)
		name := "torus"
		if algo != alloc.Improved {
			name += "-" + string(algo)
		}
		machine[name] = replay(t, c, "torus", stream, scale)
		cancel()
	}
	return machine
}

func replay(t *testing.T, c *cluster, part string, stream *sched.Stream, scale float64) replayResult {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	var mu sync.Mutex
	startAt, endAt := map[string]float64{}, map[string]float64{}
	skipped := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		known := map[string]bool{}
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Ended jobs too (-t all: slurmctld keeps them MinJobAge): a
			// job that started and ended between two polls is seen ended,
			// and counted as started then.
			out, err := c.cmd(ctx, "squeue", "-h", "-t", "all", "-p", part, "-o", "%j|%T|%i|%k")
			now := time.Since(start).Seconds() * scale
			if err == nil {
				live := map[string]bool{}
				mu.Lock()
				for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
					f := strings.SplitN(line, "|", 4)
					if len(f) < 4 {
						continue
					}
					name, state := f[0], f[1]
					known[name] = true
					switch {
					case state == "PENDING" && strings.HasPrefix(f[3], "icn: refused") && !skipped[name]:
						// icn can never place it (the model skips such
						// jobs too): cancelled, and left out of the figures.
						skipped[name] = true
						c.cmd(ctx, "scancel", f[2])
					case skipped[name]:
					case state == "PENDING" || state == "CONFIGURING":
						live[name] = true
					case state == "RUNNING" || state == "COMPLETING":
						live[name] = true
						if startAt[name] == 0 {
							startAt[name] = now
						}
					default: // ended
						if startAt[name] == 0 {
							startAt[name] = now
						}
					}
				}
				for name := range known {
					if !live[name] && endAt[name] == 0 && startAt[name] > 0 {
						endAt[name] = now
					}
				}
				mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	for i, j := range stream.Jobs {
		if d := time.Duration(j.Submit/scale*float64(time.Second)) - time.Since(start); d > 0 {
			time.Sleep(d)
		}
		run := j.Runtime / scale
		limit := slurmLimit(j.Requested, scale)
		if out, err := c.cmd(ctx, "sbatch", "-p", part, "-N", fmt.Sprint(j.Nodes), "-J", fmt.Sprintf("r%d", i), "-t", fmt.Sprint(limit),
			"--wrap", fmt.Sprintf("sleep %.2f", run)); err != nil {
			t.Fatalf("sbatch job %d: %v %s", i, err, out)
		}
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		mu.Lock()
		n := len(endAt) + len(skipped)
		mu.Unlock()
		if n == len(stream.Jobs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d jobs ended in 10 minutes", part, n, len(stream.Jobs))
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	var r replayResult
	first, last, busy := math.Inf(1), 0.0, 0.0
	for i, j := range stream.Jobs {
		name := fmt.Sprintf("r%d", i)
		s, e := startAt[name], endAt[name]
		r.start, r.end = append(r.start, s), append(r.end, e)
		if skipped[name] {
			r.skipped++
			continue
		}
		wait := math.Max(0, s-j.Submit)
		r.wait += wait
		r.tmean += wait / j.Requested
		busy += float64(j.Nodes) * (e - s)
		first, last = math.Min(first, j.Submit), math.Max(last, e)
		r.done++
	}
	r.wait /= float64(r.done)
	r.tmean /= float64(r.done)
	r.util = busy / (32 * (last - first))
	return r
}

// slurmLimit is the time limit, in Slurm's whole minutes, replay gives a
// job of the requested trace time: rounded up, plus a minute for the
// launch.
func slurmLimit(requested, scale float64) int {
	return int(math.Ceil(requested/scale/60)) + 1
}

// TestReplayHPC2N is seed 001's table 2 on a real queue: the first jobs
// of an HPC2N slice (SWF, 240 processors; ICN_HPC2N_SWF names the file),
// scaled to the 32 nodes (nodes = max(1, round(procs·32/240))) and
// replayed with time compressed ICN_HPC2N_SCALE times (default 2000)
// through Slurm alone and through icn, and through sched.Simulate with
// the same policies, without and with each job's launch delay as the
// machine measured it (the time a job held its nodes beyond its run
// time) as its start delay, and with passes at the agent's rounds; it
// also reports Slurm's scheduling latency (fcfsLatency). Run with
// ICN_HPC2N_SWF=FILE go test -tags long -run TestReplayHPC2N -v ./slurmagent (root).
func TestReplayHPC2N(t *testing.T) {
	path := os.Getenv("ICN_HPC2N_SWF")
	if path == "" {
		t.Skip("ICN_HPC2N_SWF names the HPC2N slice (standard workload format)")
	}
	needSlurm(t)
	n, scale := 100, 2000.0
	if v, err := strconv.Atoi(os.Getenv("ICN_HPC2N_JOBS")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.ParseFloat(os.Getenv("ICN_HPC2N_SCALE"), 64); err == nil && v > 0 {
		scale = v
	}
	stream := hpc2nSlice(readHPC2N(t, path), n)
	runs := make([]float64, 0, len(stream.Jobs))
	for _, j := range stream.Jobs {
		runs = append(runs, j.Runtime)
	}
	slices.Sort(runs)
	t.Logf("%d jobs over %.0f trace s, median run time %.0f s, compressed %g× (%.0f s of wall time per partition)",
		len(stream.Jobs), stream.Jobs[len(stream.Jobs)-1].Submit, runs[len(runs)/2], scale, stream.Jobs[len(stream.Jobs)-1].Submit/scale)

	machine := replayBoth(t, stream, scale, alloc.Improved, alloc.Baseline)
	plainDelay, plainMedian := launchDelays(stream, machine["plain"])
	baseDelay, _ := launchDelays(stream, machine["torus-baseline"])
	torusDelay, torusMedian := launchDelays(stream, machine["torus"])
	requested := map[int]float64{}
	for _, j := range stream.Jobs {
		requested[j.ID] = j.Requested
	}
	result := func(rep *sched.Report) replayResult {
		r := replayResult{util: rep.Utilization, wait: rep.MeanWait, done: rep.JobsDone, skipped: rep.JobsSkipped}
		for _, rec := range rep.Schedule {
			if rec.Skipped == "" && rec.Start >= 0 {
				r.tmean += (rec.Start - rec.Submit) / requested[rec.ID]
			}
		}
		r.tmean /= float64(max(1, rep.JobsDone))
		return r
	}
	limits := func(s *sched.Stream) *sched.Stream {
		l := &sched.Stream{Source: s.Source, Jobs: slices.Clone(s.Jobs)}
		for i := range l.Jobs {
			l.Jobs[i].Requested = math.Max(l.Jobs[i].Runtime, float64(slurmLimit(stream.Jobs[i].Requested, scale)*60)*scale)
		}
		return l
	}
	g, _ := topology.Parse("torus:4x4x2")
	fcfs := func(s *sched.Stream, delay map[int]float64) replayResult {
		flat, _ := sched.NewFlatMachine(32, nil)
		rep, err := sched.Simulate(sched.Config{Machine: flat, Policy: sched.Policy{Window: 1}, StartDelay: sched.DelayOf(delay, 0)}, s)
		if err != nil {
			t.Fatal(err)
		}
		return result(rep)
	}
	// The agent decides once per round (0.1 s of wall time): with
	// passes, the model's icn decides at the same cadence.
	icnAlgo := func(algo alloc.Algo, s *sched.Stream, delay map[int]float64, passes bool) replayResult {
		st, _ := alloc.NewState(g)
		rt, _ := alloc.NewAngaraRouter(g, "angara*")
		pol := sched.Policy{Window: 8, Backfill: true, Rule: sched.RuleWindow}
		if passes {
			pol.Interval = 0.1 * scale
		}
		rep, err := sched.Simulate(sched.Config{State: st, Router: rt, Algo: algo, Policy: pol, StartDelay: sched.DelayOf(delay, 0),
			Transit: func(m int) int { return sched.TransitLimit(0.6, m) }}, s)
		if err != nil {
			t.Fatal(err)
		}
		return result(rep)
	}
	icn := func(s *sched.Stream, delay map[int]float64, passes bool) replayResult {
		return icnAlgo(alloc.Improved, s, delay, passes)
	}
	row := func(name string, r replayResult) {
		t.Logf("%-58s utilization %5.1f %%  mean relative wait %6.2f  mean wait %7.0f s  jobs %d", name, 100*r.util, r.tmean, r.wait, r.done)
	}
	row("model, Slurm's FCFS", fcfs(stream, nil))
	row("model, Slurm's FCFS, launch delays", fcfs(stream, plainDelay))
	row("model, icn, the trace's requested times", icn(stream, nil, false))
	row("model, icn, Slurm's limits", icn(limits(stream), nil, false))
	row("model, icn, Slurm's limits, launch delays", icn(limits(stream), torusDelay, false))
	row("model, icn, Slurm's limits, launch delays, agent's rounds", icn(limits(stream), torusDelay, true))
	baseModel := icnAlgo(alloc.Baseline, limits(stream), baseDelay, true)
	impModel := icn(limits(stream), torusDelay, true)
	row("model, icn's baseline, Slurm's limits, launch delays, agent's rounds", baseModel)
	row("machine, Slurm alone", machine["plain"])
	row("machine, placed by icn", machine["torus"])
	row("machine, placed by icn's baseline", machine["torus-baseline"])
	t.Logf("seed 001 table 2 (its queue on Desmos): baseline → developed U 58.54 → 65.80 %% (model), 59.35 → 67.00 %% (machine); T_mean 17.02 → 7.34 (model, ×%.2f), 18.28 → 8.63 (machine, ×%.2f)", 17.02/7.34, 18.28/8.63)
	t.Logf("here: baseline → improved U %.1f → %.1f %% (model), %.1f → %.1f %% (machine); T_mean %.2f → %.2f (model, ×%.2f), %.2f → %.2f (machine, ×%.2f)",
		100*baseModel.util, 100*impModel.util, 100*machine["torus-baseline"].util, 100*machine["torus"].util,
		baseModel.tmean, impModel.tmean, baseModel.tmean/impModel.tmean, machine["torus-baseline"].tmean, machine["torus"].tmean, machine["torus-baseline"].tmean/machine["torus"].tmean)
	t.Logf("median launch delay: %.0f trace s (Slurm alone), %.0f trace s (icn); %.1f %% and %.1f %% of the median run time",
		plainMedian, torusMedian, 100*plainMedian/runs[len(runs)/2], 100*torusMedian/runs[len(runs)/2])
	lat := fcfsLatency(stream, machine["plain"], 32)
	sorted := slices.Clone(lat)
	slices.Sort(sorted)
	mean := 0.0
	for _, l := range lat {
		mean += l
	}
	mean /= float64(len(lat))
	t.Logf("Slurm alone, scheduling latency (measured start − the earliest start FCFS allows on the machine's own history): mean %.0f trace s, median %.0f, 90th percentile %.0f",
		mean, sorted[len(sorted)/2], sorted[len(sorted)*9/10])
	for name, r := range machine {
		if r.done+r.skipped != len(stream.Jobs) {
			t.Fatalf("%s: %d of %d jobs done, %d refused", name, r.done, len(stream.Jobs), r.skipped)
		}
	}
}

// TestHPC2NModelCadence replays TestReplayHPC2N's slices (the first 100
// and 249 jobs, scaled to 32 nodes) through the model of Slurm's FCFS
// with scheduling passes only every I trace seconds, to read the
// machine's waits against a scheduler's cadence: no Slurm needed. Run
// with ICN_HPC2N_SWF=FILE go test -tags long -run TestHPC2NModelCadence -v ./slurmagent.
func TestHPC2NModelCadence(t *testing.T) {
	path := os.Getenv("ICN_HPC2N_SWF")
	if path == "" {
		t.Skip("ICN_HPC2N_SWF names the HPC2N slice (standard workload format)")
	}
	trace := readHPC2N(t, path)
	for _, n := range []int{100, 249} {
		stream := hpc2nSlice(trace, n)
		for _, iv := range []float64{0, 1000, 2500, 5000, 10000} {
			flat, _ := sched.NewFlatMachine(32, nil)
			rep, err := sched.Simulate(sched.Config{Machine: flat, Policy: sched.Policy{Window: 1, Interval: iv}}, stream)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d jobs, model of Slurm's FCFS, a pass every %5.0f trace s: utilization %5.1f %%  mean relative wait %5.2f  mean wait %6.0f s",
				n, iv, 100*rep.Utilization, rep.TMean, rep.MeanWait)
		}
	}
}

// launchDelays gives each job's launch delay on a machine row (the time
// it held its nodes beyond its run time, as the squeue polls saw it) and
// their median.
func launchDelays(stream *sched.Stream, r replayResult) (map[int]float64, float64) {
	delay := map[int]float64{}
	var all []float64
	for i, j := range stream.Jobs {
		if r.end[i] == 0 {
			continue // refused by icn and cancelled: it never ran
		}
		d := math.Max(0, r.end[i]-r.start[i]-j.Runtime)
		delay[j.ID] = d
		all = append(all, d)
	}
	slices.Sort(all)
	return delay, all[len(all)/2]
}

// readHPC2N reads the HPC2N trace (SWF) at path.
func readHPC2N(t *testing.T, path string) *sched.Stream {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	trace, err := sched.ParseSWF(f, path, sched.SWFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return trace
}

// hpc2nSlice is the trace's first n jobs scaled to the 32 nodes:
// nodes = max(1, round(procs·32/240)).
func hpc2nSlice(trace *sched.Stream, n int) *sched.Stream {
	stream := &sched.Stream{Source: trace.Source}
	for _, j := range trace.Jobs[:min(n, len(trace.Jobs))] {
		j.Nodes = max(1, int(math.Round(float64(j.Nodes)*32/240)))
		stream.Jobs = append(stream.Jobs, j)
	}
	return stream
}

// fcfsLatency is, for each job of an FCFS machine row, the time between
// the earliest start FCFS allows on the machine's own history (not
// before its submission or the previous job's start, and with enough
// nodes free given the other jobs' measured starts and ends) and its
// measured start: the scheduler's and the polls' latency.
func fcfsLatency(stream *sched.Stream, r replayResult, nodes int) []float64 {
	out := make([]float64, len(stream.Jobs))
	prev := math.Inf(-1)
	for i, j := range stream.Jobs {
		used := func(t float64) int {
			n := 0
			for k, o := range stream.Jobs {
				if k != i && r.start[k] <= t && t < r.end[k] {
					n += o.Nodes
				}
			}
			return n
		}
		earliest := math.Max(j.Submit, prev)
		cands := []float64{earliest}
		for k := range stream.Jobs {
			if k != i && r.end[k] > earliest {
				cands = append(cands, r.end[k])
			}
		}
		slices.Sort(cands)
		at := cands[len(cands)-1]
		for _, t := range cands {
			if used(t)+j.Nodes <= nodes {
				at = t
				break
			}
		}
		out[i] = r.start[i] - at
		prev = r.start[i]
	}
	return out
}
