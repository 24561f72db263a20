package sched

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// Job is one job of a stream. Times are in seconds from the start of the
// stream.
type Job struct {
	ID        int     `json:"id"`
	Submit    float64 `json:"submit"`
	Nodes     int     `json:"nodes"`
	Runtime   float64 `json:"runtime"`        // how long it really runs
	Requested float64 `json:"requested"`      // the time limit the user asked for (≥ Runtime)
	Line      int     `json:"line,omitempty"` // line of the trace it came from
	// TraceRequested is the requested time the trace gives when it is
	// shorter than the run time (the job ran past its limit; Requested is
	// then the run time), else 0. Only the easy-accasim rule uses it: accasim
	// plans with the trace's requested time as it is.
	TraceRequested float64 `json:"trace_requested,omitempty"`
}

// Skipped records a job (or line) left out of a stream, and why.
type Skipped struct {
	ID     int    `json:"id,omitempty"`
	Line   int    `json:"line,omitempty"`
	Reason string `json:"reason"`
}

// Stream is a job stream in submit order.
type Stream struct {
	Source  string    `json:"source"`
	Jobs    []Job     `json:"jobs"`
	Skipped []Skipped `json:"skipped,omitempty"`
	// Warnings are problems of the input that did not drop a job (e.g. a
	// submit time earlier than the line before: the job is kept, in
	// submit order).
	Warnings []Skipped `json:"warnings,omitempty"`
}

// Validate checks a stream before simulation: at least one job, every
// job with a positive size and run time, a requested time no shorter
// than the run time, a non-negative submit time, jobs in submit order and
// distinct ids.
func (s *Stream) Validate() error {
	if len(s.Jobs) == 0 {
		if len(s.Skipped) > 0 {
			return fmt.Errorf("%s: no job to simulate (%d skipped)", s.Source, len(s.Skipped))
		}
		return fmt.Errorf("%s: no job to simulate", s.Source)
	}
	seen := make(map[int]int, len(s.Jobs))
	for i, j := range s.Jobs {
		where := fmt.Sprintf("job %d", j.ID)
		if j.Line > 0 {
			where = fmt.Sprintf("%s:%d: job %d", s.Source, j.Line, j.ID)
		}
		switch {
		case j.Nodes < 1 || !(j.Runtime > 0) || math.IsInf(j.Runtime, 0) || !(j.Submit >= 0) || math.IsInf(j.Submit, 0):
			return fmt.Errorf("%s is invalid (nodes %d, runtime %g, submit %g)", where, j.Nodes, j.Runtime, j.Submit)
		case !(j.Requested >= j.Runtime) || math.IsInf(j.Requested, 0):
			return fmt.Errorf("%s: requested time %g is shorter than the run time %g", where, j.Requested, j.Runtime)
		case j.TraceRequested != 0 && !(j.TraceRequested > 0 && j.TraceRequested < j.Runtime):
			return fmt.Errorf("%s: trace's requested time %g is not between 0 and the run time %g", where, j.TraceRequested, j.Runtime)
		case i > 0 && j.Submit < s.Jobs[i-1].Submit:
			return fmt.Errorf("%s: jobs are not in submit order", where)
		}
		if k, dup := seen[j.ID]; dup {
			return fmt.Errorf("%s: id repeats job %d of the stream", where, k+1)
		}
		seen[j.ID] = i
	}
	return nil
}

func (s *Stream) sortJobs() {
	sort.SliceStable(s.Jobs, func(i, j int) bool { return s.Jobs[i].Submit < s.Jobs[j].Submit })
}

// Limit drops jobs larger than the machine (recording them as skipped).
func (s *Stream) Limit(machineNodes int) {
	kept := s.Jobs[:0]
	for _, j := range s.Jobs {
		if j.Nodes > machineNodes {
			s.Skipped = append(s.Skipped, Skipped{ID: j.ID, Line: j.Line, Reason: fmt.Sprintf("needs %d nodes, the machine has %d", j.Nodes, machineNodes)})
			continue
		}
		kept = append(kept, j)
	}
	s.Jobs = kept
}

// Offered returns the offered load: node-seconds requested per
// node-second of the span between the first and last submission.
func (s *Stream) Offered(machineNodes int) float64 {
	if len(s.Jobs) == 0 {
		return 0
	}
	work := 0.0
	for _, j := range s.Jobs {
		work += float64(j.Nodes) * j.Runtime
	}
	span := s.Jobs[len(s.Jobs)-1].Submit - s.Jobs[0].Submit
	if span <= 0 {
		return math.Inf(1)
	}
	return work / (span * float64(machineNodes))
}

// SyntheticParams describe a synthetic stream after seed 001 §5.3: job
// times up to a day, submissions spread uniformly over a span of months,
// enough jobs for a given offered load.
type SyntheticParams struct {
	Load    float64 // offered load (default 0.8)
	MaxTime float64 // longest job, seconds (default 86 400)
	MinTime float64 // shortest job, seconds (default 60)
	Span    float64 // seconds over which jobs are submitted (default 4 months)
	Jobs    int     // if > 0, exactly this many jobs (Load is then ignored)
	// Sizes is the job-size distribution: "loguniform" (default; P(m) ∝
	// 1/m on 1..MaxNodes), "uniform" or "pow2" (powers of two).
	Sizes    string
	MaxNodes int // largest job (default half the machine)
	// Times is the runtime distribution on [MinTime, MaxTime]:
	// "loguniform" (default) or "uniform".
	Times string
	// Overestimate multiplies runtimes into requested times (default 1).
	Overestimate float64
	Seed         uint64
}

const (
	day   = 86400.0
	month = 30 * day
)

// ParseSynthetic reads "load=0.8,span=4mo,maxtime=1d,sizes=loguniform,
// times=loguniform,maxnodes=16,jobs=500,seed=3,overestimate=1.5". Durations accept s, m, h,
// d, w and mo suffixes.
func ParseSynthetic(spec string) (SyntheticParams, error) {
	p := SyntheticParams{}
	if strings.TrimSpace(spec) == "" {
		return p, nil
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return p, fmt.Errorf("synthetic stream: expected key=value, got %q", kv)
		}
		var err error
		switch strings.ToLower(k) {
		case "load":
			p.Load, err = strconv.ParseFloat(v, 64)
			if err == nil && (p.Load <= 0 || p.Load > 10 || math.IsNaN(p.Load)) {
				err = fmt.Errorf("must be in (0, 10]")
			}
		case "span":
			p.Span, err = parseDuration(v)
		case "maxtime":
			p.MaxTime, err = parseDuration(v)
		case "mintime":
			p.MinTime, err = parseDuration(v)
		case "jobs":
			p.Jobs, err = strconv.Atoi(v)
			if err == nil && (p.Jobs < 1 || p.Jobs > 10_000_000) {
				err = fmt.Errorf("must be 1..10000000")
			}
		case "sizes":
			p.Sizes = v
			if v != "loguniform" && v != "uniform" && v != "pow2" {
				err = fmt.Errorf("want loguniform, uniform or pow2")
			}
		case "times":
			p.Times = v
			if v != "loguniform" && v != "uniform" {
				err = fmt.Errorf("want loguniform or uniform")
			}
		case "maxnodes":
			p.MaxNodes, err = strconv.Atoi(v)
			if err == nil && p.MaxNodes < 1 {
				err = fmt.Errorf("must be at least 1")
			}
		case "overestimate":
			p.Overestimate, err = strconv.ParseFloat(v, 64)
			if err == nil && (p.Overestimate < 1 || p.Overestimate > 100) {
				err = fmt.Errorf("must be in [1, 100]")
			}
		case "seed":
			p.Seed, err = strconv.ParseUint(v, 10, 64)
		default:
			return p, fmt.Errorf("synthetic stream: unknown parameter %q (load, span, maxtime, mintime, jobs, sizes, times, maxnodes, overestimate, seed)", k)
		}
		if err != nil {
			return p, fmt.Errorf("synthetic stream: %s=%s: %v", k, v, err)
		}
	}
	return p, nil
}

func parseDuration(s string) (float64, error) {
	mult := 1.0
	for _, u := range []struct {
		suf string
		m   float64
	}{{"mo", month}, {"w", 7 * day}, {"d", day}, {"h", 3600}, {"m", 60}, {"s", 1}} {
		if strings.HasSuffix(s, u.suf) {
			s, mult = strings.TrimSuffix(s, u.suf), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("invalid duration (want a positive number with unit s, m, h, d, w or mo)")
	}
	return v * mult, nil
}

// Synthetic generates a stream for a machine of the given size.
func Synthetic(p SyntheticParams, machineNodes int) (*Stream, error) {
	if machineNodes < 1 {
		return nil, fmt.Errorf("machine has no nodes")
	}
	if p.Load == 0 {
		p.Load = 0.8
	}
	if p.MaxTime == 0 {
		p.MaxTime = day
	}
	if p.MinTime == 0 {
		p.MinTime = min(60, p.MaxTime)
	}
	if p.MinTime > p.MaxTime {
		return nil, fmt.Errorf("mintime %.0fs exceeds maxtime %.0fs", p.MinTime, p.MaxTime)
	}
	if p.Span == 0 {
		p.Span = 4 * month
	}
	if p.Sizes == "" {
		p.Sizes = "loguniform"
	}
	if p.Times == "" {
		p.Times = "loguniform"
	}
	if p.MaxNodes == 0 {
		p.MaxNodes = max(1, machineNodes/2)
	}
	p.MaxNodes = min(p.MaxNodes, machineNodes)
	if p.Overestimate == 0 {
		p.Overestimate = 1
	}
	r := rand.New(rand.NewPCG(p.Seed, 0x5c4ed))
	target := p.Load * float64(machineNodes) * p.Span
	s := &Stream{Source: fmt.Sprintf("synthetic(load=%g,span=%gd,maxtime=%gs,sizes=%s,maxnodes=%d,seed=%d)",
		p.Load, p.Span/day, p.MaxTime, p.Sizes, p.MaxNodes, p.Seed)}
	if p.Times != "loguniform" {
		s.Source = strings.Replace(s.Source, ",maxnodes=", ",times="+p.Times+",maxnodes=", 1)
	}
	work := 0.0
	for id := 1; ; id++ {
		if p.Jobs > 0 && id > p.Jobs {
			break
		}
		if p.Jobs == 0 && work >= target {
			break
		}
		m := drawSize(r, p.Sizes, p.MaxNodes)
		// Runtimes between MinTime and MaxTime.
		var rt float64
		if p.Times == "uniform" {
			rt = p.MinTime + r.Float64()*(p.MaxTime-p.MinTime)
		} else {
			rt = math.Exp(math.Log(p.MinTime) + r.Float64()*(math.Log(p.MaxTime)-math.Log(p.MinTime)))
		}
		rt = math.Round(rt)
		req := math.Min(math.Round(rt*p.Overestimate), math.Max(p.MaxTime, rt))
		job := Job{ID: id, Submit: math.Round(r.Float64() * p.Span), Nodes: m, Runtime: rt, Requested: req}
		s.Jobs = append(s.Jobs, job)
		work += float64(m) * rt
		if len(s.Jobs) > 10_000_000 {
			return nil, fmt.Errorf("synthetic stream would exceed 10 million jobs")
		}
	}
	s.sortJobs()
	for i := range s.Jobs {
		s.Jobs[i].ID = i + 1
	}
	return s, nil
}

func drawSize(r *rand.Rand, dist string, maxN int) int {
	switch dist {
	case "uniform":
		return 1 + r.IntN(maxN)
	case "pow2":
		k := 0
		for 1<<(k+1) <= maxN {
			k++
		}
		return 1 << r.IntN(k+1)
	}
	// log-uniform: P(m) ∝ 1/m.
	total := 0.0
	for m := 1; m <= maxN; m++ {
		total += 1 / float64(m)
	}
	x := r.Float64() * total
	for m := 1; m <= maxN; m++ {
		x -= 1 / float64(m)
		if x <= 0 {
			return m
		}
	}
	return maxN
}
