//go:build long

package sched

import (
	"testing"

	"github.com/icn-hpc/icn/alloc"
)

// longReplays are the 3 170-job streams of the replay benchmarks.
var longReplays = []replayCase{
	{"3170on240/improved/fcfs", "torus:4x6x10", nil, "angara*", alloc.Improved, Policy{Window: 1}, trace3170, transitEqual},
	{"3170on240/improved/w8", "torus:4x6x10", nil, "angara*", alloc.Improved, Policy{Window: 8}, trace3170, transitEqual},
	{"3170on240/improved/easy", "torus:4x6x10", nil, "angara*", alloc.Improved, Policy{Window: 1, Backfill: true}, trace3170, transitEqual},
	{"3170on240/baseline/easy", "torus:4x6x10", nil, "angara*", alloc.Baseline, Policy{Window: 1, Backfill: true}, trace3170, transitEqual},
	{"3170load/improved/w1", "torus:4x6x10", nil, "angara*", alloc.Improved, Policy{Window: 1}, trace3170Load, transitEqual},
	{"3170load/improved/w8-easy", "torus:4x6x10", nil, "angara*", alloc.Improved, Policy{Window: 8, Backfill: true}, trace3170Load, transitEqual},
}

// TestReplayOutputsUnchangedLong checks the 3 170-job replays of the
// benchmarks against their recorded digests (minutes of CPU).
func TestReplayOutputsUnchangedLong(t *testing.T) {
	checkReplays(t, longReplays)
}
