package sched

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// SWFOptions tune ParseSWF.
type SWFOptions struct {
	Strict       bool // fail on the first problem instead of reporting it
	ProcsPerNode int  // processors per node (default 1)
}

// swfFieldNames names the 18 fields of the Standard Workload Format.
var swfFieldNames = [18]string{"job number", "submit time", "wait time", "run time",
	"allocated processors", "average CPU time", "used memory", "requested processors",
	"requested time", "requested memory", "status", "user id", "group id", "executable",
	"queue", "partition", "preceding job", "think time"}

// ParseSWF reads a trace in the Standard Workload Format of the Parallel
// Workloads Archive: one job per line, 18 whitespace-separated fields,
// ';' comments, -1 for missing values. Nodes come from the requested
// processors (field 8), else the allocated ones (field 5); runtime from
// field 4; the requested time from field 9, raised to the runtime if
// shorter (the shorter value is kept in TraceRequested). Submit
// times are shifted so the first job arrives at 0.
//
// Every problem is reported once with its line number: malformed lines
// (not 18 numbers, a value below −1) and repeated job ids are skipped,
// jobs that cannot run (no processors, no run time, no submit time) are
// skipped, and a submit time earlier than the line before is a warning
// (the job is kept in submit order). With Strict the first malformed
// line, repeated id or out-of-order submit time is an error naming the
// line instead.
func ParseSWF(r io.Reader, name string, o SWFOptions) (*Stream, error) {
	if o.ProcsPerNode == 0 {
		o.ProcsPerNode = 1
	}
	if o.ProcsPerNode < 0 {
		return nil, fmt.Errorf("processors per node must be positive")
	}
	p := swfParser{name: name, o: o, s: &Stream{Source: name}, idLine: map[int]int{}, lastSubmit: math.Inf(-1)}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		p.line++
		if err := p.parseLine(sc.Text()); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, p.line+1, err)
	}
	p.s.shiftToZero()
	return p.s, nil
}

type swfParser struct {
	name       string
	o          SWFOptions
	s          *Stream
	line       int
	idLine     map[int]int // job id → line it first appeared on
	lastSubmit float64
	lastLine   int
}

// problem reports a malformed line: an error in strict mode, else a
// skipped line.
func (p *swfParser) problem(id int, reason string) error {
	if p.o.Strict {
		return fmt.Errorf("%s:%d: %s", p.name, p.line, reason)
	}
	p.s.Skipped = append(p.s.Skipped, Skipped{ID: id, Line: p.line, Reason: reason})
	return nil
}

func (p *swfParser) parseLine(text string) error {
	t := strings.TrimSpace(text)
	if t == "" || t[0] == ';' {
		return nil
	}
	v, bad := swfFields(t)
	if bad != "" {
		return p.problem(0, bad)
	}
	id := int(v[0])
	if first, dup := p.idLine[id]; dup {
		return p.problem(id, fmt.Sprintf("job id %d repeats line %d", id, first))
	}
	p.idLine[id] = p.line
	j, reason := swfJob(v, p.o.ProcsPerNode)
	if reason != "" {
		p.s.Skipped = append(p.s.Skipped, Skipped{ID: id, Line: p.line, Reason: reason})
		return nil
	}
	if j.Submit < p.lastSubmit {
		msg := fmt.Sprintf("submit time %g is earlier than %g on line %d (SWF lines are in submit order)", j.Submit, p.lastSubmit, p.lastLine)
		if p.o.Strict {
			return fmt.Errorf("%s:%d: %s", p.name, p.line, msg)
		}
		p.s.Warnings = append(p.s.Warnings, Skipped{ID: id, Line: p.line, Reason: msg + "; kept in submit order"})
	} else {
		p.lastSubmit, p.lastLine = j.Submit, p.line
	}
	j.Line = p.line
	p.s.Jobs = append(p.s.Jobs, j)
	return nil
}

// swfFields parses the 18 numbers of a line, or says what is wrong.
func swfFields(t string) (v [18]float64, bad string) {
	f := strings.Fields(t)
	if len(f) != 18 {
		return v, fmt.Sprintf("expected 18 fields, found %d", len(f))
	}
	for i, x := range f {
		n, err := strconv.ParseFloat(x, 64)
		switch {
		case err != nil || math.IsNaN(n) || math.IsInf(n, 0):
			return v, fmt.Sprintf("field %d (%s) %q is not a number", i+1, swfFieldNames[i], x)
		case n < -1:
			return v, fmt.Sprintf("field %d (%s) is %s; values are non-negative or -1 (missing)", i+1, swfFieldNames[i], x)
		case i == 0 && (n < 0 || n != math.Trunc(n) || n > math.MaxInt32):
			return v, fmt.Sprintf("field 1 (job number) %q is not a job number", x)
		}
		v[i] = n
	}
	return v, ""
}

// swfJob makes a job of the fields, or says why it cannot run.
func swfJob(v [18]float64, ppn int) (Job, string) {
	procs := v[7]
	if procs <= 0 {
		procs = v[4]
	}
	runtime, req := v[3], v[8]
	switch {
	case v[1] < 0:
		return Job{}, "negative or missing submit time"
	case procs <= 0:
		return Job{}, "no processor count"
	case runtime <= 0:
		return Job{}, "no run time (cancelled or failed before start)"
	case procs/float64(ppn) > 1e9:
		return Job{}, fmt.Sprintf("%g processors is beyond any machine", procs)
	}
	traceReq := 0.0
	if req < runtime {
		if req > 0 {
			traceReq = req
		}
		req = runtime
	}
	nodes := int(math.Ceil(procs / float64(ppn)))
	return Job{ID: int(v[0]), Submit: v[1], Nodes: nodes, Runtime: runtime, Requested: req, TraceRequested: traceReq}, ""
}

// shiftToZero moves submit times so the first job arrives at 0 and puts
// the jobs in submit order.
func (s *Stream) shiftToZero() {
	first := math.Inf(1)
	for _, j := range s.Jobs {
		first = math.Min(first, j.Submit)
	}
	for i := range s.Jobs {
		s.Jobs[i].Submit -= first
	}
	s.sortJobs()
}
