//go:build long

package sched

import "testing"

// TestReplayOutputsUnchangedLong checks the 3 170-job replays of the
// benchmarks against their recorded digests (minutes of CPU).
func TestReplayOutputsUnchangedLong(t *testing.T) {
	checkReplays(t, longReplays)
}
