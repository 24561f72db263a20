package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/collective"
	"github.com/icn-hpc/icn/shmem"
)

func TestParseOSHMEMOutput(t *testing.T) {
	out := "noise\nICNOSH put 8 1000 0.001\nICNOSH get 8 x 0.1\nICNOSH barrier 0 10 0.5\n[vm] Caught signal 11\n"
	rows := parseOSHMEMOutput(out)
	if len(rows) != 2 || rows[0].API != "put" || rows[0].MsgsPerSec != 1e6 || rows[0].BytesPerSec != 8e6 ||
		math.Abs(rows[0].LatencyUs-1) > 1e-9 || rows[1].API != "barrier" || rows[1].Transport != "oshmem" {
		t.Fatalf("rows %+v", rows)
	}
}

func FuzzParseOSHMEMOutput(f *testing.F) {
	f.Add("ICNOSH put 8 1000 0.001\n")
	f.Add("ICNOSH a -1 0 -0\nICNOSH b 8 9223372036854775807 1e-300")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range parseOSHMEMOutput(s) {
			if r.Count <= 0 || r.MsgsPerSec <= 0 || strings.ContainsAny(r.API, " \n") {
				t.Fatalf("bad row %+v", r)
			}
		}
	})
}

// TestCollectiveModels: the model of a collective row is seed 002's cost
// with ts from the 8-byte put latency and tw from the largest put rate.
func TestCollectiveModels(t *testing.T) {
	rows := []shmem.BenchRow{
		{Test: "latency", API: "put", Size: 8, LatencyUs: 2},
		{Test: "message_rate", API: "put", Size: 1 << 20, BytesPerSec: 1e9},
		{Test: "collective", API: "reduce", Procs: 4, Size: 800, Algorithm: "tree"},
		{Test: "collective", API: "alltoall", Procs: 3, Size: 8, Algorithm: "linear"},
	}
	rows = withCollectiveModels(rows)
	p := collective.Params{Ts: 2, Tw: 1e-3, M: 800}
	hc, _ := collective.ParseModelTopo("hypercube:2")
	r1, _ := collective.Cost(hc, "reduce", collective.CT, p)
	r2, _ := collective.Cost(hc, "bcast", collective.CT, p)
	if got := rows[2].ModelUs; math.Abs(got-(r1.Time+r2.Time)) > 1e-9 || !strings.HasPrefix(rows[2].Model, "hypercube:2") {
		t.Errorf("reduce model %g %q, want %g", got, rows[2].Model, r1.Time+r2.Time)
	}
	ring, _ := collective.ParseModelTopo("ring:3")
	p.M = 8
	r3, _ := collective.Cost(ring, "alltoall", collective.CT, p)
	if got := rows[3].ModelUs; math.Abs(got-r3.Time) > 1e-9 {
		t.Errorf("alltoall model %g, want %g", got, r3.Time)
	}
}

// TestOSHMEMRunArgs: oshrun binds OSHMEM's PEs as icn's shm PEs (auto:
// to cores) and gets the target time and the tests last.
func TestOSHMEMRunArgs(t *testing.T) {
	for _, c := range []struct{ bind, want string }{
		{shmem.BindCore, "--bind-to core"}, {shmem.BindNone, "--bind-to none"}, {shmem.BindAuto, "--bind-to core"},
	} {
		args := oshrunArgs("/x/bench", 250*time.Millisecond, "barrier,rate", c.bind)
		line := strings.Join(args, " ")
		if !strings.HasSuffix(line, "-np 2 /x/bench 0.25 barrier,rate") || strings.Count(line, "--bind-to") != 1 ||
			!strings.Contains(line, c.want) {
			t.Errorf("bind %s: %q, want %q and the program's arguments last", c.bind, line, c.want)
		}
	}
}
