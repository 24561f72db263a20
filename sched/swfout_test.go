package sched

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/alloc"
)

// checkPWA applies the Parallel Workloads Archive's rules for an SWF file
// to text: header comments "; Key: value" with known keys before the
// jobs, 18 numeric fields per job line, -1 or non-negative values, job
// numbers distinct, lines in submit order, wait and run time present for
// completed jobs (status 1) and allocated processors within MaxProcs.
func checkPWA(t *testing.T, text string) (header map[string]string, lines [][18]float64) {
	t.Helper()
	known := map[string]bool{"Version": true, "Computer": true, "Installation": true, "Acknowledge": true,
		"Information": true, "Conversion": true, "MaxJobs": true, "MaxRecords": true, "Preemption": true,
		"UnixStartTime": true, "TimeZone": true, "TimeZoneString": true, "StartTime": true, "EndTime": true,
		"MaxNodes": true, "MaxProcs": true, "MaxRuntime": true, "MaxMemory": true, "AllowOveruse": true,
		"MaxQueues": true, "Queues": true, "Queue": true, "MaxPartitions": true, "Partitions": true,
		"Partition": true, "Note": true}
	header = map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	ids := map[float64]bool{}
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if strings.HasPrefix(l, ";") {
			if len(lines) > 0 {
				t.Fatalf("line %d: header comment after the jobs", n)
			}
			k, v, ok := strings.Cut(strings.TrimSpace(l[1:]), ":")
			if !ok || !known[k] {
				t.Fatalf("line %d: %q is not a standard header comment", n, l)
			}
			header[k] = strings.TrimSpace(v)
			continue
		}
		f := strings.Fields(l)
		if len(f) != 18 {
			t.Fatalf("line %d: %d fields", n, len(f))
		}
		var v [18]float64
		for i, x := range f {
			y, err := strconv.ParseFloat(x, 64)
			if err != nil || y < -1 {
				t.Fatalf("line %d field %d: %q", n, i+1, x)
			}
			v[i] = y
		}
		if ids[v[0]] {
			t.Fatalf("line %d: job %g repeated", n, v[0])
		}
		ids[v[0]] = true
		if len(lines) > 0 && v[1] < lines[len(lines)-1][1] {
			t.Fatalf("line %d: not in submit order", n)
		}
		switch v[10] {
		case 1:
			if v[2] < 0 || v[3] < 0 || v[4] < 1 {
				t.Fatalf("line %d: completed job without wait, run time or processors", n)
			}
		case 0, 5:
		default:
			t.Fatalf("line %d: status %g", n, v[10])
		}
		lines = append(lines, v)
	}
	if header["Version"] != "2.2" {
		t.Fatalf("version %q", header["Version"])
	}
	maxProcs, _ := strconv.ParseFloat(header["MaxProcs"], 64)
	for _, v := range lines {
		if v[4] > maxProcs {
			t.Fatalf("job %g has %g processors, MaxProcs %g", v[0], v[4], maxProcs)
		}
	}
	if len(lines) == 0 {
		t.Fatal("no job lines")
	}
	return header, lines
}

// The SWF schedule follows the archive's rules and gives back the
// simulated wait and run times; read as a trace it is the same stream.
func TestWriteSWF(t *testing.T) {
	st, rt := newCluster(t, "torus:4x4")
	stream, _ := Synthetic(SyntheticParams{Jobs: 60, Span: day, MaxTime: 6 * 3600, Seed: 5, Overestimate: 2, Sizes: "pow2"}, st.N())
	stream.Jobs = append(stream.Jobs, Job{ID: 61, Submit: stream.Jobs[59].Submit + 1, Nodes: 3, Runtime: 10, Requested: 10})
	rep, err := Simulate(Config{State: st, Router: rt, Algo: alloc.Baseline, Policy: Policy{Window: 4, Backfill: true}}, stream)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteSWF(&buf, rep, stream, SWFHeader{Machine: "torus:4x4, baseline", Policy: "window 4, EASY", Nodes: 16}); err != nil {
		t.Fatal(err)
	}
	header, lines := checkPWA(t, buf.String())
	if !strings.Contains(header["Computer"], "torus:4x4") || !strings.Contains(header["Information"], "EASY") {
		t.Errorf("header does not name machine and policy: %v", header)
	}
	if len(lines) != len(rep.Schedule) {
		t.Fatalf("%d lines for %d jobs", len(lines), len(rep.Schedule))
	}
	cancelled := 0
	for i, r := range rep.Schedule {
		v := lines[i]
		if r.Skipped != "" {
			cancelled++
			if v[10] != 5 {
				t.Errorf("job %d never ran but has status %g", r.ID, v[10])
			}
			continue
		}
		if v[2] != r.Start-r.Submit || v[3] != r.End-r.Start || int(v[4]) != len(r.NodeIDs()) {
			t.Errorf("job %d: line %v, schedule %+v", r.ID, v, r)
		}
	}
	if cancelled != 1 {
		t.Errorf("%d cancelled, want 1 (the 3-node job the baseline cannot place)", cancelled)
	}
	back, err := ParseSWF(&buf, "out.swf", SWFOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	var ran []Job
	for i, r := range rep.Schedule {
		if r.Skipped == "" {
			ran = append(ran, stream.Jobs[i])
		}
	}
	if len(back.Jobs) != len(ran) {
		t.Fatalf("read back %d jobs, %d ran", len(back.Jobs), len(ran))
	}
	for i, j := range back.Jobs {
		o := ran[i]
		if j.ID != o.ID || j.Nodes != o.Nodes || j.Requested != o.Requested || j.Submit != o.Submit-stream.Jobs[0].Submit {
			t.Fatalf("round trip: %+v became %+v", o, j)
		}
	}
}

func TestUtilizationCurveAndWaits(t *testing.T) {
	st, rt := newCluster(t, "torus:4x4x2")
	stream, _ := Synthetic(SyntheticParams{Jobs: 100, Span: 2 * day, MaxTime: 6 * 3600, Seed: 8}, st.N())
	rep, err := Simulate(Config{State: st, Router: rt, Algo: alloc.Improved, Policy: Policy{Window: 1}}, stream)
	if err != nil {
		t.Fatal(err)
	}
	x, y := UtilizationCurve(rep.Schedule, st.N(), 50)
	mean := 0.0
	for i := range y {
		if y[i] < 0 || y[i] > 1+1e-9 {
			t.Fatalf("bin %d: utilization %g", i, y[i])
		}
		mean += y[i] / float64(len(y))
	}
	if len(x) != 50 || abs(mean-rep.Utilization) > 1e-9 {
		t.Errorf("mean of the curve %g, report %g", mean, rep.Utilization)
	}
	wx, wy := WaitCDF(rep.Schedule)
	for i := 1; i < len(wx); i++ {
		if wx[i] <= wx[i-1] || wy[i] <= wy[i-1] {
			t.Fatal("wait distribution not increasing")
		}
	}
	if len(wy) == 0 || wy[len(wy)-1] != 1 {
		t.Errorf("distribution ends at %v", wy)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
