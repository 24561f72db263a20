package sched

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
)

// SWFHeader describes a simulated schedule in the header comments of
// WriteSWF's output.
type SWFHeader struct {
	Machine      string // machine and placement rule
	Policy       string // queue policy
	Nodes        int
	ProcsPerNode int // default 1
}

// SWF status values (field 11).
const (
	swfCompleted = 1
	swfCancelled = 5
)

// WriteSWF writes a simulated schedule in the Standard Workload Format of
// the Parallel Workloads Archive (version 2.2): header comments naming the
// machine and policy, then one line of 18 fields per job in submit order,
// with the simulated wait time (field 3), run time (4) and allocated
// processors (5: active and transit nodes) filled in and status 1; jobs
// that never ran have status 5 (cancelled) and −1 in fields 3–5. Fields
// the simulator does not know are −1.
func WriteSWF(w io.Writer, rep *Report, stream *Stream, h SWFHeader) error {
	if h.ProcsPerNode < 1 {
		h.ProcsPerNode = 1
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "; Version: 2.2\n")
	fmt.Fprintf(bw, "; Computer: simulated %s\n", oneLine(h.Machine))
	fmt.Fprintf(bw, "; Installation: icn sched simulate\n")
	fmt.Fprintf(bw, "; Acknowledge: schedule simulated from %s\n", oneLine(stream.Source))
	fmt.Fprintf(bw, "; Information: policy %s\n", oneLine(h.Policy))
	fmt.Fprintf(bw, "; Conversion: times are seconds from the first submission\n")
	fmt.Fprintf(bw, "; MaxJobs: %d\n", len(rep.Schedule))
	fmt.Fprintf(bw, "; MaxRecords: %d\n", len(rep.Schedule))
	fmt.Fprintf(bw, "; Preemption: No\n")
	fmt.Fprintf(bw, "; MaxNodes: %d\n", h.Nodes)
	fmt.Fprintf(bw, "; MaxProcs: %d\n", h.Nodes*h.ProcsPerNode)
	fmt.Fprintf(bw, "; Note: %d jobs ran, %d never ran (status 5); %d input lines were skipped before simulation\n",
		rep.JobsDone, rep.JobsSkipped-len(stream.Skipped), len(stream.Skipped))
	for i, r := range rep.Schedule {
		j := stream.Jobs[i]
		f := [18]string{}
		for k := range f {
			f[k] = "-1"
		}
		f[0] = strconv.Itoa(r.ID)
		f[1] = num(j.Submit)
		f[7] = strconv.Itoa(j.Nodes * h.ProcsPerNode)
		f[8] = num(j.Requested)
		if r.Skipped == "" && r.Start >= 0 {
			f[2] = num(r.Start - j.Submit)
			f[3] = num(r.End - r.Start)
			f[4] = strconv.Itoa(len(r.nodeIDs) * h.ProcsPerNode)
			f[10] = strconv.Itoa(swfCompleted)
		} else {
			f[10] = strconv.Itoa(swfCancelled)
		}
		for k, v := range f {
			if k > 0 {
				bw.WriteByte(' ')
			}
			bw.WriteString(v)
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func oneLine(s string) string {
	out := []rune{}
	for _, r := range s {
		if r == '\n' || r == '\r' {
			r = ' '
		}
		out = append(out, r)
	}
	return string(out)
}

// UtilizationCurve returns the fraction of the machine's nodes busy as
// active nodes in each of bins equal intervals from the first submission
// to the last end (x: the middle of each interval, seconds from the first
// submission).
func UtilizationCurve(recs []JobRecord, nodes, bins int) (x, y []float64) {
	first, last := math.Inf(1), math.Inf(-1)
	for _, r := range recs {
		first = math.Min(first, r.Submit)
		if r.Skipped == "" && r.Start >= 0 {
			last = math.Max(last, r.End)
		}
	}
	if bins < 1 || nodes < 1 || !(last > first) {
		return nil, nil
	}
	width := (last - first) / float64(bins)
	busy := make([]float64, bins)
	for _, r := range recs {
		if r.Skipped != "" || r.Start < 0 {
			continue
		}
		a, b := r.Start-first, r.End-first
		for k := int(a / width); k < bins && float64(k)*width < b; k++ {
			lo, hi := math.Max(a, float64(k)*width), math.Min(b, float64(k+1)*width)
			if hi > lo {
				busy[k] += float64(r.Active) * (hi - lo)
			}
		}
	}
	for k := range busy {
		x = append(x, (float64(k)+0.5)*width)
		y = append(y, busy[k]/(width*float64(nodes)))
	}
	return x, y
}

// WaitCDF returns the distribution of wait times of the jobs that ran:
// y[i] is the fraction of jobs that waited at most x[i] seconds (at most
// 500 points).
func WaitCDF(recs []JobRecord) (x, y []float64) {
	var waits []float64
	for _, r := range recs {
		if r.Skipped == "" && r.Start >= 0 {
			waits = append(waits, r.Start-r.Submit)
		}
	}
	sort.Float64s(waits)
	n := len(waits)
	step := max(1, n/500)
	for i := 0; i < n; i++ {
		if (i+1)%step == 0 || i == n-1 {
			if i+1 < n && waits[i+1] == waits[i] {
				continue
			}
			x = append(x, waits[i])
			y = append(y, float64(i+1)/float64(n))
		}
	}
	return x, y
}
