package sched

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/topology"
)

// updateDigests rewrites testdata/replay_digests.txt from the current code
// (only when the schedules are meant to change).
var updateDigests = flag.Bool("update-digests", false, "rewrite testdata/replay_digests.txt")

const digestFile = "testdata/replay_digests.txt"

// replayCase is one replay whose outputs must not change when node
// selection is only made faster.
type replayCase struct {
	name    string
	spec    string
	fail    []string // failed links, as --fail-links takes them
	rule    string
	algo    alloc.Algo
	policy  Policy
	stream  SyntheticParams
	transit func(int) int
}

func transitHalf(m int) int    { return m / 2 }
func transitQuarter(m int) int { return (m + 3) / 4 }

// smallReplays are fast enough for every test run: several tori (one with
// failed links), rules, policies and transit limits.
var smallReplays = []replayCase{
	{"4x4x2/improved/w1", "torus:4x4x2", nil, "angara*", alloc.Improved, Policy{Window: 1},
		SyntheticParams{Jobs: 150, Span: 3 * day, MaxTime: 6 * 3600, Seed: 3, Overestimate: 2}, transitEqual},
	{"4x4x2/improved/w8", "torus:4x4x2", nil, "angara*", alloc.Improved, Policy{Window: 8},
		SyntheticParams{Jobs: 150, Span: 3 * day, MaxTime: 6 * 3600, Seed: 4, Overestimate: 2}, transitHalf},
	{"4x4x2/improved/easy", "torus:4x4x2", nil, "angara", alloc.Improved, Policy{Window: 1, Backfill: true},
		SyntheticParams{Jobs: 150, Span: 3 * day, MaxTime: 6 * 3600, Seed: 5, Overestimate: 2}, transitEqual},
	{"4x6x10/improved/w1", "torus:4x6x10", nil, "angara*", alloc.Improved, Policy{Window: 1},
		SyntheticParams{Jobs: 120, Span: 4 * day, Seed: 6, Overestimate: 2}, transitEqual},
	{"4x6x10/improved/w4-easy", "torus:4x6x10", nil, "angara*", alloc.Improved, Policy{Window: 4, Backfill: true},
		SyntheticParams{Jobs: 120, Span: 4 * day, Seed: 7, Overestimate: 2}, transitQuarter},
	{"4x4x4-faults/improved/w1", "torus:4x4x4", []string{"0.0.0+X", "1.1.1+Y", "2.2.2+Z", "3.1.0-X"}, "angara*", alloc.Improved, Policy{Window: 1},
		SyntheticParams{Jobs: 120, Span: 3 * day, MaxTime: 6 * 3600, Seed: 8, Overestimate: 2}, transitEqual},
	{"4x4x4-faults/improved/easy", "torus:4x4x4", []string{"1.1.0+Y", "2.3.1-Z"}, "angara-", alloc.Improved, Policy{Window: 2, Backfill: true},
		SyntheticParams{Jobs: 120, Span: 3 * day, MaxTime: 6 * 3600, Seed: 9, Overestimate: 2}, transitHalf},
	{"4x4x2/baseline/easy", "torus:4x4x2", nil, "angara*", alloc.Baseline, Policy{Window: 1, Backfill: true},
		SyntheticParams{Jobs: 150, Span: 3 * day, MaxTime: 6 * 3600, Seed: 10, Overestimate: 2}, transitEqual},
}

// runReplay simulates a case and returns its digest: SHA-256 of the JSON
// summary without alloc_seconds (a timing) followed by the schedule as
// `icn sched simulate --schedule-out` writes it (one JSON object per job).
func runReplay(t testing.TB, tc replayCase) string {
	g, err := topology.Parse(tc.spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(tc.fail) > 0 {
		if g, err = g.ApplyFaults(strings.Join(tc.fail, ","), ""); err != nil {
			t.Fatal(err)
		}
	}
	st, err := alloc.NewState(g)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := alloc.NewAngaraRouter(g, tc.rule)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := Synthetic(tc.stream, st.N())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Simulate(Config{State: st, Router: rt, Algo: tc.algo, Policy: tc.policy, Transit: tc.transit}, stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSchedule(st.N(), rep.Schedule); err != nil {
		t.Fatalf("%s: %v", tc.name, err)
	}
	return reportDigest(t, rep)
}

func reportDigest(t testing.TB, rep *Report) string {
	r := *rep
	r.AllocSeconds = 0
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	for _, j := range rep.Schedule {
		if err := enc.Encode(j); err != nil {
			t.Fatal(err)
		}
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:])
}

func readDigests(t testing.TB) map[string]string {
	out := map[string]string{}
	f, err := os.Open(digestFile)
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, sum, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s: bad line %q", digestFile, line)
		}
		out[name] = sum
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func writeDigests(t testing.TB, d map[string]string) {
	names := make([]string, 0, len(d))
	for n := range d {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# SHA-256 of each replay's JSON summary (alloc_seconds zeroed) and schedule;\n")
	b.WriteString("# written by `go test ./sched -run ReplayOutputsUnchanged -update-digests` (add -tags long for the 3 170-job rows).\n")
	for _, n := range names {
		fmt.Fprintf(&b, "%s %s\n", n, d[n])
	}
	if err := os.WriteFile(filepath.FromSlash(digestFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkReplays compares each case's digest with the recorded one: making
// node selection faster must leave every schedule and figure as it was.
func checkReplays(t *testing.T, cases []replayCase) {
	want := readDigests(t)
	for _, tc := range cases {
		got := runReplay(t, tc)
		if *updateDigests {
			want[tc.name] = got
			continue
		}
		w, ok := want[tc.name]
		if !ok {
			t.Errorf("%s: no recorded digest (run with -update-digests)", tc.name)
			continue
		}
		if got != w {
			t.Errorf("%s: schedule or summary changed: digest %s, recorded %s", tc.name, got, w)
		}
	}
	if *updateDigests {
		writeDigests(t, want)
	}
}

func TestReplayOutputsUnchanged(t *testing.T) {
	checkReplays(t, smallReplays)
}
