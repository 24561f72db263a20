// Package benchscen holds, once, the scenarios that both `icn bench`
// (cmd/icn/bench.go) and the package benchmarks (go test -bench) run, so
// that a bench row and the benchmark it names do the same work. It is
// data only (specs in the syntax of topology.Parse, node lists and link
// failures in that of Graph.ParseNodes and Graph.ApplyFaults, engine and
// rule names) and imports nothing of icn, so the tests of any package can
// use it.
package benchscen

// Network is a scenario's network at full size and the smaller one
// `icn bench --quick` takes instead.
type Network struct {
	Full, Quick string
}

// Spec returns the full-size spec, or the quick one.
func (n Network) Spec(quick bool) string {
	if quick {
		return n.Quick
	}
	return n.Full
}

// AllPairs is the torus of all-pairs distances (the generic BFS) on all
// cores against one: icn bench's first row and topology's
// BenchmarkAllPairs.
var AllPairs = Network{"torus:16x16x16", "torus:8x8x8"}

// TableRule is the routing rule of every routing-table scenario.
const TableRule = "angara*"

// TableVsBaseline is the torus whose verified BFS table, every node
// active, icn bench times against the baseline algorithm (routing's
// BenchmarkTable: 8x8x4x4/bfs against 8x8x4x4/baseline).
var TableVsBaseline = Network{"torus:8x8x4x4", "torus:4x4x4x2"}

// WholeTable is the torus whose verified BFS table, every node active,
// icn bench times on all cores against one core and against the strictly
// sequential algorithm (routing's BenchmarkBuildTableCores/16x16x16 and
// BenchmarkTable: 16x16x16/bfs against 16x16x16/bfs-seq).
var WholeTable = Network{"torus:16x16x16", "torus:8x8x8"}

// Job is a job's table on a machine: its active and transit nodes and the
// machine's failed links.
type Job struct {
	Topo, Active, Transit, FailLinks string
}

// JobTable is the job whose router and table icn bench times against
// the table alone on one core (routing's BenchmarkJobTable and
// BenchmarkBuildTableCores/job32x32x32): at full size 4 096 active nodes
// of a 32x32x32 machine, transit planes z = 4 and z = 31, and 10 failed
// X/Y links inside the job's slab or on its transit plane.
func JobTable(quick bool) Job {
	if quick {
		return Job{"torus:16x16x8", "*.*.0-1", "*.*.2,*.*.7", "1.1.0+X,2.5.1+Y"}
	}
	return Job{"torus:32x32x32", "*.*.0-3", "*.*.4,*.*.31",
		"1.1.0+X,2.5.1+Y,7.7.2+X,9.12.3+Y,14.3.0+X,17.20.1+Y,21.9.2+X,25.25.3+Y,28.14.4+X,30.30.31+Y"}
}

// Unicast is a unicast engine's tables of a fabric.
type Unicast struct {
	Fabric Network
	Engine string
}

// SSSPTables are the sssp tables of the 16 000-node fat tree, on all
// cores against one: icn bench's row and unicast's BenchmarkSSSPWorkers.
var SSSPTables = Unicast{Network{"fattree:m=40,n=3", "fattree:m=16,n=3"}, "sssp"}

// Multicast is a multicast engine against a baseline engine on the same
// groups of a fabric.
type Multicast struct {
	Fabric, Groups Network // Groups: a workload spec (multicast.ParseWorkload)
	Algo, Baseline string
}

// FULBvsSSSP is FULB-MC against SSSP-MC-new on every group of a
// 32×40×32 process grid of the TaihuLight-shaped fabric: icn bench's
// multicast rows and multicast's BenchmarkTaihuLightFULBvsSSSP.
var FULBvsSSSP = Multicast{
	Fabric: Network{"taihulight", "fattree:k=8,n=3"},
	Groups: Network{"grid3d:32x40x32", "grid2d:32x16"},
	Algo:   "fulb", Baseline: "sssp-new",
}
