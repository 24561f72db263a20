package multicast

import (
	"fmt"
	"strings"
	"time"

	"github.com/icn-hpc/icn/topology"
)

// SeedFabric is one of the seed's experiment fabrics with its workloads
// (not to be confused with unicast.Fabric, a subnet's LID view).
type SeedFabric struct {
	Name      string   `json:"name"`
	Spec      string   `json:"spec"`
	Tables    string   `json:"tables"` // the seed's tables for it
	Workloads []string `json:"workloads"`
	Algos     []string `json:"algos"`
}

var baseAlgos = []string{"minhop", "minhop-new", "sssp", "sssp-new", "fulb"}

// SeedFabrics are the five fabrics of seed 004 §4 at the seed's scale with
// the workloads run on them: 2D/3D process grids (every row, column and
// pillar a group; some shaped after the fabric, some not), hierarchical
// groups with leaders and random groups, with 1 or 4 processes per end
// node. The seed names only two of its patterns (240×100 on the torus,
// 81×27×12 on the dragonfly); the others are chosen the same way (the
// grid fills the machine).
var SeedFabrics = []SeedFabric{
	{Name: "fattree", Spec: "fattree:m=40,n=3", Tables: "3, 4",
		Workloads: []string{"grid2d:400x40", "grid2d:160x100", "grid2d:100x160", "grid3d:40x20x20", "grid3d:20x20x40",
			"hier:size=20.20", "random:count=2000,size=32"},
		Algos: baseAlgos},
	{Name: "torus", Spec: "torus:30x20x20:endpoints=2", Tables: "5, 6",
		Workloads: []string{"grid2d:240x100", "grid2d:60x400", "grid3d:60x20x20", "grid3d:30x40x20", "grid3d:40x30x20",
			"hier:size=60.20", "random:count=2000,size=32"},
		Algos: baseAlgos},
	{Name: "dragonfly", Spec: "dragonfly:a=18,p=9,h=9", Tables: "7, 8",
		Workloads: []string{"grid3d:81x27x12", "grid2d:162x162", "grid2d:81x324", "grid3d:18x18x81",
			"hier:size=9.18", "random:count=2000,size=32"},
		Algos: append(append([]string{}, baseAlgos...), "sssp-new+1g", "fulb+1g")},
	{Name: "bluelight", Spec: "bluelight", Tables: "9, 10",
		Workloads: []string{"grid2d:256x136,ppn=4", "grid2d:128x272,ppn=4", "grid3d:32x32x34,ppn=4", "grid3d:128x16x17,ppn=4",
			"hier:size=4.32.8,ppn=4", "random:count=2000,size=32,ppn=4", "grid2d:128x68"},
		Algos: baseAlgos},
	{Name: "taihulight", Spec: "taihulight", Tables: "11, 12",
		Workloads: []string{"grid3d:32x40x32", "grid2d:256x160", "grid2d:160x256", "grid3d:64x32x20",
			"hier:size=32.8", "random:count=2000,size=32", "grid3d:64x64x40,ppn=4"},
		Algos: baseAlgos},
	// The pruned trees again, with the redundancy the seed describes as
	// several paths from a leaf to one top (director) switch: here link
	// rotation, not root rotation, has the choice.
	{Name: "bluelight-director", Spec: "director:bluelight", Tables: "9, 10",
		Workloads: []string{"grid2d:256x136,ppn=4", "grid3d:32x32x34,ppn=4", "grid3d:128x16x17,ppn=4",
			"random:count=2000,size=32,ppn=4", "grid2d:128x68"},
		Algos: []string{"minhop", "minhop-new", "sssp-new", "fulb"}},
	{Name: "taihulight-director", Spec: "director:taihulight", Tables: "11, 12",
		Workloads: []string{"grid3d:32x40x32", "grid2d:256x160", "grid3d:64x32x20", "random:count=2000,size=32"},
		Algos:     []string{"minhop", "minhop-new", "sssp-new", "fulb"}},
}

// FindFabric returns the seed fabric with the given name.
func FindFabric(name string) (SeedFabric, error) {
	var names []string
	for _, f := range SeedFabrics {
		if f.Name == name {
			return f, nil
		}
		names = append(names, f.Name)
	}
	return SeedFabric{}, fmt.Errorf("unknown seed fabric %q (want %s or all)", name, strings.Join(names, ", "))
}

// ExperimentRow is one workload of an experiment: every engine's result.
type ExperimentRow struct {
	Fabric   string    `json:"fabric"`
	Spec     string    `json:"spec"`
	Workload string    `json:"workload"`
	Groups   int       `json:"groups"`
	Members  int       `json:"members"`
	Results  []*Result `json:"results"`
}

// Experiment holds a fabric's rows plus how long its min-hop table took.
type Experiment struct {
	Fabric        SeedFabric      `json:"fabric"`
	Mapping       string          `json:"mapping"`
	EndNodes      int             `json:"end_nodes"`
	Switches      int             `json:"switches"`
	HopSeconds    float64         `json:"hop_table_seconds"`
	HopTableBytes int             `json:"hop_table_bytes"`
	Rows          []ExperimentRow `json:"rows"`
}

// RunExperiment builds the fabric and its min-hop table, then runs every
// engine on every workload (engines one after the other, so their times
// are comparable). algos overrides the fabric's engine list if non-nil.
// progress (may be nil) receives a line per finished run.
func RunExperiment(f SeedFabric, algos []Algo, seed uint64, workers int, progress func(string)) (*Experiment, error) {
	return RunExperimentWith(f, algos, seed, workers, Mapping{}, progress)
}

// RunExperimentWith is RunExperiment with processes placed by mapping mp
// (blocked mappings are skipped for workloads that are not grids or whose
// extents the blocks do not divide).
func RunExperimentWith(f SeedFabric, algos []Algo, seed uint64, workers int, mp Mapping, progress func(string)) (*Experiment, error) {
	g, err := ParseFabric(f.Spec)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	h, err := topology.MinHops(g, workers)
	if err != nil {
		return nil, err
	}
	ex := &Experiment{Fabric: f, EndNodes: g.Count(topology.Endpoint), Switches: g.Count(topology.Switch),
		HopSeconds: time.Since(t0).Seconds(), HopTableBytes: h.Bytes(), Mapping: mp.String()}
	if algos == nil {
		for _, s := range f.Algos {
			a, err := ParseAlgo(s)
			if err != nil {
				return nil, err
			}
			algos = append(algos, a)
		}
	}
	for _, ws := range f.Workloads {
		w, err := ParseWorkload(ws)
		if err != nil {
			return nil, err
		}
		w.Map = mp
		groups, err := w.Groups(g, seed)
		if err != nil && mp.Kind == "blocked" {
			if progress != nil {
				progress(fmt.Sprintf("%s %s: skipped (%v)", f.Name, ws, err))
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		row := ExperimentRow{Fabric: f.Name, Spec: f.Spec, Workload: ws, Groups: len(groups)}
		for _, gr := range groups {
			row.Members += len(gr.Members)
		}
		for _, a := range algos {
			res, err := Run(h, a, groups, Options{}, nil)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %v", f.Name, ws, err)
			}
			res.Trees, res.EFI, res.Heights = nil, nil, nil
			row.Results = append(row.Results, res)
			if progress != nil {
				progress(fmt.Sprintf("%s %s %s: max EFI %d, %.3f s", f.Name, ws, a, res.Max, res.Seconds))
			}
		}
		ex.Rows = append(ex.Rows, row)
	}
	return ex, nil
}
